"""Graph mode with torch._dynamo (--graph-mode dynamo): a print in forward (line 16) breaks the graph at the Python
level, which the dispatched ATen calls do not show; the .item() at line 17 is found by both methods and reported once.
"""
import torch
from torch import nn


class PrintItem(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        # the Python-level break, then a host sync
        print("graph_python", tuple(h.shape))
        scale = h.sum().item()
        return h * scale


def build_model():
    return PrintItem()


def example_inputs():
    return (torch.randn(2, 8),)
