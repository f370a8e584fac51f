"""opassess.findings.variants: the 2026 attention variants on hand-written models (tests/models/attention_*.py),
each naming only the fused NPU ops and parameters the facts give, and carrying the time the time model puts at
risk; and none on a model that has none of them."""
from __future__ import annotations

import ast

import pytest

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report.sections.time import finding_time_doc
from tests.support import EXAMPLES, MODELS


@pytest.fixture(scope="module")
def sinks():
    return assess(ScanOptions(target=str(MODELS / "attention_sinks.py"), project_scan=False))


@pytest.fixture(scope="module")
def mla():
    return assess(ScanOptions(target=str(MODELS / "attention_mla.py"), project_scan=False))


def variants(assessment, prefix: str):
    return [f for f in assessment.findings if f.kind == "attention-variant" and f.title.startswith(prefix)]


def test_attention_with_sinks_names_the_sink_parameters_and_costs_time(sinks):
    (finding,) = variants(sinks, "attention with sinks")
    assert "npu_fusion_attention(sink=...) in training" in finding.title
    assert "npu_fused_infer_attention_score_v2(learnable_sink=...) in inference" in finding.title
    assert finding.npu_api == "torch_npu.npu_fusion_attention"
    ops = set(finding.ops)
    assert {"torch.cat", "torch.nn.functional.softmax", "Tensor.__getitem__", "Tensor.matmul"} <= ops
    time = finding_time_doc(sinks.performance, finding)
    assert 0 < time["gain_us"] <= time["step_at_risk_us"]  # the chain but its matmuls is at risk


def test_sliding_window_is_a_band_mask_of_its_width(sinks):
    (finding,) = variants(sinks, "sliding-window attention mask")
    assert "band of 8 positions" in finding.title and "pre_tockens/next_tockens" in finding.title
    assert finding.metrics["window"] == 8 and {"torch.tril", "torch.triu"} <= set(finding.ops)
    # tril(ones, diagonal=-8) masks j <= i - 8: the query and the 7 keys before it stay (flash-attn's window (7, 0))
    call = ast.parse(finding.call, mode="eval").body.value  # type: ignore[attr-defined]
    kwargs = {k.arg: ast.unparse(k.value) for k in call.keywords}
    assert (kwargs["sparse_mode"], kwargs["pre_tockens"], kwargs["next_tockens"]) == ("4", "7", "0")
    assert finding_time_doc(sinks.performance, finding)["gain_us"] > 0


def test_latent_attention_interleaved_rope_and_decode(mla):
    (latent,) = variants(mla, "multi-head latent attention")
    assert "npu_mla_prolog" in latent.title and "atb::npu_multi_head_latent_attention" in latent.title
    assert "npu_fusion_attention_v2(query_rope=..., key_rope=...)" in latent.title
    assert latent.nodes[0] == "kv_a" and latent.nodes[-1] == "kv_b"
    (rope,) = variants(mla, "interleaved rotary layout")
    assert rope.npu_api == "torch_npu.npu_interleave_rope"
    (decode,) = variants(mla, "incremental (decode) attention")
    assert decode.npu_api == "torch_npu.npu_fused_infer_attention_score" and "training-only" in decode.title


def test_no_variant_on_a_plain_llama():
    assessment = assess(ScanOptions(target=str(EXAMPLES / "llama_like.py"), project_scan=False))
    assert [f.title for f in assessment.findings if f.kind == "attention-variant"] == []
