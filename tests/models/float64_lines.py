"""A float32 model that computes one part in float64 (a numerically careful similarity score, as scientific codes write
it): the projections are cast with .double() on two lines, the score matmul and its tanh run in float64 on the next
two, and the result is cast back on the last.

What it exercises: one cause on several lines. The NPU's kernels reject float64 (matmul, tanh) or return float32
where float64 is asked (the cast), so three operator types are param-converted for one reason: the float64 choice,
one decision listing the five lines, not three ports.

Expected inventory, by hand (input (2, 8, 16) float32):
  - torch.nn.Linear   2  (q, k), float32
  - Tensor.double     3  (lines 26, 27 and 30: q, k and x)
  - Tensor.matmul     2  (line 28 in float64, q @ k^T; line 30, gate @ x)
  - Tensor.transpose  1, torch.tanh 1 (line 29, float64), Tensor.float 1
"""
import torch
from torch import nn


class Float64Score(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(16, 16)
        self.k = nn.Linear(16, 16)

    def forward(self, x):
        q = self.q(x).double()
        k = self.k(x).double()
        scores = q @ k.transpose(-1, -2)
        gate = torch.tanh(scores)
        return (gate @ x.double()).float()


def build_model():
    return Float64Score().eval()


def example_inputs():
    return (torch.randn(2, 8, 16),)
