"""MoE experts as one grouped matmul in float32: tokens (8, 16) sorted by expert, 4 experts of (16, 32) weights,
offs the cumulative token counts. torch._grouped_mm's meta kernel takes bfloat16 only; the CPU kernel (and
torch_npu's npu_grouped_matmul) take float32 too, so the capture stands in for it on meta, in the forward and in the
backward (which calls _grouped_mm again for the input and weight gradients).

Expected (--train): torch._grouped_mm with FLOPs 2 x 8 x 16 x 32 = 8192, its backward ATen ops all on the NPU side
(_grouped_mm, transposes), nothing custom-dev."""
from __future__ import annotations

import torch
from torch import nn


class Experts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 16, 32) * 0.02)

    def forward(self, tokens: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
        return torch._grouped_mm(tokens, self.weight, offs=offs)


def build_model() -> nn.Module:
    return Experts()


def example_inputs():
    return (torch.randn(8, 16), torch.tensor([2, 4, 6, 8], dtype=torch.int32))
