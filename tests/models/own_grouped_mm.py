"""A model's own expert dispatch: a grouped matmul it registers itself as a torch.library op for every backend (no
device_types: a CompositeExplicitAutograd kernel whose Python body runs one matmul per expert), with its own
backward. A dispatch mode never sees inside such a kernel unless the capture runs the body under it.

Expected: 32 tokens (2 x 16) split 8 per expert over 4 experts; hidden 64, inner 128.
Forward FLOPs of mymoe::grouped_mm: up 2 x 32 x 64 x 128 = 524,288, down 2 x 32 x 128 x 64 = 524,288: 1,048,576.
Backward (--train): each grouped matmul's input gradient (the op again, on the transposed weights) and weight
gradient (one mm per expert) are each as large as its forward: 2 x 1,048,576 = 2,097,152. Every ATen op of the
bodies (slice, select, t, mm, cat, stack, transpose, clone) has an NPU kernel or is a view: direct."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

COUNTS = [8, 8, 8, 8]


@torch.library.custom_op("own_moe::grouped_mm", mutates_args=())
def grouped_mm(x: torch.Tensor, w: torch.Tensor, counts: list[int]) -> torch.Tensor:
    outs, start = [], 0
    for expert, n in enumerate(counts):
        outs.append(x[start:start + n] @ w[expert].t())
        start += n
    return torch.cat(outs)


@grouped_mm.register_fake
def _fake(x, w, counts):
    return x.new_empty(x.shape[0], w.shape[1])


def _setup(ctx, inputs, output):
    x, w, counts = inputs
    ctx.save_for_backward(x, w)
    ctx.counts = counts


def _backward(ctx, grad):
    x, w = ctx.saved_tensors
    grad_x = grouped_mm(grad, w.transpose(1, 2).contiguous(), ctx.counts)
    grad_w, start = [], 0
    for n in ctx.counts:
        grad_w.append(grad[start:start + n].t() @ x[start:start + n])
        start += n
    return grad_x, torch.stack(grad_w), None


grouped_mm.register_autograd(_backward, setup_context=_setup)


class Experts(nn.Module):
    def __init__(self, experts: int = 4, hidden: int = 64, inner: int = 128) -> None:
        super().__init__()
        self.up = nn.Parameter(torch.randn(experts, inner, hidden) * 0.02)
        self.down = nn.Parameter(torch.randn(experts, hidden, inner) * 0.02)

    def forward(self, x):
        return grouped_mm(F.silu(grouped_mm(x, self.up, COUNTS)), self.down, COUNTS)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.experts = Experts()

    def forward(self, x):
        return self.experts(x.reshape(-1, 64)).reshape(x.shape)


def build_model():
    return Model()


def example_inputs():
    return (torch.randn(2, 16, 64),)
