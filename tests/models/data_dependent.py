"""A gated MLP whose forward branches on a tensor's *value* (`if x.sum() > 0:`): FX and the meta device both fail.

What it exercises: the fallback chain when the graph depends on data.
- torch.fx.symbolic_trace raises torch.fx.proxy.TraceError ("symbolically traced variables cannot be used as
  inputs to control flow") at the `if`;
- on the meta device the forward raises too: bool() of a meta tensor has no value to give
  (RuntimeError: "Tensor.item() cannot be called on meta tensors", torch 2.13);
- torch.export (non-strict) fails on the branch as well (GuardOnDataDependentSymNode: "Could not guard on
  data-dependent expression");
- on the CPU it runs: this model is the reason for the CPU fallback.
With the example input (all ones, so x.sum() = 4 * 16 = 64 > 0) the `positive` branch is taken.

Expected inventory of the CPU run, by hand (input (4, 16)):
  - torch.nn.Linear       2  (encoder 16 -> 32; positive 32 -> 8)   [the negative branch's Linear is not run]
  - torch.nn.ReLU         1
  - Tensor.sum            1 and a comparison (operator.gt) that decides the branch
  Output (4, 8). Parameters 1,072 = 16*32 + 32 + 2 * (32*8 + 8).
"""
from __future__ import annotations

import torch
from torch import nn


class BranchingMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(16, 32)
        self.relu = nn.ReLU()
        self.positive = nn.Linear(32, 8)
        self.negative = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.relu(self.encoder(x))
        if x.sum() > 0:
            return self.positive(h)
        return self.negative(h)


def build_model() -> nn.Module:
    return BranchingMLP().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.ones(4, 16),)
