"""A model whose example_inputs() do not fit it: a Linear(16, 4) fed a (2, 10) tensor.

Error-path fixture: building works; the forward fails in the Linear with a RuntimeError on CPU and on meta alike
(the meta kernels check shapes; measured on torch 2.13): on the CPU "mat1 and mat2 shapes cannot be multiplied
(2x10 and 16x4)", on meta "a and b must have same reduction dim, but got [2, 10] X [16, 4].". torch.fx.symbolic_trace succeeds, since it never looks at shapes: the failure shows only when the graph
runs.
"""
from __future__ import annotations

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def build_model() -> nn.Module:
    return Classifier()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 10),)
