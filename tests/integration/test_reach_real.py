"""Integration: torchvision detectors with default thresholds and random weights, not driven (--no-drive). No box
passes score_thresh, so batched_nms returns before torchvision::nms is dispatched: the reach record reports NMS
present, not reached, with its verdict (param-converted: npu_nms_v4) and the branch that skipped it."""
from __future__ import annotations

import pytest

pytest.importorskip("torchvision")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from opassess.report import build_view  # noqa: E402


@pytest.mark.parametrize("builder", ["fcos_resnet50_fpn", "retinanet_resnet50_fpn"])
def test_a_detector_reports_the_nms_its_run_did_not_reach(builder, model_file):
    path = model_file(f'''
        import torch
        import torchvision

        def build_model():
            return torchvision.models.detection.{builder}(weights=None, weights_backbone=None, min_size=96,
                                                          max_size=96).eval()

        def example_inputs():
            return ([torch.rand(3, 96, 96)],)
    ''')
    view = build_view(assess(ScanOptions(target=str(path), device="cpu", drive=False)))  # the plain run
    captured = {op["op"] for op in view.document["operators"]}
    reach = view.document["reach"]
    if "torchvision::nms" in captured:  # some box passed after all: then the capture judged it
        pytest.skip("a random box passed score_thresh")
    assert "torchvision::nms" in reach["not_direct"]
    nms = [p for p in reach["present"] if p["operator"] == "torchvision::nms"]
    assert {p["category"] for p in nms} == {"param-converted"} and all(not p["captured"] for p in nms)
    trick = next(p for p in nms if p["function"] == "_batched_nms_coordinate_trick")
    assert trick["branch"] == "if boxes.numel() == 0: return" and trick["source"].endswith("torchvision/ops/boxes.py:"
                                                                                          + trick["source"][-3:])
    assert "npu_nms_v4" in trick["reason"]
    assert any(p["function"] == "batched_nms" for p in nms)  # the per-class loop, the other path the NPU may take
    assert reach["person_days"]["likely"] > 0 and 0 < reach["share"] < 1
