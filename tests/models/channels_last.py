"""A conv block written for the GPU's channels_last layout: the input converted with .to(memory_format=...), the
activations kept channels_last through .contiguous, empty_like and clone, then converted back. The NPU takes the
default contiguous format only (Tensor.to: memory_format contiguous_format, API page; the migration guide's hand
edit): one layout decision, not one price per place (issue 23, item 1). Input (2, 3, 16, 16) -> (2, 8, 16, 16)."""
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)

    def forward(self, x):
        x = x.to(memory_format=torch.channels_last)
        y = self.c1(x).contiguous(memory_format=torch.channels_last)
        z = self.bn(self.c2(y))
        out = torch.empty_like(z, memory_format=torch.channels_last)
        out.copy_(z)
        w = z.clone(memory_format=torch.channels_last)
        return (out + w).to(memory_format=torch.contiguous_format)


def build_model():
    return Net().eval()


def example_inputs():
    return (torch.randn(2, 3, 16, 16),)
