"""A dilated max pooling (nn.MaxPool2d(dilation=2)) next to an ordinary one: a pooling attribute the NPU limits.

What it exercises: torch_npu documents for torch.nn.functional.max_pool2d that dilation may only be 1 or (1, 1)
(npu_native_api_support, torch 2.13); nn.MaxPool2d calls that functional, so the classifier must read the traced
dilation of each MaxPool2d node and tell the two signatures apart.

Expected inventory, by hand (input (1, 4, 16, 16)):
  - torch.nn.MaxPool2d  2 calls, 2 signatures: {kernel 2, stride 2, dilation 1} (1, 4, 16, 16) -> (1, 4, 8, 8);
                        {kernel 2, stride 1, dilation 2} (1, 4, 8, 8) -> (1, 4, 6, 6)
    (H_out = floor((8 - 2*(2 - 1) - 1) / 1) + 1 = 6)
  - torch.nn.ReLU       1
  No parameters.
"""
from __future__ import annotations

import torch
from torch import nn


class DilatedPool(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(2, stride=2)
        self.relu = nn.ReLU()
        self.dilated = nn.MaxPool2d(2, stride=1, dilation=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dilated(self.relu(self.pool(x)))


def build_model() -> nn.Module:
    return DilatedPool().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 4, 16, 16),)
