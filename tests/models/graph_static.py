"""Graph mode: a plain MLP with static shapes (Linear, ReLU, Linear; a LSTMCell and an AdaptiveAvgPool3d variant).

`build_model`: ready on every back-end (no host read, no data-dependent size, every ATen op lowered or captured
and each with a GE converter). `build_pool3d` (scanned with --input-shape 1,2,4,4,4): aten::_adaptive_avg_pool3d
has no GE converter (torchair_ge_converter_status.tsv line 6, not_implemented): not GE-ready. `build_cell`:
aten::lstm_cell's NPU kernel is aclop-only at torch 2.13 (npu_aten_ops: lstm_cell [aclnn none; aclop all]):
not aclgraph-capturable.
"""
import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

    def forward(self, x):
        return self.net(x)


class Pool3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool3d(2)

    def forward(self, x):
        return self.pool(x)


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(16, 16)

    def forward(self, x):
        h, c = self.cell(x)
        return h + c


def build_model():
    return MLP()


def build_pool3d():
    return Pool3d()


def build_cell():
    return Cell()


def example_inputs():
    return (torch.randn(4, 16),)
