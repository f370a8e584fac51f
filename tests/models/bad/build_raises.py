"""A model file whose build_model() raises: it asks its config table for a backbone that is not there.

Error-path fixture: importing works and example_inputs() works; build_model() raises
KeyError('large') from the BACKBONES lookup, before any module is created.
"""
from __future__ import annotations

import torch
from torch import nn

BACKBONES = {"small": 64, "base": 128}
BACKBONE = "large"  # a typo-like configuration mistake: there is no "large" entry


def build_model() -> nn.Module:
    width = BACKBONES[BACKBONE]
    return nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 2))


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 8),)
