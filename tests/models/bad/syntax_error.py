"""A model file with a syntax error (an unclosed parenthesis on line 12): loading it must fail with a clear message.

Error-path fixture: importing it raises SyntaxError; nothing in it can be built.
"""
from __future__ import annotations

import torch
from torch import nn


def build_model() -> nn.Module:
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU()
    # the closing parenthesis above is missing


def example_inputs():
    return (torch.randn(1, 4),)
