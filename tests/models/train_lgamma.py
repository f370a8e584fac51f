"""A Poisson regression trained on its negative log-likelihood, with a learned Gamma shape: torch.lgamma on a tensor
that requires grad, and a hand-written autograd.Function. For --train.

What it exercises: a forward operator whose backward dispatches an op with no NPU kernel (the derivative of lgamma is
digamma: aten::lgamma's backward is aten::digamma, then a multiplication), and an autograd.Function whose backward is
written by hand (SoftplusSTE: softplus forward, the backward multiplies by sigmoid, so it dispatches aten::sigmoid and
aten::mul). No loss_fn, no build_optimizer: the default step (mean of the output, AdamW foreach, clipping at 1.0).

Expected by hand (inputs features (4, 8), counts (4, 3)):
  forward  torch.nn.Linear 1 (8 -> 3), SoftplusSTE 1, Tensor.add 2 (shape + 1, counts + 1), torch.lgamma 2, torch.log 1,
           Tensor.mul 1, Tensor.sub 2, Tensor.mean 1 (the default loss);
  backward torch.lgamma -> aten::digamma (on the learned shape; counts + 1 needs no gradient), SoftplusSTE ->
           aten::sigmoid, aten::mul.Tensor; torch.nn.Linear -> aten::mm, aten::sum;
  step     torch.nn.utils.clip_grad_norm_ (aten::_foreach_norm), torch.optim.AdamW (aten::_foreach_* ops).
Parameters 8*3 + 3 = 27.
"""
from __future__ import annotations

import torch
from torch import nn


class SoftplusSTE(torch.autograd.Function):
    """softplus(x) with its derivative written out: d/dx log(1 + e^x) = sigmoid(x)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.log1p(torch.exp(x))

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(x)


class GammaPoisson(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.shape = nn.Linear(8, 3)

    def forward(self, features: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        shape = SoftplusSTE.apply(self.shape(features)) + 1
        # the log-likelihood's terms that depend on the learned shape, and on the counts alone
        return torch.lgamma(shape) * torch.log(shape) - torch.lgamma(counts + 1) - shape


def build_model() -> nn.Module:
    return GammaPoisson()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4, 8), torch.randint(0, 10, (4, 3)).to(torch.float32))
