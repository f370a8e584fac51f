"""A Glow flow step (Kingma & Dhariwal 2018, as in rosinality/glow-pytorch): actnorm, an invertible 1x1 convolution
whose log-determinant is torch.slogdet of its weight, and an affine coupling. PyTorch's linalg refuses half precision
("Low precision dtypes not supported") in its meta kernel and on the CPU alike: with --dtype bfloat16 the model asks
for an op no device runs in that dtype."""
import torch
from torch import nn
from torch.nn import functional as F


class InvConv2d(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(channels, channels))
        self.weight = nn.Parameter(q.unsqueeze(2).unsqueeze(3))

    def forward(self, x):
        _, _, height, width = x.shape
        out = F.conv2d(x, self.weight)
        logdet = height * width * torch.slogdet(self.weight.squeeze())[1]
        return out, logdet


class FlowStep(nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, channels, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, channels, 1, 1))
        self.invconv = InvConv2d(channels)
        self.coupling = nn.Sequential(nn.Conv2d(channels // 2, 16, 3, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, channels, 3, padding=1))

    def forward(self, x):
        x = self.scale * (x + self.loc)
        x, logdet = self.invconv(x)
        a, b = x.chunk(2, 1)
        log_s, t = self.coupling(a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        return torch.cat([a, (b + t) * s], 1), logdet + torch.log(s).sum()


def build_model():
    return FlowStep()


def example_inputs():
    return (torch.randn(2, 4, 8, 8),)
