"""A topic-mixture head (ProdLDA-style): Dirichlet sampling of the mixture weights. The sampler's argument check reads
values (meta cannot run it) and the CPU has no bfloat16 Dirichlet kernel: with --dtype bfloat16 the CPU fallback must
still capture it."""
import torch
from torch import nn


class TopicMixture(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(16, 4)
        self.dec = nn.Linear(4, 16)

    def forward(self, x):
        alpha = nn.functional.softplus(self.enc(x)) + 1e-3
        theta = torch.distributions.Dirichlet(alpha).rsample()
        return self.dec(theta)


def build_model():
    return TopicMixture()


def example_inputs():
    return (torch.randn(2, 16),)
