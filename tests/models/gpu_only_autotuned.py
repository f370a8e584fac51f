"""A Triton kernel behind autotune and heuristics, launched with a grid computed from the tuned BLOCK, and the CUDA
calls training scripts make (set_device, .to("cuda"), .cuda(), synchronize): it scans on a CPU-only machine."""
import torch
import triton
import triton.language as tl
from torch import nn


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128})], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=offsets < n)


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        out = torch.empty_like(y)
        n = y.numel()
        relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](y, out, n)
        torch.cuda.synchronize()
        return out


def build_model():
    torch.cuda.set_device(0)
    return M().to("cuda")


def example_inputs():
    return (torch.randn(4, 8).cuda(),)
