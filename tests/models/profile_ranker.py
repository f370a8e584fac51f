"""A tiny ranker for `opassess profile` tests: a Linear layer, ReLU, and an argsort of int64 scores.

Expected inventory, by hand (input (8, 64)):
  - torch.nn.Linear  1  (64 -> 96: aten::t, aten::addmm; on the NPU one aclnnAddmm kernel, inner axis 64)
  - torch.relu       1  (aten::relu: aclnnRelu)
  - torch.argsort    1  (int64 input: op-plugin warns the ArgSort kernel runs on the AI CPU for int32/int64 and
                         advises a cast to float32)
  - Tensor.to        1  (float32 -> int64: a Cast kernel)
"""
from __future__ import annotations

import torch
from torch import nn


class Ranker(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(64, 96)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc(x))
        return torch.argsort(h.to(torch.int64), dim=-1)


def build_model() -> nn.Module:
    return Ranker().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(8, 64),)
