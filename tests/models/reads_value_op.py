"""A model's own op defined through torch.library.Library with a Python CompositeExplicitAutograd body that reads a
value (.item()): it does not run on meta, and torch.export on it ends in a RecursionError inside torch.

Expected: captured on the CPU; nn.Linear(8, 8) on 4 rows is aten::t + aten::addmm, 2 x 4 x 8 x 8 = 512 FLOPs; the
op's own body runs once per forward (BODY_RUNS counts it)."""
from __future__ import annotations

import torch
from torch import nn


def _scaled(x):
    torch.ops.reads_value.scaled.default.body_runs.append(x.device.type)
    positive = int((x > 0).sum().item())
    return x * positive


if not hasattr(torch.ops.reads_value, "scaled"):  # imported again in one process (tests): registered once
    _LIB = torch.library.Library("reads_value", "DEF")
    _LIB.define("scaled(Tensor x) -> Tensor")
    _LIB.impl("scaled", _scaled, "CompositeExplicitAutograd")
    torch.ops.reads_value.scaled.default.library = _LIB  # kept alive with the op
    torch.ops.reads_value.scaled.default.body_runs = []
BODY_RUNS: list[str] = torch.ops.reads_value.scaled.default.body_runs


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        return torch.ops.reads_value.scaled(self.lin(x))


def build_model():
    return Model()


def example_inputs():
    return (torch.randn(4, 8),)
