"""The detection model of vision.py with its input convention: a list of images."""
import torch
from vision import detector


def build_model():
    return detector()


def example_inputs():
    return ([torch.rand(3, 160, 160)],)
