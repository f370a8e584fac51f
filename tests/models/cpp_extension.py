"""An MLP that calls a project's own compiled C++ extension, JIT-built with torch.utils.cpp_extension.load.

What it exercises: a call into a C++ extension (a pybind11 function, not a torch.library op) must appear in the
inventory as itself, `opassess_scaled_gelu_ext.scaled_gelu`, of kind "extension", and be classified custom-dev,
even though the ATen ops it dispatches inside (aten::gelu, aten::mul) have NPU kernels: compiled code has to be
rebuilt against torch_npu. torch.fx cannot trace it (a pybind11 function refuses a Proxy), so without opassess's
extension hook the call would vanish into a graph break or into its ATen ops.

Building the extension takes ~20 s the first time (g++ and ninja; torch caches the build).
Expected inventory (one forward): torch.nn.Linear 2, opassess_scaled_gelu_ext.scaled_gelu 1, which dispatches
aten::gelu and aten::mul.Scalar (the C++ `tensor * double`).
"""
from pathlib import Path

import torch
from torch import nn
from torch.utils.cpp_extension import load

scaled_gelu_ext = load(name="opassess_scaled_gelu_ext",
                       sources=[str(Path(__file__).with_name("cpp_extension_scaled_gelu.cpp"))],
                       extra_cflags=["-O0"], verbose=False)


class ExtensionMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(scaled_gelu_ext.scaled_gelu(self.fc1(x), 0.5))


def build_model() -> nn.Module:
    return ExtensionMLP()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 16),)
