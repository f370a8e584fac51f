"""A Poisson regression head that returns the log-likelihood of observed counts: uses torch.lgamma.

What it exercises: torch.lgamma (aten::lgamma), a special function with no direct NPU kernel in many releases,
next to ordinary ops. log P(k | rate) = k * log(rate) - rate - lgamma(k + 1).

Expected inventory, by hand (inputs features (4, 8), counts (4, 3)):
  - torch.nn.Linear               1  (8 -> 3)
  - torch.nn.functional.softplus  1  (rates > 0)
  - torch.log                     1
  - torch.lgamma                  1  (on counts + 1, shape (4, 3))
  - arithmetic: 1 multiplication, 2 subtractions, 1 addition (counts + 1)
  Output (4, 3). Parameters 8*3 + 3 = 27.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class PoissonHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rate = nn.Linear(8, 3)

    def forward(self, features: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        rate = F.softplus(self.rate(features))
        return counts * torch.log(rate) - rate - torch.lgamma(counts + 1)


def build_model() -> nn.Module:
    return PoissonHead().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    """Features and observed counts (small non-negative integers stored as float)."""
    return (torch.randn(4, 8), torch.randint(0, 10, (4, 3)).to(torch.float32))
