"""torch.i0 (no NPU kernel in the facts: custom-dev, torch_npu falls back to the CPU) between two large Linear
layers: the op the time model must rank first in time at risk.

Expected by hand (float32, Atlas A2; host link 25 GB/s assumed in time_model.toml): i0 reads and writes
2 * 4096^2 * 4 = 134 MB -> 5.4 ms over the host link alone, while each Linear(4096 -> 4096) is
2 * 4096^3 / (99.5 TFLOPS x 0.7) = 1.97 ms on the cube, of which bf16 would recover at most 1.42 ms (fp32-cube).
"""
from __future__ import annotations

import torch
from torch import nn


class FallbackBetweenMatmuls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4096, 4096, bias=False)
        self.fc2 = nn.Linear(4096, 4096, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.i0(self.fc1(x)))


def build_model() -> nn.Module:
    return FallbackBetweenMatmuls().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4096, 4096),)
