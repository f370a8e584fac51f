"""Two parameter limits that need no algorithm change (issue 23, item 2): topk(sorted=False), which the NPU kernel
takes as sorted=True (a local rewrite), and interpolate(scale_factor=1.0), which changes nothing (a no-op argument).
Expected on Atlas A2: topk param-converted with one param-limit reason, priced by [changes] under a day; interpolate
direct (the kernel facts overrule the API page's scale_factor limit: aclnnUpsampleNearest2dV2 takes scalesH/scalesW)."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class KeywordLimits(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, _ = torch.topk(x, 4, dim=-1, sorted=False)
        same = F.interpolate(x.unsqueeze(1), scale_factor=1.0, mode="nearest")
        return values.sum() + same.sum()


def build_model() -> nn.Module:
    return KeywordLimits()


def example_inputs():
    return (torch.randn(2, 3, 16),)
