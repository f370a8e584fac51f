"""A Llama-2-style decoder-only language model in plain PyTorch: tiny by default, 7B- and 70B-shaped on request.

What it exercises: the operators of modern LLMs written out by hand, as many research code bases do, which
torch_npu offers fused replacements for:
- RMSNorm by hand (pow, mean, rsqrt, mul; float32 upcast) -> torch_npu.npu_rms_norm;
- rotary position embeddings by hand (cos/sin caches sliced by the sequence length, rotate_half with slicing,
  torch.cat and negation) -> torch_npu.npu_rotary_mul;
- a SwiGLU MLP (down(silu(gate(x)) * up(x))) -> torch_npu.npu_swiglu;
- grouped-query attention (GQA): key/value heads repeated with expand + reshape, then
  F.scaled_dot_product_attention with a boolean causal mask -> torch_npu.npu_fusion_attention;
- residual additions, an untied LM head, bias-free Linear layers.
The causal mask is a (max_positions, max_positions) boolean buffer sliced to [:seq_len, :seq_len] (and the rotary
cos/sin caches are sliced to [:seq_len]). That breaks torch.fx.symbolic_trace: the tracer hands buffers over as real
tensors, not proxies, and a real tensor cannot be sliced by a proxied sequence length ("TypeError: slice indices
must be integers or None or have an __index__ method", measured on torch 2.13). The meta device, torch.export and
a dispatch recorder all run it.

Sizes (LlamaConfig; parameters counted by hand, see PARAMETER COUNTS below):
- "tiny" (the default): 2 layers, hidden 256, 8 heads, 2 key/value heads, intermediate 688, vocab 32000.
  Runs on the CPU in well under a second.
- "7b": Llama-2-7B: 32 layers, hidden 4096, 32 heads (no GQA), intermediate 11008, vocab 32000, 4096 positions.
- "70b": Llama-2-70B: 80 layers, hidden 8192, 64 heads, 8 key/value heads, intermediate 28672, vocab 32000.
The 7B and 70B shapes need 27 GB and 276 GB of float32 weights: build them only under `with torch.device("meta"):`
(build_model refuses otherwise). Pick the size with build_model_7b() / build_model_70b(), or for `build_model()`
with the environment variable OPASSESS_LLAMA_CONFIG=tiny|7b|70b; OPASSESS_LLAMA_LAYERS=N overrides the layer count
(the benchmark's reduced CI size). example_inputs(): one sequence of SEQ_LEN = 128 token ids, a tuple.

PARAMETER COUNTS (hidden h, intermediate i, layers L, heads n, kv heads k, head_dim d = h/n, vocab V):
  per layer = q h*h + k,v 2*h*(k*d) + o h*h + MLP 3*h*i + 2 norms 2*h; total = L * per layer + 2*V*h + h.
  tiny: 256*256 + 2*256*64 + 256*256 + 3*256*688 + 512 = 692,736 per layer; 2 * 692,736 + 16,384,000 + 256
        = 17,769,728.
  7b:   67,108,864 + 135,266,304 + 8,192 = 202,383,360 per layer; * 32 + 262,144,000 + 4,096 = 6,738,415,616
        (Llama-2-7B's published count).
  70b:  67,108,864 + 16,777,216 + 67,108,864 + 704,643,072 + 16,384 = 855,654,400 per layer;
        * 80 + 524,288,000 + 8,192 = 68,976,648,192 (Llama-2-70B's published count).

Operator calls per forward as written, worked out by hand for L layers (the tiny default has L = 2):
  per layer: nn.Linear 7 (q, k, v, o, gate, up, down); RMSNorm 2 (each: Tensor.to twice, Tensor.pow, Tensor.mean,
  + eps, torch.rsqrt, two multiplications); rotary: 4 multiplications, 2 additions, rotate_half twice (each a
  negation, two slices, torch.cat); repeat_kv on k and v (expand + reshape, skipped when heads == kv heads, as in
  the 7B); F.scaled_dot_product_attention 1; F.silu 1; the SwiGLU multiplication 1; residual additions 2.
  once: nn.Embedding 1, final RMSNorm 1, lm_head nn.Linear 1, mask slice 1, cos/sin slices 2.
  So nn.Linear 7*L + 1, RMSNorm 2*L + 1, SDPA L, F.silu L, torch.cat 2*L, operator.add 4*L + (2*L + 1) in RMSNorm.
ATen ops on the meta device for the tiny default (measured, torch 2.13): aten::mm 15 (= 7*2 + 1), aten::pow 5,
  aten::mean.dim 5, aten::rsqrt 5 (= 2*2 + 1 norms), aten::neg 4, aten::cat 4, aten::silu 2, aten::embedding 1,
  aten::add.Tensor 15 (13 as above + the mask added inside SDPA's math path), aten::mul.Tensor 20 (9 per layer
  + 2 in the final norm). On the meta device F.scaled_dot_product_attention decomposes into math (bmm 4,
  _safe_softmax 2, where 2); on the CPU it reaches aten::_scaled_dot_product_flash_attention_for_cpu.
Output: logits (1, 128, 32000).
"""

import os
from dataclasses import dataclass, replace

import torch
import torch.nn.functional as F
from torch import nn

ENV_CONFIG = "OPASSESS_LLAMA_CONFIG"
ENV_LAYERS = "OPASSESS_LLAMA_LAYERS"
SEQ_LEN = 128
# Above this many float32 bytes of weights, building off the meta device is refused (this machine has 24 GB).
MAX_REAL_WEIGHT_BYTES = 4 * 2**30


@dataclass(frozen=True)
class LlamaConfig:
    """Model hyper-parameters, named as in Hugging Face's LlamaConfig."""

    vocab_size: int = 32000
    hidden_size: int = 256
    intermediate_size: int = 688
    num_hidden_layers: int = 2
    num_attention_heads: int = 8
    num_key_value_heads: int = 2
    max_position_embeddings: int = 512
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def parameter_count(self) -> int:
        """Number of parameters, by the formula in the module docstring."""
        h, kv = self.hidden_size, self.num_key_value_heads * self.head_dim
        per_layer = 2 * h * h + 2 * h * kv + 3 * h * self.intermediate_size + 2 * h
        return self.num_hidden_layers * per_layer + 2 * self.vocab_size * h + h


CONFIGS: dict[str, LlamaConfig] = {
    "tiny": LlamaConfig(),
    "7b": LlamaConfig(
        hidden_size=4096,
        intermediate_size=11008,
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        max_position_embeddings=4096,
    ),
    "70b": LlamaConfig(
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        max_position_embeddings=4096,
    ),
}


class RMSNorm(nn.Module):
    """Root-mean-square layer norm, computed in float32: weight * x / sqrt(mean(x^2) + eps)."""

    def __init__(self, hidden_size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        input_dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(input_dtype)


class RotaryEmbedding(nn.Module):
    """Cos/sin tables for rotary position embeddings, cached for every position and sliced per call."""

    def __init__(self, head_dim: int, max_positions: int, theta: float) -> None:
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)  # (max_positions, head_dim)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def forward(self, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.cos_cached[:seq_len], self.sin_cached[:seq_len]


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) over the two halves of the last dimension."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(batch, kv_heads, seq, head_dim) -> (batch, kv_heads * n_rep, seq, head_dim) for grouped-query attention."""
    if n_rep == 1:
        return x
    b, kv_heads, t, d = x.shape
    return x[:, :, None, :, :].expand(b, kv_heads, n_rep, t, d).reshape(b, kv_heads * n_rep, t, d)


class Attention(nn.Module):
    """Grouped-query self-attention with rotary embeddings, through F.scaled_dot_product_attention."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.num_heads = config.num_attention_heads
        self.num_kv_heads = config.num_key_value_heads
        self.head_dim = config.head_dim
        h = config.hidden_size
        self.q_proj = nn.Linear(h, self.num_heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(h, self.num_kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.num_heads * self.head_dim, h, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        q = self.q_proj(x).view(b, t, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        n_rep = self.num_heads // self.num_kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, h))


class MLP(nn.Module):
    """SwiGLU feed-forward: down(silu(gate(x)) * up(x))."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=False)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    """Pre-norm block: x + attn(norm(x)), then x + mlp(norm(x))."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.self_attn = Attention(config)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaForCausalLM(nn.Module):
    """Token embedding, decoder layers, final RMSNorm and an untied LM head; returns logits."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(config) for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.rotary = RotaryEmbedding(config.head_dim, config.max_position_embeddings, config.rope_theta)
        n = config.max_position_embeddings
        self.register_buffer("causal_mask", torch.ones(n, n, dtype=torch.bool).tril(), persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq_len = input_ids.shape[1]
        mask = self.causal_mask[:seq_len, :seq_len]  # True where a query may attend to a key
        cos, sin = self.rotary(seq_len)
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


def config_from_env() -> LlamaConfig:
    """The config named by OPASSESS_LLAMA_CONFIG (default "tiny"), with OPASSESS_LLAMA_LAYERS applied."""
    name = os.environ.get(ENV_CONFIG, "tiny").strip().lower()
    if name not in CONFIGS:
        raise ValueError(f"{ENV_CONFIG}={name!r}: expected one of {', '.join(CONFIGS)}")
    config = CONFIGS[name]
    layers = os.environ.get(ENV_LAYERS)
    if layers:
        config = replace(config, num_hidden_layers=int(layers))
    return config


def build_model(config: LlamaConfig | None = None) -> nn.Module:
    """A Llama-style model in eval mode; by default the config chosen by the environment (tiny unless set)."""
    config = config or config_from_env()
    weight_bytes = 4 * config.parameter_count()
    if weight_bytes > MAX_REAL_WEIGHT_BYTES and torch.get_default_device().type != "meta":
        raise RuntimeError(
            f"this Llama config has {config.parameter_count():,} parameters ({weight_bytes / 2**30:.0f} GiB in float32);"
            ' build it under `with torch.device("meta"):`'
        )
    return LlamaForCausalLM(config).eval()


def build_model_7b(num_layers: int | None = None) -> nn.Module:
    """Llama-2-7B-shaped (meta device only); num_layers shortens it for quick runs."""
    config = CONFIGS["7b"] if num_layers is None else replace(CONFIGS["7b"], num_hidden_layers=num_layers)
    return build_model(config)


def build_model_70b(num_layers: int | None = None) -> nn.Module:
    """Llama-2-70B-shaped (meta device only); num_layers shortens it for quick runs."""
    config = CONFIGS["70b"] if num_layers is None else replace(CONFIGS["70b"], num_hidden_layers=num_layers)
    return build_model(config)


def example_inputs() -> tuple[torch.Tensor, ...]:
    """One sequence of SEQ_LEN token ids."""
    return (torch.randint(0, CONFIGS["tiny"].vocab_size, (1, SEQ_LEN)),)
