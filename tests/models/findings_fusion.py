"""Fusable chains, each written the way the fusion findings must recognise (and a compute weight to count by hand).

What it exercises (input (1, 4, 8, 8)):
- conv1 -> bn1 -> relu1: Conv + BatchNorm + ReLU, each output used only by the next step       -> one fusion
- conv2 -> bn2: Conv + BatchNorm without an activation                                          -> another fusion
- x + y, then F.relu: a residual add followed by an activation (no norm): not a fusion finding
- pool, flatten (1, 4), fc0 (4 -> 8): a Linear followed by another Linear and the residual add: no fusion
- fc1 -> F.gelu -> Dropout -> fc2: Linear + GELU + Linear (dropout, identity in eval mode, is looked through)
                                                                                              -> FFN fusion (npu_ffn)
- h + fc2(..), then LayerNorm: residual add + LayerNorm                                         -> npu_add_layer_norm
- head: Linear (8 -> 3), nothing after it.

FLOPs by hand (2 per multiply-add; the flop counter's convention):
  conv1, conv2: 2 * (1*4*8*8 outputs) * (4 in-channels * 3*3 kernel) = 2 * 256 * 36 = 18,432 each -> 36,864
  fc0 (4 -> 8): 2 * 1 * 4 * 8 = 64; fc1, fc2 (8 -> 8): 2 * 8 * 8 = 128 each; head (8 -> 3): 2 * 8 * 3 = 48
                                                                                         -> Linear 368
  total 37,232: Conv2d carries 36,864 / 37,232 = 99.012% of the FLOPs, Linear 368 / 37,232 = 0.988%.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class FusionModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc0 = nn.Linear(4, 8)
        self.fc1 = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu1(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(x))
        x = F.relu(x + y)
        h = self.fc0(torch.flatten(self.pool(x), 1))
        h = self.norm(h + self.fc2(self.drop(F.gelu(self.fc1(h)))))
        return self.head(h)


def build_model() -> nn.Module:
    return FusionModel().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 4, 8, 8),)
