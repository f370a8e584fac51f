"""A quantization-aware CIFAR-10 CNN with a project-defined custom op and a custom autograd Function.

What it exercises: the two kinds of project-defined operators a migration has to port by hand.
- `opassess_examples::fused_bias_gelu(Tensor x, Tensor bias) -> Tensor`, a `torch.library.custom_op` (CPU-only kernel in
  Python, a fake/meta implementation registered with `register_fake` so it runs on the meta device, and an autograd
  formula), called as `torch.ops.opassess_examples.fused_bias_gelu` in the classifier head;
- `FakeQuantizeSTE`, a `torch.autograd.Function` that rounds activations to signed 8-bit levels in the forward
  pass and passes gradients straight through in the backward pass (the straight-through estimator).
Around them, ordinary operators: Conv2d 3x3 padding 1 without bias, BatchNorm2d, ReLU, MaxPool2d(2), torch.flatten,
Linear, Dropout.

Operator counts, worked out by hand (one forward; 3 stages of [Conv2d, BN, ReLU, Conv2d, BN, ReLU, MaxPool2d]):
  - torch.nn.Conv2d                          6
  - torch.nn.BatchNorm2d                     6
  - torch.nn.ReLU                            6
  - torch.nn.MaxPool2d                       3   (kernel 2, stride 2)
  - FakeQuantizeSTE (autograd.Function)      3   (after each stage)
  - torch.flatten                            1
  - torch.nn.Linear                          2   (2048 -> 256 without bias, 256 -> 10)
  - opassess_examples::fused_bias_gelu       1
  - torch.nn.Dropout                         1
Shapes: (2, 3, 32, 32) -> stage 1 (2, 32, 16, 16) -> stage 2 (2, 64, 8, 8) -> stage 3 (2, 128, 4, 4) -> flatten
(2, 2048) -> fc1 + fused bias-GELU (2, 256) -> logits (2, 10).
Parameters 814,570 = convs 864 + 9,216 + 18,432 + 36,864 + 73,728 + 147,456 (= 286,560)
  + BN weights and biases 2 * (32 + 32 + 64 + 64 + 128 + 128) (= 896) + fc1 524,288 + fc1_bias 256 + fc2 2,570.

Capture notes (measured, torch 2.13): torch.fx.symbolic_trace keeps the custom op as one call_function node
(target torch.ops.opassess_examples.fused_bias_gelu) but traces *through* FakeQuantizeSTE.apply, leaving its body
(truediv, torch.round, Tensor.clamp, mul) in the graph and no trace of the Function itself; a dispatch recorder sees
`opassess_examples::fused_bias_gelu` as one op on the meta device (the fake impl) and the body ops of the Function.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

NUM_CLASSES = 10
BATCH, IMAGE_SIZE = 2, 32


@torch.library.custom_op("opassess_examples::fused_bias_gelu", mutates_args=(), device_types="cpu")
def fused_bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """GELU(x + bias) in one kernel (the CPU reference; a real project would ship a CUDA kernel)."""
    return F.gelu(x + bias)


@fused_bias_gelu.register_fake
def _fused_bias_gelu_fake(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # Shape and dtype only: what the meta device and torch.export need.
    return torch.empty_like(x)


def _fused_bias_gelu_setup(ctx, inputs, output) -> None:
    x, bias = inputs
    ctx.save_for_backward(x, bias)


def _fused_bias_gelu_backward(ctx, grad: torch.Tensor):
    x, bias = ctx.saved_tensors
    grad_x = torch.ops.aten.gelu_backward(grad, x + bias)
    # bias broadcasts over every leading dimension: its gradient sums them
    return grad_x, grad_x.reshape(-1, bias.shape[-1]).sum(0)


fused_bias_gelu.register_autograd(_fused_bias_gelu_backward, setup_context=_fused_bias_gelu_setup)


class FakeQuantizeSTE(torch.autograd.Function):
    """Symmetric int8 fake quantization: round(x / scale) clamped to [-128, 127], times scale; identity gradient."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, scale: float) -> torch.Tensor:
        return torch.round(x / scale).clamp(-128, 127) * scale

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor):
        return grad_output, None


class ConvStage(nn.Module):
    """Two Conv-BN-ReLU layers, a 2x2 max pool halving H and W, then fake-quantized activations."""

    def __init__(self, in_channels: int, out_channels: int, act_scale: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.act_scale = act_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu1(self.bn1(self.conv1(x)))
        x = self.pool(self.relu2(self.bn2(self.conv2(x))))
        return FakeQuantizeSTE.apply(x, self.act_scale)


class QuantCNN(nn.Module):
    """Three conv stages (32, 64, 128 channels) and a two-layer classifier head with the fused bias-GELU op."""

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        # activation scales as a calibration pass would pick them: the range grows with depth
        self.stage1 = ConvStage(3, 32, act_scale=2**-5)
        self.stage2 = ConvStage(32, 64, act_scale=2**-4)
        self.stage3 = ConvStage(64, 128, act_scale=2**-4)
        self.fc1 = nn.Linear(128 * 4 * 4, 256, bias=False)
        self.fc1_bias = nn.Parameter(torch.zeros(256))
        self.dropout = nn.Dropout(0.3)
        self.fc2 = nn.Linear(256, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stage3(self.stage2(self.stage1(x)))
        x = torch.flatten(x, 1)
        x = torch.ops.opassess_examples.fused_bias_gelu(self.fc1(x), self.fc1_bias)
        return self.fc2(self.dropout(x))


def build_model() -> nn.Module:
    """The network in eval mode."""
    return QuantCNN().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    """Two 32x32 RGB images."""
    return (torch.randn(BATCH, 3, IMAGE_SIZE, IMAGE_SIZE),)
