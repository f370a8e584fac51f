"""The call a model finding renders from the captured signature (findings/calls.py, advice/captured.py): the GQA
head counts before repeat_kv, and a documented constraint of npu_fusion_attention the call fails, named."""
from __future__ import annotations

import ast
import textwrap

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess


def _kwargs(call: str) -> dict[str, str]:
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call)
    return {k.arg: ast.unparse(k.value) for k in node.value.keywords if k.arg}


def test_llama_like_sdpa_call_takes_the_kv_heads_before_repeat_kv():
    assessment = assess(ScanOptions(target="examples/llama_like.py", project_scan=False))
    attention = next(f for f in assessment.findings if f.kind == "attention")
    kwargs = _kwargs(attention.call)
    assert (kwargs["head_num"], kwargs["input_layout"], kwargs["atten_mask"]) == ("8", "'BNSD'", "~attn_mask")
    assert attention.call_notes == ("k and v keep their 2 heads: no repeat_kv before the call",)


def test_a_head_dim_over_the_documented_range_is_named(tmp_path):
    (tmp_path / "wide.py").write_text(textwrap.dedent("""\
        import torch
        import torch.nn.functional as F

        class Wide(torch.nn.Module):
            def forward(self, q, k, v):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def build_model():
            return Wide()

        def example_inputs():
            return tuple(torch.randn(1, 2, 16, 1024) for _ in range(3))
        """))
    assessment = assess(ScanOptions(target=str(tmp_path / "wide.py"), project_scan=False))
    attention = next(f for f in assessment.findings if f.kind == "attention")
    kwargs = _kwargs(attention.call)
    assert (kwargs["sparse_mode"], kwargs["scale"]) == ("2", "0.03125")  # is_causal: top-left; 1024 ** -0.5
    assert attention.call_notes[0] == ("fails: head dim 1024: the op documents head dim 1-768 "
                                       "(third_party_kernel_libs.tsv:3 flash_attn (direct calls))")
    assert any(n.startswith("first: atten_mask = torch.triu(") for n in attention.call_notes)


ROTARY = """\
import torch


class Rope(torch.nn.Module):
    def forward(self, x, cos, sin):
        if {halves}:
            x1, x2 = torch.chunk(x, 2, dim=-1)  # gpt-oss's _apply_rotary_emb
        else:
            x1, x2 = x[..., 0::2], x[..., 1::2]  # DeepSeek-V3's rope_interleave
        return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def build_model():
    return Rope()


def example_inputs():
    return torch.randn(1, 4, 16, 16), torch.randn(1, 1, 16, 8), torch.randn(1, 1, 16, 8)
"""


def test_rotary_pairs_from_a_chunk_are_the_two_halves_and_get_npu_rotary_mul_half(tmp_path):
    """gpt-oss rotates the two halves of x (torch.chunk) with cos/sin of half the head dim: npu_rotary_mul in 'half'
    mode with cos/sin repeated to the full head dim, not npu_interleave_rope (whose even/odd lanes it does not
    take); lanes taken by slicing stay npu_interleave_rope."""
    findings = {}
    for halves in (True, False):
        (tmp_path / f"rope_{halves}.py").write_text(ROTARY.format(halves=halves))
        assessment = assess(ScanOptions(target=str(tmp_path / f"rope_{halves}.py"), project_scan=False))
        findings[halves] = next(f for f in assessment.findings if f.kind == "rotary")
    half = findings[True]
    assert half.call == 'torch_npu.npu_rotary_mul(x, r1=cos, r2=sin, rotary_mode="half")'
    assert half.npu_api == "torch_npu.npu_rotary_mul"
    assert half.call_notes == ("first: cos, sin = torch.cat((cos, cos), dim=-1), torch.cat((sin, sin), dim=-1)",)
    lanes = findings[False]
    assert lanes.call == "torch_npu.npu_interleave_rope(x, cos=cos, sin=sin)"
    assert lanes.npu_api == "torch_npu.npu_interleave_rope"
