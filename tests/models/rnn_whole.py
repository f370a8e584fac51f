"""A GRU then an LSTM (no projection): composites torch_npu runs whole (aten::gru.input, aten::lstm.input).

What it exercises: the derived "taken whole" rule. aten::gru / aten::lstm are CompositeImplicitAutograd, so the
trace records their CPU/meta decomposition (addmm, sigmoid_, tanh_, ...) under the entry ops aten::gru and
aten::lstm; the NPU has kernels for gru.input and lstm.input, so both are direct whether or not rules.toml's curated
[[composite]] list names them. Input (2, 5, 8): GRU 8 -> 16, LSTM 16 -> 16.
"""
from __future__ import annotations

import torch
from torch import nn


class GruLstm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)
        self.lstm = nn.LSTM(16, 16, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y, _ = self.gru(x)
        z, _ = self.lstm(y)
        return z


def build_model() -> nn.Module:
    return GruLstm()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 5, 8),)
