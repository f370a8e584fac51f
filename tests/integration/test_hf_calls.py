"""The exact call on the real transformers implementations (small configs built here, random weights): each
replacement finding writes its torch_npu call out from what the capture saw (opassess/advice), the 2026 variants
come with their parameters (gpt-oss's sliding window and sinks, DeepSeek-V3's rotary on even/odd lanes), and
Mamba's slow path is named for what it is (a sequential selective-scan loop), without the SwiGLU and TransData
advice its scan-output gate and its 3-D transposes used to get."""
from __future__ import annotations

import ast

import pytest

pytest.importorskip("transformers")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from tests.integration.support import causal_lm_file  # noqa: E402

TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)


def _kwargs(call: str) -> dict[str, str]:
    node = ast.parse(call, mode="eval").body
    node = node.value if isinstance(node, ast.Subscript) else node
    assert isinstance(node, ast.Call)
    return {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg}


def _scan(tmp_path, config: str, settings: dict, attention: str = "sdpa"):
    return assess(ScanOptions(target=causal_lm_file(tmp_path, config, settings, attention), project_scan=False))


def test_gpt_oss_sliding_layers_and_sinks_get_their_window_and_sink_in_the_call(tmp_path):
    assessment = _scan(tmp_path, "GptOssConfig", dict(TINY, num_local_experts=4, num_experts_per_tok=2, head_dim=16,
                                                      sliding_window=8), "eager")
    variants = {f.title.split(" (")[0]: f for f in assessment.findings if f.kind == "attention-variant"}
    band = variants["sliding-window attention mask"]
    assert "band of 8 positions, 1x" in band.title and band.metrics["window"] == 8  # layer 0 slides, layer 1 is full
    call = _kwargs(band.call)
    # kv_idx > q_idx - 8 keeps the query and the 7 keys before it (transformers gives flash-attn window_size 7 for it)
    assert (call["sparse_mode"], call["pre_tockens"], call["next_tockens"]) == ("4", "7", "0")
    assert (call["head_num"], call["input_layout"], call["scale"], call["sink"]) == ("4", "'BNSD'", "0.25", "sinks")
    assert any(n.startswith("first: atten_mask = torch.triu(torch.ones(2048, 2048") for n in band.call_notes)
    sinks = variants["attention with sinks"]
    assert _kwargs(sinks.call)["sink"] == "sinks" and sinks.metrics["sliding_layers"] == 1
    # gpt-oss rotates the two halves (torch.chunk(x, 2, dim=-1)) with cos/sin of half the head dim
    rotary = next(f for f in assessment.findings if f.kind == "rotary")
    assert rotary.call == 'torch_npu.npu_rotary_mul(x, r1=cos, r2=sin, rotary_mode="half")'
    assert rotary.call_notes == ("first: cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)",)


def test_deepseek_v3_rotary_pairs_mla_and_attention_call(tmp_path):
    assessment = _scan(tmp_path, "DeepseekV3Config", dict(
        TINY, num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
        moe_intermediate_size=32, first_k_dense_replace=1, kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8,
        qk_nope_head_dim=8, v_head_dim=16, rope_interleave=True))
    by_kind: dict[str, list] = {}
    for f in assessment.findings:
        by_kind.setdefault(f.kind, []).append(f)
    rotary = by_kind["rotary"][0]
    assert "x[..., 0::2], x[..., 1::2]" in rotary.title
    assert rotary.call == "torch_npu.npu_interleave_rope(x, cos=cos, sin=sin)"
    assert any("multi-head latent attention" in f.title for f in by_kind["attention-variant"])
    attention = _kwargs(by_kind["attention"][0].call)
    # q (1, 4, 16, 16): 4 heads of 16 (qk_nope 8 + rope 8), scale 16 ** -0.5 as the capture passed it
    assert (attention["head_num"], attention["input_layout"], attention["scale"]) == ("4", "'BNSD'", "0.25")
    assert attention["atten_mask"] == "~attn_mask"  # SDPA's bool mask keeps True; the NPU's masks True
    assert by_kind["attention"][0].call_notes == ()  # head dim 16, 4 heads, float32: every documented constraint met
    rms = by_kind["rmsnorm"][0]
    assert _kwargs(rms.call) == {"gamma": "weight", "epsilon": "1e-06"}


def test_mamba_slow_path_names_the_scan_loop_without_swiglu_or_transdata(tmp_path):
    assessment = _scan(tmp_path, "MambaConfig", dict(vocab_size=128, hidden_size=32, num_hidden_layers=2,
                                                     state_size=4, expand=2, conv_kernel=4, use_mambapy=False),
                       "eager")
    kinds = [f.kind for f in assessment.findings]
    assert "swiglu" not in kinds  # scan_output * silu(z): the other operand is the scan's output, not a projection
    assert "layout-churn" not in kinds  # [B, L, D] <-> [B, D, L] around the conv1d: plain transposes
    loop = next(f for f in assessment.findings if f.title.startswith("sequential selective-scan loop"))
    # 16 tokens: 16 steps per layer, one loop per layer; 4 slices and one C[t] matmul per step
    assert "16 steps, 2x" in loop.title and loop.metrics["steps"] == 16
    assert "32 matmuls" in loop.title and "third_party_kernel_libs.tsv:14 mamba_ssm" in loop.title
    assert "selective_scan" in loop.title  # the route the facts give (no fused NPU kernel; the Triton SSD ports)
    # the effect holds for this finding too: no fused NPU op exists for the scan, so it does not say one does
    assert "no NPU kernel found for selective_scan_cuda" in loop.title
    assert "a fused NPU op exists" not in loop.effect and "else a kernel to write" in loop.effect
