"""A small MLP with two project-defined torch.library custom ops that have no NPU kernel: two custom-dev operators.

Both have CPU kernels, which the capture runs once as their reference (composite before custom): gated_tanh's runs
aten::i0, which has no NPU kernel, so registering it as a composite would not do; row_rescale takes a float, which the
reference run does not build (it runs only all-tensor signatures).

What it exercises: the cost model's floor for kernel work: two custom-dev operator types must come to at least
20 person-days by default (10+ each, as the practice table says).
"""
from __future__ import annotations

import torch
from torch import nn


@torch.library.custom_op("opassess_two::gated_tanh", mutates_args=(), device_types="cpu")
def gated_tanh(x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    """tanh(x) * sigmoid(i0(gate)) in one kernel (i0: the modified Bessel function, no NPU kernel)."""
    return torch.tanh(x) * torch.sigmoid(torch.i0(gate))


@gated_tanh.register_fake
def _gated_tanh_fake(x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("opassess_two::row_rescale", mutates_args=(), device_types="cpu")
def row_rescale(x: torch.Tensor, eps: float) -> torch.Tensor:
    """x / (max |x| per row + eps)."""
    return x / (x.abs().amax(dim=-1, keepdim=True) + eps)


@row_rescale.register_fake
def _row_rescale_fake(x: torch.Tensor, eps: float) -> torch.Tensor:
    return torch.empty_like(x)


class TwoKernels(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.gate = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.ops.opassess_two.gated_tanh(self.fc1(x), self.gate(x))
        return self.fc2(torch.ops.opassess_two.row_rescale(h, 1e-6))


def build_model() -> nn.Module:
    return TwoKernels().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4, 16),)
