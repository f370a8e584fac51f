"""A small CNN that torch.fx.symbolic_trace captures whole: the happy path of the FX capture.

What it exercises: module nodes with attributes (Conv2d stride 2 padding 1, BatchNorm2d, ReLU, Linear), a function
with a keyword attribute (F.gelu(approximate="tanh")), a method (Tensor.view), an operator (x + y, operator.add)
and a torch function (torch.flatten). No control flow, no buffers sliced by sizes.

Expected inventory, by hand (one forward, input (2, 3, 16, 16)):
  - torch.nn.Conv2d             1  (3 -> 8, kernel 3, stride 2, padding 1): (2, 3, 16, 16) -> (2, 8, 8, 8)
  - torch.nn.BatchNorm2d        1  (8)
  - torch.nn.ReLU               1
  - torch.nn.functional.gelu    1  (approximate="tanh")
  - operator.add                1  (gelu output + relu output)
  - Tensor.view                 1  (2, 8, 8, 8) -> (2, 8, 64)
  - torch.flatten               1  (start_dim 1): (2, 8, 64) -> (2, 512)
  - torch.nn.Linear             1  (512 -> 10): output (2, 10)
  = 8 call nodes; the FX graph has 10 nodes (plus placeholder x and output).
ATen ops (eval mode, the same on CPU and meta, measured on torch 2.13): aten::convolution, aten::native_batch_norm
(with an aten::empty.memory_format beside it), aten::relu, aten::gelu, aten::add.Tensor, aten::view twice (the view
and the flatten), aten::t + aten::addmm (the Linear).
Parameters: conv 3*8*9 = 216 (no bias) + BN 16 + Linear 512*10 + 10 = 5,130 -> 5,362.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class TraceableNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(8 * 64, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.relu(self.bn(self.conv(x)))
        z = F.gelu(y, approximate="tanh")
        s = z + y
        v = s.view(-1, 8, 64)
        return self.fc(torch.flatten(v, 1))


def build_model() -> nn.Module:
    return TraceableNet().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 3, 16, 16),)
