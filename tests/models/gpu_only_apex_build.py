"""Builds an apex layer in build_model while apex is not installed: the load stops with one line naming it."""
import torch
from apex.normalization import FusedLayerNorm
from torch import nn


def build_model():
    return nn.Sequential(nn.Linear(8, 8), FusedLayerNorm(8))


def example_inputs():
    return (torch.randn(2, 8),)
