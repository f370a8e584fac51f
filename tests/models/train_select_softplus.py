"""A scoring head trained on its first feature: softplus, indexing one column, and a tensor built by new_ones.

What it exercises (--train): the backward of F.softplus is aten::softplus_backward, which torch_npu registers only
as its out variant softplus_backward.grad_input; the backward of `h[:, 0]` is aten::select_backward, which has no
NPU kernel of its own but a CompositeExplicitAutogradNonFunctional kernel (zeros, select, copy_); Tensor.new_ones
(aten::new_ones) is CompositeExplicitAutograd and calls fill_.

Expected inventory, by hand (input (3, 8)):
  - torch.nn.Linear               1  (8 -> 4)
  - torch.nn.functional.softplus  1  (backward: aten::softplus_backward)
  - Tensor.__getitem__            1  (h[:, 0] -> aten::select.int; backward: aten::select_backward)
  - Tensor.new_ones               1  ((3,), aten::new_ones)
  - Tensor.add                    1
  Output (3,). Parameters 8*4 + 4 = 36.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class FirstFeatureHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.softplus(self.proj(x))
        return h[:, 0] + h.new_ones(h.shape[0])


def build_model() -> nn.Module:
    return FirstFeatureHead()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(3, 8),)
