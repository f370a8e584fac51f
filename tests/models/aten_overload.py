"""A project kernel registered as a new overload of an ATen op (aten::relu.myimpl, CPU only): not ATen's relu."""
import torch
from torch import nn

_lib = torch.library.Library("aten", "FRAGMENT")
_lib.define("relu.myimpl(Tensor self, float slope) -> Tensor")


def _leaky(x, slope):
    return torch.where(x > 0, x, x * slope)


_lib.impl("relu.myimpl", _leaky, "CPU")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.ops.aten.relu.myimpl(self.fc(x), 0.1)


def build_model():
    return Net()


def example_inputs():
    return (torch.randn(2, 8),)
