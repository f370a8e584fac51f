"""Graph-mode breaks: a host read (.item(), line 19) and a data-dependent size (torch.nonzero, line 20) in forward.

Every NPU graph back-end breaks at both (torch._dynamo ends the graph at each unless told to capture them): two
breaks per back-end, at lines 19 and 20. The Linear (2 * 4 * 16 * 16 = 2,048 FLOPs) is all the FLOPs there are,
and it lies outside both breaks: the capturable FLOPs share is 1.0 on every back-end.
"""
import torch
from torch import nn


class ItemNonzero(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        h = self.fc(x)
        # the two breaks
        scale = h.abs().max().item()
        idx = torch.nonzero(h > 0)
        return h / scale, idx


def build_model():
    return ItemNonzero()


def example_inputs():
    return (torch.randn(4, 16),)
