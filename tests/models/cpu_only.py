"""A model that runs on the CPU but not on the meta device: its forward reads a tensor's value with .item().

What it exercises: the CPU fallback. The forward normalizes its input by its peak magnitude taken as a Python
float (`peak = x.abs().max().item()`), a common pattern in audio and signal pipelines.
- on the meta device .item() raises (RuntimeError: "Tensor.item() cannot be called on meta tensors");
- torch.fx.symbolic_trace fails at `max(peak, 1e-6)`: comparing a Proxy calls bool() on it (TraceError);
- on the CPU it runs, and the output shape does not depend on the values.

Expected inventory of the CPU run, by hand (input (2, 1, 64)):
  - Tensor.abs, Tensor.max, Tensor.item   1 each (the peak), then one division by a Python float
  - torch.nn.Conv1d                       1  (1 -> 4 channels, kernel 5, padding 2): (2, 1, 64) -> (2, 4, 64)
  - torch.nn.ReLU                         1
  - torch.nn.AdaptiveAvgPool1d            1  (to 1): (2, 4, 1)
  - torch.flatten                         1  -> (2, 4)
  - torch.nn.Linear                       1  (4 -> 2): output (2, 2)
  Parameters: conv 1*4*5 + 4 = 24, linear 4*2 + 2 = 10 -> 34.
"""
from __future__ import annotations

import torch
from torch import nn


class PeakNormalizedConv(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(1, 4, kernel_size=5, padding=2)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        peak = x.abs().max().item()
        x = x / max(peak, 1e-6)
        x = self.pool(self.relu(self.conv(x)))
        return self.fc(torch.flatten(x, 1))


def build_model() -> nn.Module:
    return PeakNormalizedConv().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 1, 64),)
