"""A GPU model whose attention goes through four GPU attention calls (flash_attn_func, flash_attn_qkvpacked_func,
flash_attn_with_kvcache, xformers memory_efficient_attention), all leading to the NPU's fused attention
(third_party_kernel_libs.tsv routes): one attention decision, not six separately priced sites (issue 23, item 1).
q/k/v (2, 16, 4, 8); every call returns (2, 16, 4, 8)."""
import torch
import xformers.ops as xops
from flash_attn import flash_attn_func, flash_attn_qkvpacked_func, flash_attn_with_kvcache
from torch import nn


class Block(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        qkv = self.qkv(x).view(b, s, 3, self.heads, d // self.heads)
        q, k, v = qkv.unbind(2)
        prefill = flash_attn_func(q, k, v, causal=True)
        packed = flash_attn_qkvpacked_func(qkv, causal=True)
        dense = xops.memory_efficient_attention(q, k, v)
        cached = flash_attn_with_kvcache(q, k, v, causal=True)
        return self.proj((prefill + packed + dense + cached).reshape(b, s, d))


def build_model():
    return Block()


def example_inputs():
    return (torch.randn(2, 16, 32),)
