"""A classifier whose model file states its own training step: loss_fn, build_optimizer, and no clipping. For --train.

What it exercises: the model-file convention of --train. loss_fn(output, inputs) is cross-entropy against the label
tensor among the inputs; build_optimizer(model) is SGD with momentum (foreach); max_grad_norm = None leaves gradient
clipping out.

Expected by hand (inputs x (4, 6), labels (4,)):
  forward  torch.nn.Linear 2 (6 -> 16 -> 5), torch.nn.ReLU 1, torch.nn.functional.cross_entropy 1 (the loss);
  backward cross_entropy -> aten::_log_softmax_backward_data and aten::nll_loss_backward;
  step     torch.optim.SGD (aten::_foreach_* ops), no clip_grad_norm_, no AdamW.
Parameters 6*16 + 16 + 16*5 + 5 = 197.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

max_grad_norm = None


class Classifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 5))

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def build_model() -> nn.Module:
    return Classifier()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(4, 6), torch.randint(0, 5, (4,)))


def loss_fn(output: torch.Tensor, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
    return F.cross_entropy(output, inputs[1])


def build_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, foreach=True)
