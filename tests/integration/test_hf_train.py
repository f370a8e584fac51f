"""--train on Hugging Face shapes on the meta device (issue 22, item 5): the Llama-2-7B and DeepSeek-V3 671B shapes
(benchmarks/llama2_7b_hf.py, benchmarks/deepseek_v3.py) at small depth. Their mask helpers read a value on meta, so
the step is retried with is_compiling() true, as the forward capture is, instead of falling back to the CPU (25 GiB
of real weights for the 7B shape, refused). No operator is custom-dev whose forward and backward ATen ops all run on
the NPU."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from conftest import ROOT  # noqa: E402

from opassess.classify import classify  # noqa: E402
from opassess.kb.store import load_kb  # noqa: E402
from opassess.pipeline import ScanOptions, scan_inventory  # noqa: E402

BENCHMARKS = ROOT / "benchmarks"


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return load_kb(tmp_path_factory.mktemp("no-overlay"))


def covered_yet_custom_dev(classified) -> list[str]:
    """Custom-dev operators whose forward and backward ATen ops all run on the NPU (kernel or decomposition)."""
    return [c.operator.key for c in classified if c.category == "custom-dev" and c.aten_support
            and all(c.aten_support.values()) and all(c.backward_support.values())]


@pytest.mark.parametrize(("model", "variable", "layers", "dtype"), [
    ("llama2_7b_hf.py", "OPASSESS_LLAMA_HF_LAYERS", 2, None),
    ("deepseek_v3.py", "OPASSESS_DSV3_LAYERS", 4, "bfloat16"),  # 3 dense layers, then one of 256 experts
])
def test_hf_shapes_train_on_meta(monkeypatch, kb, model, variable, layers, dtype):
    monkeypatch.setenv(variable, str(layers))
    inventory = scan_inventory(ScanOptions(target=str(BENCHMARKS / model), train=True, dtype=dtype))
    capture = inventory.capture
    assert (capture.step, capture.device, capture.method) == ("train", "meta", "dispatch-compiling")
    assert sum(len(n.backward) for n in capture.nodes) > 0
    classified = classify(inventory, kb)
    assert covered_yet_custom_dev(classified) == []
    assert [c.operator.key for c in classified if c.category == "custom-dev"] == []
    if model == "deepseek_v3.py":  # the experts: one grouped matmul with FLOPs, forward and backward on the NPU
        experts = next(c for c in classified if c.operator.key == "torch._grouped_mm")
        assert experts.operator.flops > 0 and all(experts.backward_support.values())
