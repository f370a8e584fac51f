"""Graph-mode readiness of a Hugging Face Llama (tiny config, random weights): its capturable FLOPs share per back-end.

transformers' mask helpers index with int64 tensors (aten::index.Tensor, a static size), so nothing breaks the
inductor or the aclgraph capture; torchair GE has no converter registered for aten::scaled_dot_product_attention
(torchair_ge_converter_status.tsv has no row), so GE splits at each attention call and the attention's own FLOPs
fall outside its graph.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess

MODELS = Path(__file__).resolve().parent / "models"


def test_a_tiny_llama_reports_its_capturable_share_per_backend():
    pytest.importorskip("transformers")
    graph = assess(ScanOptions(target=str(MODELS / "hf_tiny.py"), entry="llama")).graph_mode
    inductor, aclgraph, ge = (graph.backend(name) for name in ("inductor", "npugraph_ex", "ge"))
    assert inductor.ready and inductor.capturable_flops_share == 1.0
    assert aclgraph.ready and aclgraph.capturable_flops_share == 1.0
    assert not ge.ready and ge.split_points == ("torch.nn.functional.scaled_dot_product_attention",)
    assert 0.5 < ge.capturable_flops_share < 1.0  # the projections and MLPs stay inside; the attention does not
    # both layers call attention from the same line of transformers' sdpa integration: one break, named by it
    assert [(b.kind, b.source.rsplit("/", 1)[-1].split(":")[0]) for b in ge.breaks] == [
        ("operator", "sdpa_attention.py")]
    assert graph.operators["torch.nn.functional.scaled_dot_product_attention"][2].verdict == "no-converter"
