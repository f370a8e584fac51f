"""A masked layer that reads the mask's values unless it is being compiled, as Hugging Face's mask helpers do.

What it exercises: on meta `bool(mask.all())` has no value, so the plain dispatch capture fails; the
dispatch-compiling capture (torch.compiler.is_compiling() true) takes the graph-safe branch.
Expected inventory there: torch.nn.Linear 1, Tensor.unsqueeze 1, Tensor.mul 1.
"""
import torch
from torch import nn


class Masked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if not torch.compiler.is_compiling() and bool(mask.all()):
            return self.fc(x)
        return self.fc(x) * mask.unsqueeze(-1)


def build_model() -> nn.Module:
    return Masked()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 4, 8), torch.ones(2, 4))
