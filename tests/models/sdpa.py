"""A multi-head self-attention layer through F.scaled_dot_product_attention (the fused attention entry point).

What it exercises: attention as one call, F.scaled_dot_product_attention (is_causal=False, no mask), which torch_npu
takes whole (npu_fusion_attention). Its ATen evidence depends on the device: on the CPU it reaches
aten::_scaled_dot_product_flash_attention_for_cpu, on the meta device it decomposes into math ops (bmm, softmax) --
neither is what the NPU would see (measured on torch 2.13).

Expected inventory, by hand (input (2, 16, 32); 4 heads of 8):
  - torch.nn.Linear                                 4  (q, k, v, out; 32 -> 32)
  - Tensor.view 3, Tensor.transpose 4, Tensor.reshape 1   (split heads of q, k, v: view + transpose each;
                                                    merge heads: transpose + reshape)
  - torch.nn.functional.scaled_dot_product_attention 1: q, k, v (2, 4, 16, 8) -> (2, 4, 16, 8)
  Output (2, 16, 32). Parameters 4 * (32*32 + 32) = 4,224.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

HEADS, DIM = 4, 32


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(DIM, DIM)
        self.k = nn.Linear(DIM, DIM)
        self.v = nn.Linear(DIM, DIM)
        self.out = nn.Linear(DIM, DIM)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q = self.q(x).view(b, t, HEADS, c // HEADS).transpose(1, 2)
        k = self.k(x).view(b, t, HEADS, c // HEADS).transpose(1, 2)
        v = self.v(x).view(b, t, HEADS, c // HEADS).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v)
        # reshape, not view: the meta device's math path returns y contiguous in (b, heads, t, d), and its
        # transpose cannot be viewed as (b, t, c); the CPU flash kernel's layout happens to allow it.
        return self.out(y.transpose(1, 2).reshape(b, t, c))


def build_model() -> nn.Module:
    return SelfAttention().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 16, DIM),)
