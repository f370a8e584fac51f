"""A four-operator elementwise chain whose compute shares, scores and estimates can be worked by hand.

forward(x), x float32 (8, 64) = 512 elements = 2048 bytes per tensor:
    y = torch.i0(x)      aten::i0      reads x, writes y        4096 bytes   (no NPU kernel)
    z = torch.sigmoid(y)     aten::sigmoid     reads y, writes z        4096 bytes
    w = y * z                aten::mul.Tensor  reads y, z, writes w     6144 bytes
    return w + x             aten::add.Tensor  reads w, x, writes out   6144 bytes
No op here has a flop formula, so the roofline compute units are the bytes moved: 20480 in all;
shares i0 0.2, sigmoid 0.2, Tensor.mul 0.3, Tensor.add 0.3.
Dataflow: i0 -> sigmoid -> mul -> add, i0 -> mul: every node is on the longest path (4 nodes).
Used by tests/score/test_score.py and tests/score/test_estimate.py (the worked numbers are there).
"""
from __future__ import annotations

import torch
from torch import nn


class Chain(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.i0(x)
        z = torch.sigmoid(y)
        w = y * z
        return w + x


def build_model() -> nn.Module:
    return Chain().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.rand(8, 64) + 0.5,)
