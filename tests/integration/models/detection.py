"""A torchvision detection model (SSDlite320 with a MobileNetV3 backbone, no pretrained weights) in eval mode.

What it exercises: a model whose operators are mostly called from inside torchvision (site-packages): reports must
attribute them to the project (this file), never to a location in site-packages.
"""
from __future__ import annotations

import torch
from torchvision.models.detection import ssdlite320_mobilenet_v3_large


def build_model() -> torch.nn.Module:
    return ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=3).eval()


def example_inputs() -> tuple[list[torch.Tensor]]:
    return ([torch.rand(3, 320, 320)],)
