"""A ResNet-18 image classifier (He et al. 2015), written out in plain PyTorch, on a 1x3x224x224 image.

What it exercises: the everyday CNN operators (Conv2d with 7x7/3x3/1x1 kernels, strides 1 and 2, paddings 3/1/0;
BatchNorm2d; ReLU; MaxPool2d; AdaptiveAvgPool2d; Linear), residual additions, downsample shortcuts, and
Conv+BN+ReLU chains for the fusion findings. The layout matches torchvision's resnet18 (same parameter count,
11,689,512 with 1000 classes) but nothing is imported from torchvision and no weights are loaded.

Conventions chosen so the inventory can be counted by hand:
- every ReLU is its own nn.ReLU module (BasicBlock has relu1 and relu2; torchvision shares one module per block,
  which gives the same 17 calls but only 9 module paths);
- the residual is `out = out + identity` (operator.add in an FX graph, aten::add.Tensor when dispatched),
  never the in-place `out += identity` (which would be operator.iadd / aten::add_.Tensor);
- flattening is `torch.flatten(x, 1)` (a function, not a method or nn.Flatten).

Operator counts, worked out by hand (one forward):
  stem: conv1, bn1, relu, maxpool
  layer1..layer4 each hold 2 BasicBlocks = 8 blocks; each block: conv1, bn1, relu1, conv2, bn2, (+), relu2;
  the first block of layer2, layer3 and layer4 has a downsample shortcut (1x1 Conv2d stride 2 + BatchNorm2d).
  - torch.nn.Conv2d            20 = 1 (stem) + 8 blocks * 2 + 3 downsample
  - torch.nn.BatchNorm2d       20 = same as Conv2d, one BN after every conv
  - torch.nn.ReLU              17 = 1 (stem) + 8 blocks * 2
  - operator.add (residual)     8 = one per block
  - torch.nn.MaxPool2d          1
  - torch.nn.AdaptiveAvgPool2d  1
  - torch.flatten               1
  - torch.nn.Linear             1
  = 69 operator calls (an FX graph adds one placeholder `x` and one output node: 71 nodes).

ATen ops dispatched by one forward (measured with a TorchDispatchMode on torch 2.13, eval mode, meta or CPU):
  aten::convolution 20, aten::native_batch_norm 20, aten::relu_ 17 (nn.ReLU(inplace=True), as in torchvision),
  aten::add.Tensor 8, aten::max_pool2d_with_indices 1, aten::mean.dim 1 (AdaptiveAvgPool2d to 1x1),
  aten::view 1 (torch.flatten), aten::t 1 + aten::addmm 1 (Linear); plus bookkeeping ops that are not
  computation (aten::empty.memory_format next to each batch norm, aten::detach after each in-place ReLU when
  autograd is on).

Distinct Conv2d signatures (kernel, stride, padding; in -> out channels; input H x W):
  7x7/s2/p3 3->64 @224; 3x3/s1/p1 64->64 @56 (4 calls); 3x3/s2/p1 64->128 @56; 3x3/s1/p1 128->128 @28 (3 calls);
  1x1/s2/p0 64->128 @56; 3x3/s2/p1 128->256 @28; 3x3/s1/p1 256->256 @14 (3); 1x1/s2/p0 128->256 @28;
  3x3/s2/p1 256->512 @14; 3x3/s1/p1 512->512 @7 (3); 1x1/s2/p0 256->512 @14  -> 11 signatures, 20 calls.

Spatial sizes: 224 -conv1 s2-> 112 -maxpool s2-> 56 (layer1) -> 28 (layer2) -> 14 (layer3) -> 7 (layer4)
-> avgpool 1x1 -> flatten 512 -> fc 1000.  Output: (1, 1000).
"""
from __future__ import annotations

import torch
from torch import nn

NUM_CLASSES = 1000
IMAGE_SIZE = 224


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with a residual connection; a 1x1 stride-2 shortcut when the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.relu2 = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu1(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out = out + identity
        return self.relu2(out)


class ResNet18(nn.Module):
    """Stem (7x7 conv, BN, ReLU, 3x3 max pool), four stages of two BasicBlocks, global average pool, linear head."""

    def __init__(self, num_classes: int = NUM_CLASSES) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._stage(64, 64, stride=1)
        self.layer2 = self._stage(64, 128, stride=2)
        self.layer3 = self._stage(128, 256, stride=2)
        self.layer4 = self._stage(256, 512, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    @staticmethod
    def _stage(in_channels: int, out_channels: int, stride: int) -> nn.Sequential:
        return nn.Sequential(BasicBlock(in_channels, out_channels, stride), BasicBlock(out_channels, out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def build_model() -> nn.Module:
    """ResNet-18 with 1000 classes, in eval mode (BatchNorm uses its running statistics)."""
    return ResNet18().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    """One 224x224 RGB image."""
    return (torch.randn(1, 3, IMAGE_SIZE, IMAGE_SIZE),)
