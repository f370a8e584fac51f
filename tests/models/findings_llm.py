"""The hand-written building blocks of modern LLMs that torch_npu has fused kernels for, one of each.

What it exercises (input (2, 8, 32): batch 2, sequence 8, hidden 32; 4 heads of 8):
- RMSNorm by hand: x.float(), x.pow(2).mean(-1, keepdim=True) + eps, torch.rsqrt, x * that, * weight
  -> rmsnorm finding (npu_rms_norm): pow, mean, add, rsqrt, mul
- rotary embedding by hand on q, (2, 4, 8, 8) after the head transpose: rotate_half(q) = cat(-q[..., 4:], q[..., :4]),
  then q * cos + rotate_half(q) * sin with cos/sin tables of shape (8, 8)
  -> rotary finding (npu_rotary_mul): slice, neg, cat, mul, add
- SwiGLU with one fused projection: a, b = w12(x).chunk(2, -1); F.silu(a) * b     -> swiglu finding (npu_swiglu)
- GeGLU with two projections: F.gelu(gate(x)) * up(x)                             -> geglu finding (npu_geglu)
- a residual add in front of the RMSNorm (x + swiglu branch)                      -> add + RMSNorm (npu_add_rms_norm)
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

BATCH, SEQ, HIDDEN, HEADS = 2, 8, 32, 4
HEAD_DIM = HIDDEN // HEADS


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w12 = nn.Linear(HIDDEN, 2 * HIDDEN, bias=False)
        self.w3 = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.norm = RMSNorm(HIDDEN)
        self.q = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.gate = nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.up = nn.Linear(HIDDEN, HIDDEN, bias=False)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
        freqs = torch.outer(torch.arange(SEQ).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)  # (SEQ, HEAD_DIM)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.w12(x).chunk(2, dim=-1)
        x = x + self.w3(F.silu(a) * b)
        h = self.norm(x)
        bsz, t, c = h.shape
        q = self.q(h).view(bsz, t, HEADS, HEAD_DIM).transpose(1, 2)
        q = q * self.cos + rotate_half(q) * self.sin
        y = q.transpose(1, 2).reshape(bsz, t, c)
        return y + F.gelu(self.gate(y)) * self.up(y)


def build_model() -> nn.Module:
    return Block().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(BATCH, SEQ, HIDDEN),)
