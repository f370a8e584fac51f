"""A bf16 LLM-style block built for issue 11: Linear, F.silu, Tensor.neg, torch.matmul, a weight-normed Conv1d
(wav2vec2's positional conv), Tensor.new_ones, and a mixture-of-experts block whose experts run through
torch._grouped_mm, routed by softmax + top-k.

Expected on Atlas A2 with --dtype bfloat16 (kernel facts: aclnnAddmm, aclnnSilu, aclnnNeg, aclnnMatmul take bf16 on
A2): everything direct; on 910A the bf16 Linear is flagged with fp16-with-loss-scaling advice.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Experts(nn.Module):
    def __init__(self, groups: int = 2, dim: int = 16) -> None:
        super().__init__()
        self.router = nn.Linear(dim, groups)
        self.w = nn.Parameter(torch.randn(groups, dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = F.softmax(self.router(x), dim=-1)
        weights, _ = torch.topk(scores, 1, dim=-1)
        offs = torch.tensor([x.shape[0] // 2, x.shape[0]], dtype=torch.int32, device=x.device)
        return torch._grouped_mm(x, self.w.transpose(-2, -1), offs=offs) * weights


class Block(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(dim, dim, 3, padding=1), dim=2)
        self.experts = Experts(dim=dim)

    def forward(self, x: torch.Tensor):
        y = -F.silu(self.proj(x))
        scores = torch.matmul(y, y.transpose(0, 1))
        z = self.conv(x.transpose(0, 1).unsqueeze(0))
        return scores, z, self.experts(y), x.new_ones(3)


def build_model() -> nn.Module:
    return Block()


def example_inputs():
    return (torch.randn(8, 16),)
