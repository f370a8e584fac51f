"""A small GPT-2-style decoder-only language model (6 blocks, d_model 384, 6 heads, vocab 8192, context 256).

What it exercises: nn.Embedding (tokens and learned positions), pre-norm LayerNorm, a fused QKV Linear split with
Tensor.split / view / transpose, causal self-attention through F.scaled_dot_product_attention(is_causal=True)
(one op that torch_npu takes whole, as npu_fusion_attention), an MLP with nn.GELU(approximate="tanh"), residual
additions (`x = x + ...`, operator.add), nn.Dropout (identity in eval mode, still present in the graph), a final
LayerNorm and a language-model head whose weight is tied to the token embedding.

The inputs are keyword arguments, as with Hugging Face models: {"input_ids": (2, 64) int64, "use_cache": False}.
With use_cache=True the forward also returns each block's (key, value) tensors.

Operator counts, worked out by hand (one forward, use_cache=False, N_LAYER = 6):
  - torch.nn.Embedding                       2   (wte, wpe)
  - torch.nn.LayerNorm                      13   = 2 per block * 6 + ln_f
  - torch.nn.Linear                         25   = 4 per block (c_attn, c_proj, c_fc, mlp c_proj) * 6 + lm_head
  - F.scaled_dot_product_attention           6
  - torch.nn.GELU                            6
  - torch.nn.Dropout                        13   = drop after the embeddings + 2 per block (attn.resid_dropout,
                                                   mlp.dropout) * 6
  - operator.add                            13   = tok + pos embeddings + 2 residuals per block * 6
  - Tensor.view 24 and Tensor.transpose 24   = 4 per block (q, k, v, merged heads) * 6
  - Tensor.split 6, Tensor.contiguous 6, Tensor.size 7 (x.size() per block + input_ids.size(1)), torch.arange 1
  plus Python arithmetic on sizes in an FX graph (c // n_head, getitem).
Shapes: logits (2, 64, 8192); parameters 13,891,584 (wte 3,145,728 + wpe 98,304 + 6 blocks * 1,774,464 + ln_f 768).

Capture notes: torch.fx.symbolic_trace(model) fails on `if use_cache:` (the default makes use_cache a Proxy);
symbolic_trace(model, concrete_args={"use_cache": False}) traces. On the meta device the
F.scaled_dot_product_attention call decomposes into math (tril, where, bmm, _safe_softmax); on the CPU it
reaches aten::_scaled_dot_product_flash_attention_for_cpu. Neither is what an NPU would see.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB_SIZE = 8192
N_POSITIONS = 256
N_LAYER = 6
N_HEAD = 6
N_EMBD = 384
DROPOUT = 0.1
BATCH, SEQ_LEN = 2, 64


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with one fused QKV projection (GPT-2's c_attn)."""

    def __init__(self, n_embd: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.n_head = n_head
        self.n_embd = n_embd
        self.dropout = dropout
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.resid_dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        # (b, t, c) -> (b, heads, t, head_dim)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y)), (k, v)


class MLP(nn.Module):
    """Position-wise feed-forward: Linear 4x up, tanh-approximated GELU, Linear down, dropout."""

    def __init__(self, n_embd: int, dropout: float) -> None:
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.gelu = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * n_embd, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, n_embd: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, dropout)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = MLP(n_embd, dropout)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        a, present = self.attn(self.ln_1(x))
        x = x + a
        x = x + self.mlp(self.ln_2(x))
        return x, present


class GPTLanguageModel(nn.Module):
    """Token + position embeddings, N pre-norm blocks, final LayerNorm, LM head tied to the token embedding."""

    def __init__(
        self,
        vocab_size: int = VOCAB_SIZE,
        n_positions: int = N_POSITIONS,
        n_layer: int = N_LAYER,
        n_head: int = N_HEAD,
        n_embd: int = N_EMBD,
        dropout: float = DROPOUT,
    ) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.wpe = nn.Embedding(n_positions, n_embd)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList(Block(n_embd, n_head, dropout) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying, as in GPT-2
        self.apply(self._init_weights)
        # GPT-2's scaled init of the residual projections: std 0.02 / sqrt(2 * n_layer)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, input_ids: torch.Tensor, use_cache: bool = False):
        """Logits (batch, seq, vocab); with use_cache=True also a tuple of per-block (key, value) tensors."""
        t = input_ids.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(pos))
        presents = []
        for block in self.h:
            x, present = block(x)
            presents.append(present)
        logits = self.lm_head(self.ln_f(x))
        if use_cache:
            return logits, tuple(presents)
        return logits


def build_model() -> nn.Module:
    """The 6-block GPT model in eval mode (13,891,584 parameters, the tied head counted once)."""
    return GPTLanguageModel().eval()


def example_inputs() -> dict[str, object]:
    """Keyword arguments: two sequences of 64 token ids, no key/value cache."""
    return {"input_ids": torch.randint(0, VOCAB_SIZE, (BATCH, SEQ_LEN)), "use_cache": False}
