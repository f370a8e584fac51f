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


# A tree shaped like a kernel library (state-spaces/mamba): its own package `mamba_ssm` (a name the third-party table
# knows, so its own imports must not be read as that library), a CUDA extension setup.py builds (a .cu of template
# instantiations compiling the kernel of a .cuh header), Triton kernels with autotune lists, and two kernel variants
# (v1: the CUDA extension, with mamba's pure-PyTorch reference where it is not built; v2: Triton) of which a model
# uses one.
LIBRARY = {
    "setup.py": '''\
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="mamba_ssm", packages=["mamba_ssm"],
              ext_modules=[CUDAExtension(name="selective_scan_cuda",
                                         sources=["csrc/scan.cpp", "csrc/scan_fwd_fp16.cu"])],
              cmdclass={"build_ext": BuildExtension})
        ''',
    "csrc/scan.cpp": '''\
        #include <torch/extension.h>
        void scan_fwd(float* x, int n);
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fwd", &scan_fwd); }
        ''',
    "csrc/scan_fwd_fp16.cu": '''\
        #include "scan_fwd_kernel.cuh"

        template void scan_fwd_cuda<at::Half, float>(ScanParams &params, cudaStream_t stream);
        ''',
    "csrc/scan_fwd_kernel.cuh": '''\
        #pragma once
        template <typename T>
        __global__ void scan_fwd_kernel(T* x, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) {
            x[i] = x[i] + (i > 0 ? x[i - 1] : T(0));
          }
        }
        ''',
    "mamba_ssm/__init__.py": "from mamba_ssm.modules.mamba_v1 import MambaV1\n",
    "mamba_ssm/utils/__init__.py": "",
    "mamba_ssm/utils/hf.py": "def load_config_hf(name):\n    return {}\n",
    "mamba_ssm/ops/__init__.py": "",
    "mamba_ssm/ops/scan_interface.py": '''\
        import torch
        from mamba_ssm.utils.hf import load_config_hf

        try:
            import selective_scan_cuda
        except ImportError:
            selective_scan_cuda = None


        def selective_scan_fn(x):
            if selective_scan_cuda is None:  # not built here: mamba's pure-PyTorch reference (selective_scan_ref)
                return torch.cumsum(x, 0)
            return selective_scan_cuda.fwd(x)
        ''',
    "mamba_ssm/ops/triton/__init__.py": "",
    "mamba_ssm/ops/triton/ssd.py": '''\
        import triton
        import triton.language as tl

        CONFIGS = [triton.Config({"BLOCK": 32}, num_warps=4), triton.Config({"BLOCK": 64}, num_warps=4),
                   triton.Config({"BLOCK": 128}, num_warps=8), triton.Config({"BLOCK": 256}, num_warps=8)]


        @triton.autotune(configs=[triton.Config({"BLOCK": 16}, num_warps=2),
                                  triton.Config({"BLOCK": 32}, num_warps=2),
                                  triton.Config({"BLOCK": 64}, num_warps=4)], key=["n"])
        @triton.jit
        def ssd_kernel(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, x * 2, mask=offs < n)


        def ssd(x):
            ssd_kernel[(4,)](x, x.numel())
            return x
        ''',
    "mamba_ssm/modules/__init__.py": "",
    "mamba_ssm/modules/mamba_v1.py": '''\
        import torch
        from mamba_ssm.ops.scan_interface import selective_scan_fn
        from mamba_ssm.utils.hf import load_config_hf


        class MambaV1(torch.nn.Module):
            def forward(self, x):
                return selective_scan_fn(x.cuda())
        ''',
    "mamba_ssm/modules/mamba_v2.py": '''\
        import torch
        from mamba_ssm.ops.triton.ssd import ssd


        class MambaV2(torch.nn.Module):
            def forward(self, x):
                return ssd(x.to("cuda"))
        ''',
}


def write_library(root: Path) -> Path:
    """The kernel-library tree written under root; returns root."""
    for name, text in LIBRARY.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


# The project's own CUDA extensions, as projects build them (issue 37, item 6). ROPE: a setup.py that lists its
# sources (torch.utils.cpp_extension's documented form) and a model file calling the built module. DEFORMABLE: the
# layout of Deformable DETR's models/ops (and of DINO, Mask2Former, ...): the builder bound to a name
# (`extension = CUDAExtension`), its sources globbed when setup.py runs, and the built module imported by the
# package's interface module, whose autograd.Function calls it. PACKAGED: a package's own `pkg._C`, imported
# absolutely in one module and relatively in another.
ROPE = {
    "setup.py": '''\
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(
            name="rope_cuda",
            ext_modules=[CUDAExtension("rope_cuda", ["csrc/rope.cpp", "csrc/rope.cu"])],
            cmdclass={"build_ext": BuildExtension},
        )
        ''',
    "csrc/rope.cpp": '''\
        #include <torch/extension.h>
        torch::Tensor rope_forward_cuda(torch::Tensor x, torch::Tensor cos, torch::Tensor sin);
        torch::Tensor forward(torch::Tensor x, torch::Tensor cos, torch::Tensor sin) {
          return rope_forward_cuda(x, cos, sin);
        }
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("forward", &forward, "rope forward"); }
        ''',
    "csrc/rope.cu": '''\
        #include <torch/extension.h>
        __global__ void rope_kernel(const float* x, const float* c, const float* s, float* out, int n, int d) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i >= n) return;
          int j = i % d; int h = d / 2;
          float b = j < h ? -x[i + h] : x[i - h];
          out[i] = x[i] * c[j] + b * s[j];
        }
        torch::Tensor rope_forward_cuda(torch::Tensor x, torch::Tensor c, torch::Tensor s) {
          auto out = torch::empty_like(x);
          int n = x.numel(), d = x.size(-1);
          rope_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), c.data_ptr<float>(), s.data_ptr<float>(),
                                                out.data_ptr<float>(), n, d);
          return out;
        }
        ''',
    "model.py": '''\
        import torch
        import rope_cuda


        class Attention(torch.nn.Module):
            def __init__(self, dim=16):
                super().__init__()
                self.q = torch.nn.Linear(dim, dim)
                self.register_buffer("cos", torch.ones(dim))
                self.register_buffer("sin", torch.zeros(dim))

            def forward(self, x):
                q = self.q(x)
                return rope_cuda.forward(q, self.cos, self.sin).relu()


        def build_model():
            return Attention()


        def example_inputs():
            return (torch.randn(2, 4, 16),)
        ''',
}

DEFORMABLE = {
    "ops/setup.py": '''\
        import glob
        import os

        import torch
        from setuptools import find_packages, setup
        from torch.utils.cpp_extension import CUDA_HOME, CppExtension, CUDAExtension


        def get_extensions():
            this_dir = os.path.dirname(os.path.abspath(__file__))
            extensions_dir = os.path.join(this_dir, "src")
            main_file = glob.glob(os.path.join(extensions_dir, "*.cpp"))
            source_cuda = glob.glob(os.path.join(extensions_dir, "cuda", "*.cu"))
            sources = main_file
            extension = CppExtension
            if torch.cuda.is_available() and CUDA_HOME is not None:
                extension = CUDAExtension
                sources += source_cuda
            return [extension("MultiScaleDeformableAttention", sources, include_dirs=[extensions_dir])]


        setup(name="MultiScaleDeformableAttention", packages=find_packages(), ext_modules=get_extensions())
        ''',
    "ops/src/vision.cpp": '''\
        #include "cuda/ms_deform_attn_cuda.h"
        PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("ms_deform_attn_forward", &ms_deform_attn_cuda_forward); }
        ''',
    "ops/src/cuda/ms_deform_attn_cuda.h": '''\
        #pragma once
        #include <torch/extension.h>
        at::Tensor ms_deform_attn_cuda_forward(const at::Tensor &value);
        ''',
    "ops/src/cuda/ms_deform_attn_cuda.cu": '''\
        #include "ms_deform_attn_cuda.h"
        __global__ void ms_deformable_im2col_gpu_kernel(const float* v, float* out, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) out[i] = v[i] * 0.5f;
        }
        at::Tensor ms_deform_attn_cuda_forward(const at::Tensor &value) {
          auto out = at::empty_like(value);
          int n = value.numel();
          ms_deformable_im2col_gpu_kernel<<<(n + 255) / 256, 256>>>(value.data_ptr<float>(), out.data_ptr<float>(), n);
          return out;
        }
        ''',
    "ops/__init__.py": "",
    "ops/functions/__init__.py": "from .ms_deform_attn_func import MSDeformAttnFunction\n",
    "ops/functions/ms_deform_attn_func.py": '''\
        import torch
        from torch.autograd import Function

        import MultiScaleDeformableAttention as MSDA


        class MSDeformAttnFunction(Function):
            @staticmethod
            def forward(ctx, value):
                return MSDA.ms_deform_attn_forward(value)

            @staticmethod
            def backward(ctx, grad):
                return grad
        ''',
    "model.py": '''\
        import torch

        from ops.functions import MSDeformAttnFunction


        class Block(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(8, 8)

            def forward(self, x):
                return MSDeformAttnFunction.apply(self.proj(x))


        def build_model():
            return Block()


        def example_inputs():
            return (torch.randn(2, 8),)
        ''',
}

PACKAGED = {
    "setup.py": '''\
        from setuptools import setup
        from torch.utils.cpp_extension import BuildExtension, CUDAExtension

        setup(name="boxes", ext_modules=[CUDAExtension(name="boxes._C", sources=["boxes/csrc/*.cu"])],
              cmdclass={"build_ext": BuildExtension})
        ''',
    "boxes/__init__.py": "",
    "boxes/csrc/nms.cu": '''\
        __global__ void nms_kernel(const float* boxes, long long* keep, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) keep[i] = boxes[i] > 0.5f;
        }
        ''',
    "boxes/ops.py": '''\
        from boxes import _C


        def nms(boxes, scores, iou):
            return _C.nms(boxes, scores, iou)
        ''',
    "boxes/layers/roi.py": '''\
        from .. import _C

        roi_align = _C.roi_align
        ''',
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """`files` (relative path -> text) written under root; returns root."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root
