"""An elementwise add of two (4096, 4096) float32 tensors: memory-bound work of known size for the time model.

Expected by hand (Atlas A2: HBM 1.6 x 1024^4 B/s, memory efficiency 0.6): bytes read and written 3 * 4096^2 * 4 =
201,326,592; bytes / (bandwidth x eff) = 2.013e8 / 1.0555e12 = 190.7 us; compute 1.678e7 adds / (11 TFLOPS x 0.7) =
2.2 us; launch 2 us.
"""
from __future__ import annotations

import torch
from torch import nn


class Add(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def build_model() -> nn.Module:
    return Add().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4096, 4096), torch.randn(4096, 4096))
