"""BERT-base as transformers builds it (12 layers, hidden 768, 12 heads, eval mode), without transformers.

What it exercises: the cost model on an encoder whose every operator is direct: Embedding (word, position, token
type), LayerNorm, Linear, the attention written out (view, permute, transpose, matmul, div, add of the mask,
softmax), eval-mode Dropout (dispatches nothing), GELU, Tensor.contiguous, and the tanh pooler. The default profile
must come to at most 5 person-days.
"""
from __future__ import annotations

import math

import torch
from torch import nn

HIDDEN, HEADS, LAYERS, INTERMEDIATE, VOCAB, POSITIONS = 768, 12, 12, 3072, 30522, 512


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.query, self.key, self.value = (nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
        self.dropout = nn.Dropout(0.1)

    def heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, _ = x.size()
        return x.view(batch, length, HEADS, HIDDEN // HEADS).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(HIDDEN // HEADS) + mask
        context = torch.matmul(self.dropout(scores.softmax(dim=-1)), v)
        context = context.permute(0, 2, 1, 3).contiguous()
        return context.view(context.size(0), context.size(1), HIDDEN)


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attention = SelfAttention()
        self.attention_out = nn.Linear(HIDDEN, HIDDEN)
        self.attention_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.intermediate = nn.Linear(HIDDEN, INTERMEDIATE)
        self.act = nn.GELU()
        self.output = nn.Linear(INTERMEDIATE, HIDDEN)
        self.output_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = self.attention_norm(x + self.dropout(self.attention_out(self.attention(x, mask))))
        return self.output_norm(x + self.dropout(self.output(self.act(self.intermediate(x)))))


class Bert(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.word = nn.Embedding(VOCAB, HIDDEN)
        self.position = nn.Embedding(POSITIONS, HIDDEN)
        self.token_type = nn.Embedding(2, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.pooler = nn.Linear(HIDDEN, HIDDEN)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + self.token_type(torch.zeros_like(input_ids))
        x = self.dropout(self.norm(x))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        return torch.tanh(self.pooler(x[:, 0]))


def build_model() -> nn.Module:
    return Bert().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    return torch.randint(0, VOCAB, (1, 128)), torch.ones(1, 128, dtype=torch.long)
