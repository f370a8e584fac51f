"""Routes beyond eager training on one device: the ONNX -> ATC route (export in the worker, nodes judged against the
ONNX -> CANN map) and the serving check (vLLM-Ascend: architecture and quantisation scheme against the chip).

    from opassess.routes import judge_onnx, check_serving
"""
from __future__ import annotations

from .onnx_judge import MAX_OPSET, MIN_OPSET, check_opset, judge_onnx
from .records import OnnxExport, OnnxFailure, OnnxNode, OnnxRoute, ServingCheck, ServingItem
from .serving import check_serving

__all__ = ["MAX_OPSET", "MIN_OPSET", "OnnxExport", "OnnxFailure", "OnnxNode", "OnnxRoute", "ServingCheck",
           "ServingItem", "check_opset", "check_serving", "judge_onnx"]
