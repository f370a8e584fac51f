"""The verification harness tests what the report recommends: a DCNv2 + RoIAlign model's hand-off calls
npu_deformable_conv2d with offset and mask concatenated and npu_roi_align with the model's scale, ratio and alignment
(through the adapters of handoff/routes.py), and passes on the CPU, where the replacements run as their
documented semantics. Skipped without torchvision."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from opassess.handoff import write_handoffs
from opassess.kb.verified import read_junit
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view

MODELS = Path(__file__).resolve().parent / "models"
ROOT = Path(__file__).resolve().parents[2]


def test_adapters_map_the_arguments_and_layouts_the_replacements_take():
    """On the CPU, each adapter through CpuRoutes gives torchvision's own result; a DCN offset handed over in
    torchvision's interleaved (y, x) layout, as a harness without the adapter would, does not."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("torchvision")
    from opassess.handoff.routes import CpuRoutes, deform_conv2d_route, roi_align_route

    torch.manual_seed(0)
    x, weight, bias = torch.randn(1, 8, 10, 10), torch.randn(16, 4, 3, 3), torch.randn(16)
    offset, mask = torch.randn(1, 2 * 2 * 9, 10, 10), torch.rand(1, 2 * 9, 10, 10)
    args = dict(stride_h=1, stride_w=1, pad_h=1, pad_w=1, dilation_h=1, dilation_w=1, groups=2, offset_groups=2)
    want = torch.ops.torchvision.deform_conv2d(x, weight, offset, mask, bias, *args.values(), True)
    got = deform_conv2d_route(CpuRoutes, x, weight, offset, mask, bias, **args, use_mask=True)
    torch.testing.assert_close(got, want)
    unordered, _ = CpuRoutes.npu_deformable_conv2d(x, weight, torch.cat([offset, mask], 1), bias, [3, 3],
                                                   [1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1], 2, 2, True)
    assert not torch.allclose(unordered, want)

    rois = torch.tensor([[0, 1.0, 1.0, 30.0, 25.0]])
    for aligned in (True, False):
        want = torch.ops.torchvision.roi_align(x, rois, 0.25, 7, 7, 2, aligned)
        torch.testing.assert_close(roi_align_route(CpuRoutes, x, rois, 0.25, 7, 7, 2, aligned), want)


def test_dcnv2_and_roi_align_handoff_tests_the_replacements_with_the_models_arguments(tmp_path):
    pytest.importorskip("torchvision")
    document = build_view(assess(ScanOptions(target=str(MODELS / "dcn_roi.py")))).document
    ops = {op["op"]: op for op in document["operators"]}
    assert ops["torchvision::roi_align"]["signatures"][0]["attrs"] == {
        "spatial_scale": 0.25, "pooled_height": 7, "pooled_width": 7, "sampling_ratio": 2, "aligned": True}
    assert ops["torchvision::deform_conv2d"]["signatures"][0]["attrs"]["use_mask"] is True
    written = write_handoffs(document, tmp_path / "handoff", MODELS / "dcn_roi.py")
    dcn = (tmp_path / "handoff" / "test_torchvision__deform_conv2d.py").read_text(encoding="utf-8")
    assert "ROUTE = 'torch_npu.npu_deformable_conv2d'" in dcn
    assert "torch.cat([offset.index_select(1, order), mask]" in dcn
    assert "ROUTE = 'torch_npu.npu_roi_align'" in (tmp_path / "handoff" / "test_torchvision__roi_align.py").read_text(
        encoding="utf-8")
    junit = tmp_path / "results.xml"
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OPASSESS_VERIFY_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             *(str(p) for p in written if p.name.startswith("test_")), f"--junitxml={junit}",
                             "-o", "junit_family=xunit1"], cwd=tmp_path, env=environment, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0 and "4 passed" in result.stdout, result.stdout[-3000:] + result.stderr[-2000:]
    cases = read_junit(junit)
    assert {(c.op, c.route) for c in cases} == {("torchvision::deform_conv2d", "torch_npu.npu_deformable_conv2d"),
                                                ("torchvision::roi_align", "torch_npu.npu_roi_align")}
    assert {c.status for c in cases} == {"not-run"}  # the CPU as the device: no verdict on the NPU
