"""A model whose forward branches on a tensor's *shape* (`if x.shape[1] > 8:`): FX fails, the meta device runs it.

What it exercises: the difference between data-dependent and shape-dependent control flow.
- torch.fx.symbolic_trace proxies shapes too: x.shape[1] is a Proxy, `> 8` another Proxy, and the `if` calls
  bool() on it, which raises torch.fx.proxy.TraceError ("symbolically traced variables cannot be used as inputs to
  control flow") -- measured on torch 2.13;
- on the meta device shapes are real ints, so the forward runs (this model needs no CPU fallback);
- torch.export specializes the branch for the example shape and succeeds.
With the example input (4, 12), 12 > 8, so the `wide` branch is taken.

Expected inventory of the forward, by hand (input (4, 12)):
  - torch.nn.Linear       2  (wide 12 -> 8, head 8 -> 4)   [narrow is not run]
  - torch.nn.GELU         1
  Output (4, 4).
"""
from __future__ import annotations

import torch
from torch import nn


class ShapeBranching(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.wide = nn.Linear(12, 8)
        self.narrow = nn.Linear(8, 8)
        self.act = nn.GELU()
        self.head = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] > 8:
            x = self.wide(x)
        else:
            x = self.narrow(x)
        return self.head(self.act(x))


def build_model() -> nn.Module:
    return ShapeBranching().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4, 12),)
