"""An MLP with a project-defined torch.library custom op and a torch.autograd.Function: both must show as themselves.

What it exercises:
- `opassess_tests::scale_shift(Tensor x, Tensor scale, float shift) -> Tensor` (x * scale + shift), defined with
  torch.library.custom_op with a CPU implementation and a register_fake (meta) implementation; a float attribute
  travels as an argument;
- `SignSTE`, a torch.autograd.Function binarizing activations (torch.sign forward, straight-through gradient
  clipped to |x| <= 1 backward, as in BinaryConnect). torch.fx.symbolic_trace traces *through* Function.apply
  (its body, torch.sign, lands in the graph; the Function itself leaves no node), so a capture that wants the
  Function as an operator has to look for it (measured on torch 2.13).

Expected inventory, by hand (input (4, 16)):
  - torch.nn.Linear                 2  (16 -> 32, 32 -> 3)
  - opassess_tests::scale_shift     1  (shift = 0.5; scale is a (32,) parameter)
  - SignSTE (autograd.Function)     1  (dispatches aten::sign)
  Output (4, 3). Parameters 16*32 + 32 + 32 (scale) + 32*3 + 3 = 675.
"""
from __future__ import annotations

import torch
from torch import nn


@torch.library.custom_op("opassess_tests::scale_shift", mutates_args=())
def scale_shift(x: torch.Tensor, scale: torch.Tensor, shift: float) -> torch.Tensor:
    """x * scale + shift in one kernel."""
    return x * scale + shift


@scale_shift.register_fake
def _scale_shift_fake(x: torch.Tensor, scale: torch.Tensor, shift: float) -> torch.Tensor:
    return torch.empty_like(x)


class SignSTE(torch.autograd.Function):
    """sign(x) forward; gradient passed straight through where |x| <= 1, zero elsewhere."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_output * (x.abs() <= 1).to(grad_output.dtype)


class BinaryMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.scale = nn.Parameter(torch.ones(32))
        self.fc2 = nn.Linear(32, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.ops.opassess_tests.scale_shift(self.fc1(x), self.scale, 0.5)
        return self.fc2(SignSTE.apply(h))


def build_model() -> nn.Module:
    return BinaryMLP().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4, 16),)
