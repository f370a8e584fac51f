"""A GPU-only model as teams write it: flash_attn imported unconditionally, a Triton kernel launched in forward,
.cuda() in build_model. Expected on a CPU-only machine (tests/standins/test_standins.py): it scans, with
flash_attn.flash_attn_func (param-converted: npu_fusion_attention) and triton:scale_kernel (custom-dev) as
library operators; q/k/v (2, 16, 4, 8) give an attention output (2, 16, 4, 8)."""
import torch
import triton
import triton.language as tl
from flash_attn import flash_attn_func
from torch import nn


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * scale, mask=mask)


class Block(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        attn = flash_attn_func(q, k, v, causal=True, window_size=(8, 0), softcap=30.0)
        y = self.proj(attn.reshape(b, s, d))
        out = torch.empty_like(y)
        n = y.numel()
        scale_kernel[(triton.cdiv(n, 128),)](y, out, n, 0.5, BLOCK=128)
        return out


def build_model():
    return Block().cuda()


def example_inputs():
    return (torch.randn(2, 16, 32, device="cuda"),)
