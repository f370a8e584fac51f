"""A DCNv2 block (torchvision DeformConv2d with offsets and a sigmoid mask from two 3x3 convs, 2 offset groups) and
RoIAlign pooling at a quarter scale (7x7, sampling ratio 2, aligned): the two torchvision ops the report sends to
torch_npu.npu_deformable_conv2d and torch_npu.npu_roi_align. Input (1, 8, 32, 32) and two boxes."""
from __future__ import annotations

import torch
from torch import nn
from torchvision.ops import DeformConv2d, roi_align


class DeformRoI(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.offset = nn.Conv2d(8, 2 * 2 * 3 * 3, 3, padding=1)  # 2 offset groups x (y, x) x 3x3
        self.mask = nn.Conv2d(8, 2 * 3 * 3, 3, padding=1)
        self.dcn = DeformConv2d(8, 16, 3, padding=1)

    def forward(self, x: torch.Tensor, boxes: torch.Tensor) -> torch.Tensor:
        y = self.dcn(x, self.offset(x), torch.sigmoid(self.mask(x)))
        return roi_align(y, boxes, output_size=(7, 7), spatial_scale=0.25, sampling_ratio=2, aligned=True)


def build_model() -> nn.Module:
    return DeformRoI().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    boxes = torch.tensor([[0, 1.0, 1.0, 20.0, 20.0], [0, 4.0, 2.0, 30.0, 28.0]])
    return (torch.randn(1, 8, 32, 32), boxes)
