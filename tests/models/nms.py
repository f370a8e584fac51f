"""A detector head calling torchvision::nms, whose NPU replacement (npu_nms_v4) the facts mark deprecated with no
successor.

torchvision is not installed here, so this file registers a stand-in `torchvision::nms` with torchvision's schema
(`nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor`). The stand-in keeps every box, in order of
score (the real op drops overlapping ones: a data-dependent length that a meta run cannot know), so its fake
(meta) implementation can give the output shape (N,). When torchvision is importable or the op is already
registered, nothing is registered.

Expected: torchvision::nms classified param-converted (replacement torch_npu.npu_nms_v4, another signature),
with the replacement marked deprecated and no successor (npu_custom_ops: npu_nms_v4 deprecated->(no replacement)).
Input (8, 4) boxes; scores from a Linear(4 -> 1) and sigmoid.
"""
from __future__ import annotations

import torch
from torch import nn

try:  # the real operator, when torchvision is installed
    import torchvision  # noqa: F401
except ImportError:
    pass


def _has_op(namespace: str, name: str) -> bool:
    try:
        getattr(getattr(torch.ops, namespace), name)
    except (AttributeError, RuntimeError):
        return False
    return True


def _nms_cpu(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    return torch.argsort(scores, descending=True)


def _nms_fake(dets: torch.Tensor, scores: torch.Tensor, iou_threshold: float) -> torch.Tensor:
    return scores.new_empty((scores.shape[0],), dtype=torch.int64)


if not _has_op("torchvision", "nms"):
    _LIBRARY = torch.library.Library("torchvision", "FRAGMENT")  # lives as long as this module
    _LIBRARY.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _LIBRARY.impl("nms", _nms_cpu, "CPU")
    torch.library.register_fake("torchvision::nms", _nms_fake, lib=_LIBRARY)


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.score = nn.Linear(4, 1)

    def forward(self, boxes: torch.Tensor) -> torch.Tensor:
        scores = torch.sigmoid(self.score(boxes)).squeeze(-1)
        return torch.ops.torchvision.nms(boxes, scores, 0.5)


def build_model() -> nn.Module:
    return Head().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.rand(8, 4),)
