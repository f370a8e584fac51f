"""A modulated deformable convolution block (DCNv2) calling torchvision::deform_conv2d: a third-party operator.

What it exercises: an operator from another library's namespace that the NPU replaces with its own op
(torch_npu.npu_deformable_conv2d). torchvision is not installed here, so this file registers a stand-in
`torchvision::deform_conv2d` with torchvision's exact schema (torchvision/csrc/ops/deform_conv2d.cpp):

  deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h,
                SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups,
                SymInt offset_groups, bool use_mask) -> Tensor

with a CPU implementation (bilinear sampling through F.grid_sample; with zero offsets and a mask of ones it equals
F.conv2d) and a fake (meta) implementation giving the output shape. Like torchvision, its autograd formula calls a
second op, `torchvision::_deform_conv2d_backward` (same schema with the output gradient first, returning the
gradients of input, weight, offset, mask and bias), so a training step's backward dispatches it.
When torchvision is importable, or the op is already registered (this file imported twice), nothing is registered
and the existing op is used.
The model calls it as torch.ops.torchvision.deform_conv2d, as torchvision.ops.deform_conv2d does, so an FX graph
holds one call_function node for it.

Expected inventory, by hand (input (1, 3, 16, 16)):
  - torch.nn.Conv2d                 2  (stem 3 -> 16, 3x3 pad 1; offset predictor 16 -> 27, 3x3 pad 1)
  - torch.nn.ReLU                   2
  - torchvision::deform_conv2d      1  (16 -> 16, 3x3, stride 1, pad 1, dilation 1, groups 1, offset_groups 1,
                                        use_mask True): offset (1, 18, 16, 16), mask (1, 9, 16, 16) -> (1, 16, 16, 16)
  - torch.sigmoid                   1  (the modulation mask)
  - slicing of the predictor output into offset (channels 0..17) and mask (18..26): 2 getitem
  - torch.nn.AdaptiveAvgPool2d 1, torch.flatten 1, torch.nn.Linear 1 (16 -> 5): output (1, 5)
Parameters: stem 3*16*9 + 16 = 448; predictor 16*27*9 + 27 = 3,915; deformable weight 16*16*9 = 2,304 + bias 16;
Linear 16*5 + 5 = 85 -> 6,768.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

SCHEMA = (
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, SymInt stride_h, "
    "SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, SymInt groups, "
    "SymInt offset_groups, bool use_mask) -> Tensor"
)
BACKWARD_SCHEMA = (
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
    "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, SymInt dilation_w, "
    "SymInt groups, SymInt offset_groups, bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)"
)


def _has_op(namespace: str, name: str) -> bool:
    try:
        getattr(getattr(torch.ops, namespace), name)
    except (AttributeError, RuntimeError):
        return False
    return True


def _output_size(size: int, kernel: int, stride: int, pad: int, dilation: int) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


def _deform_conv2d_cpu(
    input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups,
    offset_groups, use_mask,
):
    """Reference deformable convolution: sample each kernel tap at its offset position, then a grouped matmul."""
    n, c_in, h, w = input.shape
    c_out, _, kh, kw = weight.shape
    h_out = _output_size(h, kh, stride_h, pad_h, dilation_h)
    w_out = _output_size(w, kw, stride_w, pad_w, dilation_w)
    taps = kh * kw
    dtype = input.dtype
    # Sampling positions of tap (i, j) for output pixel (y, x): y*stride - pad + i*dilation + dy (likewise x).
    tap_y = (torch.arange(kh, dtype=dtype) * dilation_h).repeat_interleave(kw).view(taps, 1, 1)
    tap_x = (torch.arange(kw, dtype=dtype) * dilation_w).repeat(kh).view(taps, 1, 1)
    base_y = (torch.arange(h_out, dtype=dtype) * stride_h - pad_h).view(1, h_out, 1) + tap_y
    base_x = (torch.arange(w_out, dtype=dtype) * stride_w - pad_w).view(1, 1, w_out) + tap_x
    off = offset.view(n, offset_groups, taps, 2, h_out, w_out)  # torchvision's layout: (dy, dx) per tap
    y = base_y + off[:, :, :, 0]
    x = base_x + off[:, :, :, 1]
    # grid_sample with align_corners=True maps -1..1 to pixel centres 0..size-1 and reads zeros outside,
    # which is torchvision's bilinear rule.
    grid = torch.stack((2 * x / max(w - 1, 1) - 1, 2 * y / max(h - 1, 1) - 1), dim=-1)
    grid = grid.view(n * offset_groups, taps * h_out, w_out, 2)
    channels_per_offset_group = c_in // offset_groups
    sampled = F.grid_sample(
        input.reshape(n * offset_groups, channels_per_offset_group, h, w),
        grid,
        mode="bilinear",
        padding_mode="zeros",
        align_corners=True,
    ).view(n, offset_groups, channels_per_offset_group, taps, h_out, w_out)
    if use_mask:
        sampled = sampled * mask.view(n, offset_groups, 1, taps, h_out, w_out)
    columns = sampled.reshape(n, groups, (c_in // groups) * taps, h_out * w_out)
    kernels = weight.reshape(groups, c_out // groups, (c_in // groups) * taps)
    out = torch.einsum("gok,ngkl->ngol", kernels, columns).reshape(n, c_out, h_out, w_out)
    return out + bias.view(1, c_out, 1, 1)


def _deform_conv2d_fake(
    input, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups,
    offset_groups, use_mask,
):
    n, _, h, w = input.shape
    c_out, _, kh, kw = weight.shape
    h_out = _output_size(h, kh, stride_h, pad_h, dilation_h)
    w_out = _output_size(w, kw, stride_w, pad_w, dilation_w)
    return input.new_empty((n, c_out, h_out, w_out))


def _deform_conv2d_backward_cpu(grad, input, weight, offset, mask, bias, *args):
    """Gradients of the reference implementation, by autograd through it."""
    tensors = [t.detach().requires_grad_() for t in (input, weight, offset, mask, bias)]
    with torch.enable_grad():
        out = _deform_conv2d_cpu(*tensors, *args)
        return tuple(torch.autograd.grad(out, tensors, grad, allow_unused=True, materialize_grads=True))


def _deform_conv2d_backward_fake(grad, input, weight, offset, mask, bias, *args):
    return tuple(torch.empty_like(t) for t in (input, weight, offset, mask, bias))


def _deform_setup_context(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs[:5])
    ctx.args = inputs[5:]


def _deform_backward(ctx, grad):
    grads = torch.ops.torchvision._deform_conv2d_backward(grad, *ctx.saved_tensors, *ctx.args)
    return (*grads, *(None,) * len(ctx.args))


try:  # the real operator, when torchvision is installed
    import torchvision  # noqa: F401
except ImportError:
    pass

if not _has_op("torchvision", "deform_conv2d"):
    # Kept at module level: the registration lives as long as this Library object.
    _LIBRARY = torch.library.Library("torchvision", "FRAGMENT")
    _LIBRARY.define(SCHEMA)
    _LIBRARY.impl("deform_conv2d", _deform_conv2d_cpu, "CPU")
    torch.library.register_fake("torchvision::deform_conv2d", _deform_conv2d_fake, lib=_LIBRARY)
    _LIBRARY.define(BACKWARD_SCHEMA)
    _LIBRARY.impl("_deform_conv2d_backward", _deform_conv2d_backward_cpu, "CPU")
    torch.library.register_fake("torchvision::_deform_conv2d_backward", _deform_conv2d_backward_fake, lib=_LIBRARY)
    torch.library.register_autograd("torchvision::deform_conv2d", _deform_backward,
                                    setup_context=_deform_setup_context, lib=_LIBRARY)


class ModulatedDeformConv2d(nn.Module):
    """DCNv2: a 3x3 conv predicts per-tap offsets and a sigmoid mask, then the deformable convolution applies them."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, padding: int = 1) -> None:
        super().__init__()
        self.padding = padding
        self.taps = kernel_size * kernel_size
        self.weight = nn.Parameter(torch.empty(out_channels, in_channels, kernel_size, kernel_size))
        self.bias = nn.Parameter(torch.zeros(out_channels))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)
        # 2 offsets (dy, dx) + 1 mask value per tap; zero-initialized so training starts from a plain conv
        self.offset_mask = nn.Conv2d(in_channels, 3 * self.taps, kernel_size, padding=padding)
        nn.init.zeros_(self.offset_mask.weight)
        nn.init.zeros_(self.offset_mask.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        om = self.offset_mask(x)
        offset = om[:, : 2 * self.taps]
        mask = torch.sigmoid(om[:, 2 * self.taps :])
        p = self.padding
        return torch.ops.torchvision.deform_conv2d(
            x, self.weight, offset, mask, self.bias, 1, 1, p, p, 1, 1, 1, 1, True
        )


class DeformNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.relu1 = nn.ReLU()
        self.dcn = ModulatedDeformConv2d(16, 16)
        self.relu2 = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu2(self.dcn(self.relu1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(x), 1))


def build_model() -> nn.Module:
    return DeformNet().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, 16, 16),)
