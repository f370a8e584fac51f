"""Stand-ins (opassess/standins): a GPU-only model (flash_attn imported unconditionally, a Triton launch in forward,
.cuda() in build_model) scans on this CPU-only machine, on a torch without triton and on one with triton installed
but no driver; the library call and the kernel are non-direct operators; nothing is left behind; an installed
library is never shadowed; calls the stand-ins do not know stop the scan with one line naming the symbol."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import jsonschema
import pytest
import torch

import opassess.report
from opassess.errors import ModelLoadError, TraceError
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view, render
from opassess.standins import StandIns
from opassess.standins.calls import ACTIVE
from opassess.standins.modules import StandInFinder, StandInModule
from opassess.standins.outputs import output_rule

MODELS = Path(__file__).resolve().parents[1] / "models"
GPU_ONLY = MODELS / "gpu_only.py"
HAS_TRITON = importlib.util.find_spec("triton") is not None


def line_of(path: Path, text: str) -> str:
    """'gpu_only.py:30': the first line of the file containing text."""
    number = next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)
    return f"{path.name}:{number}"


def state() -> dict:
    """What a scan must leave as it found it."""
    state = {"stand-in modules": sorted(n for n, m in sys.modules.items() if isinstance(m, StandInModule)),
             "finders": [f for f in sys.meta_path if isinstance(f, StandInFinder)],
             "synchronize": torch.cuda.synchronize, "set_device": torch.cuda.set_device,
             "function modes": torch._C._len_torch_function_stack(), "active": dict(ACTIVE)}
    return state


@pytest.fixture(scope="module")
def gpu_only():
    before = state()
    assessment = assess(ScanOptions(target=str(GPU_ONLY)))
    return before, assessment


def by_key(assessment) -> dict:
    return {c.operator.key: c for c in assessment.classified}


def test_gpu_only_model_scans_with_the_library_call_and_the_kernel_as_library_operators(gpu_only):
    _, assessment = gpu_only
    assert (assessment.capture.method, assessment.capture.device) == ("dispatch", "meta")
    ops = by_key(assessment)
    flash, kernel = ops["flash_attn.flash_attn_func"], ops["triton:scale_kernel"]
    assert flash.operator.kind == kernel.operator.kind == "library"
    # q, k, v (2, 16, 4, 8) from the qkv projection's view(2, 16, 3, 4, 8).unbind(2) -> out (2, 16, 4, 8)
    node = flash.operator.nodes[0]
    assert node.input_shapes == ((2, 16, 4, 8),) * 3 and node.output_shapes == ((2, 16, 4, 8),)
    assert node.attrs == {"causal": True, "window_size": [8, 0], "softcap": 30.0}
    assert node.source.endswith(line_of(GPU_ONLY, "flash_attn_func(q, k, v"))
    # the launch writes into `out` (empty_like of proj's (2, 16, 32) output) and returns nothing; n = 1024 elements,
    # BLOCK 128 -> grid cdiv(1024, 128) = 8
    launch = kernel.operator.nodes[0]
    assert launch.input_shapes == ((2, 16, 32), (2, 16, 32)) and launch.output_shapes == ()
    assert launch.attrs == {"n": 1024, "scale": 0.5, "BLOCK": 128, "grid": "8"}
    assert launch.source.endswith(line_of(GPU_ONLY, "scale_kernel[("))
    assert ops["torch.nn.Linear"].operator.count == 2  # the model around them is captured as usual


def test_library_operators_are_never_direct_and_cite_their_facts(gpu_only):
    _, assessment = gpu_only
    ops = by_key(assessment)
    flash, kernel = ops["flash_attn.flash_attn_func"], ops["triton:scale_kernel"]
    assert flash.category == "param-converted" and flash.replacement == "torch_npu.npu_fusion_attention"
    assert flash.confidence == "medium"
    assert any(r.code == "library-route" and r.evidence.startswith("third_party_kernel_libs.tsv:3 flash_attn")
               for r in flash.reasons)
    # row 3 maps window_size (sparse_mode=4) but has no counterpart for softcap, which the model passes
    dropped = [r for r in flash.reasons if r.code == "param-limit"]
    assert len(dropped) == 1 and "the route drops softcap" in dropped[0].message
    assert any("third_party_kernel_libs.tsv:21 triton" in r.evidence for r in kernel.reasons)
    # the launch alone says custom-dev (low); the source scan read the kernel's body (no int64 atomic, no fp64 dot):
    # the same call takes the site's verdict, so the report gives it one category, and says which site decided
    assert kernel.category == "param-converted" and kernel.signature_categories == ("param-converted",)
    decided = [r for r in kernel.reasons if r.code == "source-site"]
    assert len(decided) == 1 and decided[0].message.startswith(
        f"the same call as the source site gpu_only.py:{line_of(GPU_ONLY, 'def scale_kernel').rpartition(':')[2]}")
    assert [r.code for r in flash.reasons][-1] == "source-site"
    # the scan also reads the model file: each library call is one item, costed once, as the source site it is
    estimated = {e.score.classified.operator.key: e for e in assessment.estimate.ops}
    sites = {key: site for site in assessment.estimate.source for key in site.operators}
    for key in ("triton:scale_kernel", "flash_attn.flash_attn_func"):
        assert estimated[key].cost == "source-finding" and estimated[key].person_days.likely == 0
        assert sites[key].person_days.likely > 0
    assert (sites["triton:scale_kernel"].finding.kind, sites["flash_attn.flash_attn_func"].finding.line) == \
        ("triton-kernel", int(line_of(GPU_ONLY, "flash_attn_func(q").rpartition(":")[2]))


def test_without_the_source_scan_a_triton_launch_is_custom_dev():
    """The capture sees the launch, not the body: alone it cannot tell whether triton-ascend compiles the kernel."""
    assessment = assess(ScanOptions(target=str(GPU_ONLY), project_scan=False))
    kernel = by_key(assessment)["triton:scale_kernel"]
    assert kernel.category == "custom-dev" and kernel.confidence == "low"
    assert not any(r.code == "source-site" for r in kernel.reasons) and assessment.source_scan is None


def test_the_report_lists_the_stand_ins_used(gpu_only):
    _, assessment = gpu_only
    used = {s.library: s for s in assessment.capture.stand_ins}
    assert used["flash_attn"].symbols == ("flash_attn.flash_attn_func",)
    assert "not installed" in used["flash_attn"].why
    assert set(used["torch.cuda"].symbols) == {".cuda()", "device='cuda'"}  # build_model, example_inputs
    assert used["triton"].symbols == ("triton:scale_kernel",)
    # torch 2.14.1 here has triton without a driver; torch 2.13 has none
    assert ("is installed" in used["triton"].why) == HAS_TRITON
    view = build_view(assessment)
    document = view.document
    schema = json.loads((Path(opassess.report.__file__).parent / "assessment.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
    listed = {s["library"]: s for s in document["model"]["capture"]["stand_ins"]}
    assert listed["flash_attn"]["symbols"] == ["flash_attn.flash_attn_func"]
    for fmt in ("md", "html", "terminal"):
        text = render(assessment, fmt)
        assert "Stand-ins (no GPU here" in text and "torch.cuda (.cuda()" in text, fmt  # md escapes "_"


def test_stand_ins_leave_no_trace(gpu_only):
    before, _ = gpu_only
    assert state() == before
    assert not any(isinstance(m, StandInModule) for m in sys.modules.values())
    if HAS_TRITON:  # imported by the model file during the scan: its launch is triton's own again
        launch = vars(sys.modules["triton.runtime.jit"].KernelInterface)["__getitem__"]
        assert launch.__module__ == "triton.runtime.jit"
    else:  # torch caches whether triton is installed: it must not have seen the stand-in
        from torch.utils._triton import has_triton_package

        assert has_triton_package() is False
        with pytest.raises(ImportError):
            import triton  # noqa: F401


def test_an_autotuned_kernel_and_cuda_calls_scan():
    assessment = assess(ScanOptions(target=str(MODELS / "gpu_only_autotuned.py")))
    kernel = by_key(assessment)["triton:relu_kernel"]
    # the scan of the model file read the kernel's body (loads, stores, maximum: nothing triton-ascend lacks)
    assert kernel.category == "param-converted" and kernel.operator.kind == "library"
    assert any(r.code == "source-site" for r in kernel.reasons)
    # relu_kernel[grid](y, out, n): y and out are (4, 8); the tuned BLOCK and the heuristic EVEN are not passed
    assert kernel.operator.nodes[0].input_shapes == ((4, 8), (4, 8))
    assert kernel.operator.signatures[0].attrs == {"n": 32, "grid": "callable"}
    used = {s.library: set(s.symbols) for s in assessment.capture.stand_ins}
    assert used["torch.cuda"] == {"torch.cuda.set_device", "torch.cuda.synchronize", ".cuda()", "device='cuda'"}


def test_an_installed_library_is_not_shadowed(tmp_path):
    # causal_conv1d is in the kernel table; installed (importable from the model's directory) it is the real one
    package = tmp_path / "causal_conv1d"
    package.mkdir()
    (package / "__init__.py").write_text("def causal_conv1d_fn(x, weight):\n    return x * 2\n")
    model = tmp_path / "uses_installed.py"
    model.write_text("import torch\nfrom causal_conv1d import causal_conv1d_fn\nfrom torch import nn\n\n"
                     "class M(nn.Module):\n    def forward(self, x):\n        return causal_conv1d_fn(x, None)\n\n"
                     "def build_model():\n    return M()\n\n"
                     "def example_inputs():\n    return (torch.randn(2, 3),)\n")
    try:
        assessment = assess(ScanOptions(target=str(model)))
    finally:
        sys.modules.pop("causal_conv1d", None)
    assert assessment.capture.stand_ins == ()
    assert [o.key for o in assessment.inventory.operators] == ["Tensor.mul"]  # x * 2, run for real


def test_a_call_the_stand_in_does_not_know_stops_with_one_line_naming_it():
    with pytest.raises(TraceError) as caught:
        assess(ScanOptions(target=str(MODELS / "gpu_only_unknown_call.py")))
    message = str(caught.value)
    assert "\n" not in message
    assert "flash_attn.bert_padding.unpad_input" in message and "cannot continue" in message


def test_a_stand_in_called_while_building_stops_the_load_with_one_line():
    with pytest.raises(ModelLoadError) as caught:
        assess(ScanOptions(target=str(MODELS / "gpu_only_apex_build.py")))
    message = str(caught.value)
    assert "\n" not in message and "apex.normalization.FusedLayerNorm" in message
    assert not any(isinstance(m, StandInModule) for m in sys.modules.values())


def test_cuda_devices_map_to_the_capture_device_and_synchronize_does_nothing():
    standins = StandIns()
    with standins.active("meta"):
        x = torch.ones(2, device="cuda").cuda()
        y = torch.zeros(3).to("cuda:0")
        torch.cuda.synchronize()
        torch.cuda.set_device(0)
    assert x.device.type == y.device.type == "meta"
    used = {s.library: s for s in standins.records()}
    assert used["torch.cuda"].symbols == ("device='cuda'", ".cuda()", "torch.cuda.synchronize",
                                          "torch.cuda.set_device")
    with pytest.raises((RuntimeError, AssertionError)):  # outside the block, CUDA is as missing as before
        torch.zeros(1, device="cuda")


@pytest.mark.parametrize(("name", "shapes", "expected"), [
    # q (batch 2, seqlen 5, heads 4, headdim 8), k/v with seqlen_k 7 and headdim_v 16 -> (2, 5, 4, 16)
    ("flash_attn.flash_attn_func", [(2, 5, 4, 8), (2, 7, 4, 8), (2, 7, 4, 16)], (2, 5, 4, 16)),
    # varlen: q (total 9, heads 4, headdim 8) -> (9, 4, 8)
    ("flash_attn.flash_attn_interface.flash_attn_varlen_func", [(9, 4, 8), (11, 2, 8), (11, 2, 8)], (9, 4, 8)),
    # qkv (2, 5, 3, 4, 8) -> (2, 5, 4, 8)
    ("flash_attn.flash_attn_qkvpacked_func", [(2, 5, 3, 4, 8)], (2, 5, 4, 8)),
    # xformers query (B 2, M 5, H 4, K 8), value (2, N 7, 4, Kv 6) -> (2, 5, 4, 6)
    ("xformers.ops.memory_efficient_attention", [(2, 5, 4, 8), (2, 7, 4, 8), (2, 7, 4, 6)], (2, 5, 4, 6)),
    ("causal_conv1d.causal_conv1d_fn", [(2, 16, 10), (16, 4)], (2, 16, 10)),
])
def test_known_entry_points_return_the_documented_shapes(name, shapes, expected):
    args = [torch.empty(s, dtype=torch.bfloat16, device="meta") for s in shapes]
    out = output_rule(name)(*args)
    assert tuple(out.shape) == expected and out.dtype == torch.bfloat16 and out.device.type == "meta"


def test_an_entry_point_without_a_rule_has_none():
    assert output_rule("flash_attn.bert_padding.unpad_input") is None
