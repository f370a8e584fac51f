"""The GPU training project the source tests share: DDP over NCCL, AMP, apex, a guarded flash_attn import, a Triton
kernel with an int64 atomic, a .cu extension with its setup.py (each site's expected category is in
test_source_scan.py)."""
from __future__ import annotations

import textwrap
from pathlib import Path

TRAIN = '''\
import os
import torch
import torch.distributed as dist
from torch.cuda.amp import GradScaler, autocast
from apex.optimizers import FusedAdam
import triton
import triton.language as tl

try:
    import flash_attn as fa
except ImportError:
    fa = None

torch.backends.cudnn.benchmark = True
torch.backends.cuda.matmul.allow_tf32 = True


@triton.jit
def count_kernel(out_ptr, idx_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs, mask=offs < n)
    one = tl.full((BLOCK,), 1, dtype=tl.int64)
    tl.atomic_add(out_ptr + idx, one)


def main():
    dist.init_process_group("nccl")
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    model = torch.nn.Linear(8, 8).cuda()
    model = torch.nn.DataParallel(model)
    opt = FusedAdam(model.parameters())
    scaler = GradScaler()
    if dist.get_backend() == "nccl":
        pass
    with autocast():
        y = fa.flash_attn_func(model.weight, model.weight, model.weight, causal=True, softcap=1.0)
    count_kernel[(8,)](y, y, 8, BLOCK=64)
    scaler.scale(y.sum()).backward()
    opt.step()
'''

KERNELS = '''\
#include <cuda_runtime.h>
// __global__ void commented_out(int* x) {}
__global__ void rotary_kernel(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { x[i] *= 2.0f; }
}

__global__ void __launch_bounds__(256) zigzag_kernel(int* h, const int* v, int n) {
  int i = threadIdx.x;
  if (i < n) {
    atomicAdd(&h[v[i]], 1);
  }
}

void launch(float* x, int n, cudaStream_t s) {
  rotary_kernel<<<(n + 255) / 256, 256, 0, s>>>(x, n);
  cudaStreamSynchronize(s);
}
'''

BIND = '''\
#include <torch/extension.h>
void launch(float* x, int n);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("launch", &launch); }
'''

SETUP = '''\
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(name="zz", ext_modules=[CUDAExtension("zigzag_ext", ["csrc/kernels.cu", "csrc/bind.cpp"])],
      cmdclass={"build_ext": BuildExtension})
'''

PROJECT = {"train.py": TRAIN, "csrc/kernels.cu": KERNELS, "csrc/bind.cpp": BIND, "setup.py": SETUP}


def write_project(root: Path, extra: dict[str, str] | None = None) -> Path:
    """The project's files (and `extra` ones) written under root; returns root."""
    for name, text in {**PROJECT, **(extra or {})}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root
