"""A model whose forward always raises ValueError("forward_raises: unsupported input layout"), on any device.

Error-path fixture: build_model() and example_inputs() succeed; every capture method (FX, export, a recorded
forward on meta or CPU) fails at the raise on the forward's second line, after the Linear has run.
"""
from __future__ import annotations

import torch
from torch import nn

MESSAGE = "forward_raises: unsupported input layout"


class Raising(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        raise ValueError(MESSAGE)


def build_model() -> nn.Module:
    return Raising()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 4),)
