"""An LSTM with a projection layer (nn.LSTM(proj_size > 0), as in LSTMP speech models), then a Linear.

What it exercises: an nn.LSTM attribute the NPU's LSTM does not support (proj_size); the traced attributes must
carry proj_size = 8 (and hidden_size 32, num_layers 1, batch_first True, bidirectional False).

Expected inventory, by hand (input (2, 10, 16)):
  - torch.nn.LSTM     1  (input 16, hidden 32, proj_size 8): output (2, 10, 8), h_n (1, 2, 8), c_n (1, 2, 32)
  - operator.getitem  the LSTM's tuple unpacked (`out, _ = self.lstm(x)`: 2 in an FX graph)
  - torch.nn.Linear   1  (8 -> 4): output (2, 10, 4)
  Parameters: W_ih 4*32*16 = 2,048, W_hh 4*32*8 = 1,024, biases 2*4*32 = 256, W_hr 8*32 = 256 -> 3,584;
  Linear 8*4 + 4 = 36; total 3,620.
On the CPU, torch warns "LSTM with projections is not supported with oneDNN. Using default implementation." and the
LSTM unrolls into per-timestep cell math (addmm/mm, sigmoid_, tanh) on both CPU and meta (aten::lstm itself is
CompositeImplicitAutograd, so a dispatch recorder never sees it).
"""
from __future__ import annotations

import torch
from torch import nn


class ProjectedLSTM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(16, 32, proj_size=8, batch_first=True)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.fc(out)


def build_model() -> nn.Module:
    return ProjectedLSTM().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 10, 16),)
