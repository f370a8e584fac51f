"""Four bias-free Linear(2048 -> 2048) layers on a (2048, 2048) input: work of known size for the time model.

Expected by hand (scanned with --dtype bfloat16 on Atlas A2, 353.9 TFLOPS bf16 cube peak, efficiency 0.7; the
measured medium-class efficiency 0.756 of kb/cube_shapes.json makes it 256.8 us):
  FLOPs per layer 2 * 2048^3 = 1.718e10; 4 layers 6.872e10; FLOPs / (peak x eff) = 6.872e10 / 2.477e14 = 277.4 us.
  Bytes per layer (bf16): input, weight, output 3 * 2048^2 * 2 = 25.2 MB, 23.8 us at 1.6 x 1024^4 B/s x 0.6: the
  layers are compute bound; launch 5 us each.
"""
from __future__ import annotations

import torch
from torch import nn


def build_model() -> nn.Module:
    return nn.Sequential(*(nn.Linear(2048, 2048, bias=False) for _ in range(4))).eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2048, 2048),)
