"""Near misses of the fusable chains: every op of a fusion is here, but never in a fusable arrangement.

What it exercises (input (1, 4, 8, 8)); no fusion finding may fire:
- bn0 -> conv1: BatchNorm *before* the convolution (the fold goes the other way only);
- conv1 -> relu1 with no BatchNorm between them (not the Conv+BN chain);
- conv2's output feeds bn2 *and* the residual add: folding BN into conv2 would change what the add sees;
- fc1's output feeds F.relu *and* the add after it: the activation cannot be fused into fc1's epilogue;
- fc2 -> Dropout -> fc3: two Linears with no activation between them;
- x + 1.0 (a scalar, not a residual of two tensors) before LayerNorm;
- conv3(x) and bn3(x) run one after the other (adjacent in every capture's node list) but bn3 normalises x, not
  conv3's output: no edge joins them, so no Conv + BatchNorm chain.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class NoFusionModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn0 = nn.BatchNorm2d(4)
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(4)
        self.conv3 = nn.Conv2d(4, 4, 1)
        self.bn3 = nn.BatchNorm2d(4)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 8)
        self.drop = nn.Dropout(0.1)
        self.fc3 = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu1(self.conv1(self.bn0(x)))
        c = self.conv2(x)
        x = self.bn2(c) + c
        x = self.conv3(x) * self.bn3(x)
        h = self.fc1(torch.flatten(self.pool(x), 1))
        h = F.relu(h) + h
        h = self.fc3(self.drop(self.fc2(h)))
        return self.norm(h + 1.0)


def build_model() -> nn.Module:
    return NoFusionModel().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 4, 8, 8),)
