"""A tensor-parallel MLP written with DTensor (ColwiseParallel up, RowwiseParallel down) on a fake process group of
2 ranks, plus the project's own autograd.Function (a straight-through clamp). DTensor moves its tensors through
torch's own autograd Functions (torch.distributed.tensor._redistribute.Redistribute, _api._ToTorchTensor): those are
the library's, judged by the ATen ops they run like any torch function (kind "function"), not the project's custom
ops; ClampSTE is the project's (kind "custom", its backward to check).

Scan it in a worker: build_model() initialises the process group of the process that runs it."""
from __future__ import annotations

import torch
import torch.distributed as dist
from torch import nn


class ClampSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clamp(-1, 1)

    @staticmethod
    def backward(ctx, grad):
        return grad


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 16)

    def forward(self, x):
        return ClampSTE.apply(self.down(torch.relu(self.up(x))))


def build_model():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if not dist.is_initialized():
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=2)
    mesh = init_device_mesh("cpu", (2,))
    return parallelize_module(MLP(), mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})


def example_inputs():
    return (torch.randn(4, 16),)
