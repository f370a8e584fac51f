"""A model too large for real weights: 8.6 billion float32 parameters (32 GiB), so only the meta device can build it.

What it exercises: the meta-device path for models that do not fit in this machine's 24 GB. Two 65536 x 65536
bias-free Linear layers hold 2 * 65536^2 = 8,589,934,592 parameters (34.4 GB, 32 GiB in float32); a small head
adds 65536 * 16 + 16 = 1,048,592: 8,590,983,184 parameters in all.
build_model() refuses to build it anywhere but on the meta device (RuntimeError), rather than let the CPU try to
allocate 32 GiB; a loader that falls back to the CPU must report that error, not crash the machine.
On the meta device the forward costs nothing: no data is computed.

Expected inventory, by hand (input (1, 65536)):
  - torch.nn.Linear   3  (65536 -> 65536 twice, 65536 -> 16)
  - torch.nn.ReLU     1
  Output (1, 16).
"""
from __future__ import annotations

import torch
from torch import nn

WIDTH = 65536


class HugeMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(WIDTH, WIDTH, bias=False)
        self.relu = nn.ReLU()
        self.mix = nn.Linear(WIDTH, WIDTH, bias=False)
        self.head = nn.Linear(WIDTH, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.mix(self.relu(self.up(x))))


def build_model() -> nn.Module:
    if torch.get_default_device().type != "meta":
        raise RuntimeError('HugeMLP needs 32 GiB of float32 weights; build it under `with torch.device("meta"):`')
    return HugeMLP().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, WIDTH),)
