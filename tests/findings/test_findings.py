"""Findings: each finding fires on a purpose-built model and stays silent on a near miss, for every capture method.

Expected values are worked out by hand in the model files' docstrings (tests/models/findings_*.py) and repeated
in the comments here. Node names differ between capture methods (fx "conv1", dispatch "conv2d_0", export
"conv2d"), so chains are checked through the nodes' operator keys and module paths.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from opassess.classify import classify
from opassess.errors import KnowledgeBaseError
from opassess.findings import find_findings, load_patterns
from opassess.kb import load_kb
from opassess.options import ScanOptions
from opassess.pipeline.capture import scan_inventory
from opassess.resources import data_path
from tests.support import EXAMPLES, MODELS

ALL_METHODS = ("fx", "dispatch", "export")
_SCANS: dict = {}


@pytest.fixture(scope="module")
def kb():
    return load_kb()


def scan(path: Path, method: str):
    """One capture per (model, method) for the whole module: tracing is the slow part."""
    key = (str(path), method)
    if key not in _SCANS:
        _SCANS[key] = scan_inventory(ScanOptions(target=str(path), methods=(method,)))
        assert _SCANS[key].capture.method == method
    return _SCANS[key]


def findings_of(path: Path, method: str, kb, **options):
    inventory = scan(path, method)
    return inventory, find_findings(inventory, kb, **options)


def one(findings, kind: str, title_prefix: str):
    matched = [f for f in findings if f.kind == kind and f.title.startswith(title_prefix)]
    assert len(matched) == 1, [f.title for f in findings]
    return matched[0]


def nodes_of(inventory, finding):
    by_name = {n.name: n for n in inventory.capture.nodes}
    return [by_name[name] for name in finding.nodes]


# ----------------------------------------------------------------------------- fusable chains


@pytest.mark.parametrize("method", ALL_METHODS)
def test_fusable_chains_fire_on_conv_bn_relu_ffn_and_add_norm(method, kb):
    inventory, findings = findings_of(MODELS / "findings_fusion.py", method, kb)
    fusions = [f for f in findings if f.kind == "fusion"]
    # conv1 -> bn1 -> relu1; conv2 -> bn2; fc1 -> gelu -> (dropout) -> fc2; add -> norm: four, and no Linear +
    # activation (fc1 + gelu is inside the FFN, which wins).
    assert len(fusions) == 4, [f.title for f in fusions]

    cbr = one(fusions, "fusion", "Conv + BatchNorm + activation")
    assert [n.module_path for n in nodes_of(inventory, cbr)] == ["conv1", "bn1", "relu1"]
    assert cbr.ops == ("torch.nn.Conv2d", "torch.nn.BatchNorm2d", "torch.nn.ReLU")
    assert cbr.npu_api is None and cbr.metrics["occurrences"] == 1
    assert cbr.source == "tests/models/findings_fusion.py:43"

    cb = one(fusions, "fusion", "Conv + BatchNorm chain")
    assert [n.module_path for n in nodes_of(inventory, cb)] == ["conv2", "bn2"]

    ffn = one(fusions, "fusion", "Linear + activation + Linear")
    ffn_nodes = nodes_of(inventory, ffn)
    assert [n.module_path for n in ffn_nodes if n.kind == "module"] == ["fc1", "fc2"]  # the dropout is looked through
    assert len(ffn_nodes) == 3 and ffn.npu_api == "torch_npu.npu_ffn"

    add_norm = one(fusions, "fusion", "Residual Add + LayerNorm")
    assert [n.key for n in nodes_of(inventory, add_norm)][1] == "torch.nn.LayerNorm"
    assert add_norm.npu_api == "torch_npu.npu_add_layer_norm"
    assert all(f.effect.startswith("performance.fusion") for f in fusions)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_fusable_chains_do_not_fire_on_near_misses(method, kb):
    # BN before conv, conv -> relu without BN, a conv output used twice, a Linear output used twice, Linear ->
    # Dropout -> Linear, a scalar add before LayerNorm, and conv3/bn3 adjacent in node order but not connected.
    _, findings = findings_of(MODELS / "findings_fusion_none.py", method, kb)
    assert [f.title for f in findings if f.kind == "fusion"] == []


def test_repeated_blocks_give_one_finding_with_a_count(kb):
    # ResNet-18 (examples/resnet_like.py), by hand: Conv + BN + ReLU = the stem + conv1 of each of the 8 blocks = 9;
    # Conv + BN alone = conv2 of each block (its BN feeds the residual add) 8 + the 3 downsample convs = 11.
    # 9 + 11 = 20 = every Conv2d.
    _, findings = findings_of(EXAMPLES / "resnet_like.py", "fx", kb)
    assert one(findings, "fusion", "Conv + BatchNorm + activation").metrics["occurrences"] == 9
    assert one(findings, "fusion", "Conv + BatchNorm chain").metrics["occurrences"] == 11
    assert "(9x)" in one(findings, "fusion", "Conv + BatchNorm + activation").title


# ----------------------------------------------------------------------------- attention


@pytest.mark.parametrize("method", ALL_METHODS)
def test_attention_by_hand_and_through_sdpa_fire_with_layout(method, kb):
    inventory, findings = findings_of(MODELS / "findings_attention.py", method, kb)
    manual = one(findings, "attention", "Attention written out by hand")
    ops = [n.key.rsplit(".", 1)[-1].rsplit("::", 1)[-1] for n in nodes_of(inventory, manual)]
    assert ops == ["matmul", "div", "masked_fill", "softmax", "matmul"]  # dropout looked through
    # q is transpose(1, 2) of a (2, 16, 4, 8) view: BSND takes the view; 4 heads; masked_fill keeps its mask.
    assert "input_layout BSND, head_num 4" in manual.title and "masked_fill" in manual.title
    assert manual.npu_api == "torch_npu.npu_fusion_attention"

    sdpa = one(findings, "attention", "F.scaled_dot_product_attention")
    assert len(sdpa.nodes) == 1 and "input_layout BSND, head_num 4;" in sdpa.title and "causal" in sdpa.title
    assert "GQA" not in manual.title + sdpa.title  # k and v have all 4 heads: nothing repeated


def test_attention_layout_is_bnsd_when_the_query_is_not_a_plain_transpose(kb):
    # Llama: q goes through the rotary arithmetic after its transpose, so the (1, 8, 128, 32) query is BNSD;
    # 2 layers, 8 heads; the causal mask is a bool buffer (True keeps), which atten_mask inverts; 2 kv heads are
    # repeated to 8 by repeat_kv (expand + reshape), which npu_fusion_attention does not need.
    _, findings = findings_of(EXAMPLES / "llama_like.py", "dispatch", kb)
    sdpa = one(findings, "attention", "F.scaled_dot_product_attention")
    assert "(2x)" in sdpa.title and "input_layout BNSD, head_num 8, GQA" in sdpa.title and "invert" in sdpa.title


@pytest.mark.parametrize("method", ALL_METHODS)
def test_gqa_hint_compares_head_counts_not_the_masks_expand(method, kb):
    # Whisper-like: the additive mask is expanded (1, 1, 8, 8) -> (2, 1, 8, 8) into SDPA; q, k, v have 4 heads.
    _, findings = findings_of(MODELS / "findings_attention_expanded_mask.py", method, kb)
    sdpa = one(findings, "attention", "F.scaled_dot_product_attention")
    assert "head_num 4" in sdpa.title and "additive float mask" in sdpa.title
    assert "GQA" not in sdpa.title


@pytest.mark.parametrize("method", ALL_METHODS)
def test_attention_does_not_fire_without_scores_softmax_and_values(method, kb):
    # q @ k^T -> softmax -> sum; Linear -> softmax -> topk; matmul -> relu -> matmul.
    _, findings = findings_of(MODELS / "findings_attention_none.py", method, kb)
    assert [f.title for f in findings if f.kind == "attention"] == []


# ----------------------------------------------------------------------------- RMSNorm, rotary, SwiGLU


@pytest.mark.parametrize("method", ALL_METHODS)
def test_llm_blocks_written_by_hand_fire(method, kb):
    inventory, findings = findings_of(MODELS / "findings_llm.py", method, kb)
    base = lambda f: [n.key.rsplit(".", 1)[-1].rsplit("::", 1)[-1] for n in nodes_of(inventory, f)]  # noqa: E731

    rms = one(findings, "rmsnorm", "RMSNorm written out by hand")
    assert base(rms) == ["pow", "mean", "add", "rsqrt", "mul", "mul"]  # x.float() looked through; * weight last
    assert rms.npu_api == "torch_npu.npu_rms_norm"

    rotary = one(findings, "rotary", "Rotary embedding by hand, rotate_half")
    assert base(rotary)[1:] == ["neg", "cat", "mul", "add"] and rotary.npu_api == "torch_npu.npu_rotary_mul"

    swiglu = one(findings, "swiglu", "SwiGLU")
    assert base(swiglu) == ["silu", "mul"] and swiglu.npu_api == "torch_npu.npu_swiglu"
    assert "before its chunk" in swiglu.title  # w12(x).chunk(2): npu_swiglu takes w12's output whole
    geglu = one(findings, "swiglu", "GeGLU")
    assert base(geglu) == ["gelu", "mul"] and geglu.npu_api == "torch_npu.npu_geglu"
    assert "two projections" in geglu.title  # gate(y) and up(y)
    # gate -> gelu is a Linear + activation too, but the GeGLU takes it: no separate fusion finding.
    assert not [f for f in findings if f.title.startswith("Linear + activation chain")]

    add_rms = one(findings, "fusion", "Residual Add + RMSNorm")
    assert add_rms.npu_api == "torch_npu.npu_add_rms_norm"


@pytest.mark.parametrize("method", ALL_METHODS)
def test_llm_look_alikes_do_not_fire(method, kb):
    # LayerNorm by hand (pow on x - mean), a half swap without negation, silu without a gate.
    _, findings = findings_of(MODELS / "findings_llm_none.py", method, kb)
    assert [f.title for f in findings if f.kind in ("rmsnorm", "rotary", "swiglu")] == []


# ----------------------------------------------------------------------------- layout churn


@pytest.mark.parametrize("method", ALL_METHODS)
def test_layout_churn_counts_conversions_on_the_main_path(method, kb):
    inventory, findings = findings_of(MODELS / "findings_layout.py", method, kb)
    churn = one(findings, "layout-churn", "3 NCHW/NHWC layout conversions")
    # permute(0, 2, 3, 1) after dwconv, permute(0, 3, 1, 2) after pw2, and the contiguous copy of the latter.
    assert churn.metrics == {"conversions": 3, "permutes": 2, "copies": 1}
    nodes = nodes_of(inventory, churn)
    assert [n.source.rsplit(":", 1)[1] for n in nodes] == ["29", "31", "31"]
    # the position table's permute (line 28) is a parameter reformatted, not the activations: not counted
    first_permute = next(n for n in inventory.capture.nodes if "permute" in n.key)
    assert first_permute.source.endswith(":28") and first_permute.name not in churn.nodes
    assert churn.effect.startswith("performance.memory_layout")


@pytest.mark.parametrize("method", ALL_METHODS)
def test_layout_churn_ignores_attention_head_transposes(method, kb):
    # 9 transposes: (0, 2, 1, 3) head splits/merges and k.transpose(-2, -1); none moves a channel axis.
    _, findings = findings_of(MODELS / "findings_attention.py", method, kb)
    assert [f.title for f in findings if f.kind == "layout-churn"] == []


# ----------------------------------------------------------------------------- dynamic shapes


@pytest.mark.parametrize("method", ("fx", "dispatch"))  # torch.export refuses data-dependent sizes
def test_dynamic_shapes_fire_on_data_dependent_ops(method, kb):
    inventory, findings = findings_of(MODELS / "findings_dynamic.py", method, kb)
    assert inventory.capture.device == "cpu"  # the meta device cannot size nonzero's output
    dynamic = {f.ops[0]: f for f in findings if f.kind == "dynamic-shape"}
    unique_key = next(n.key for n in inventory.capture.nodes if any(c.op == "aten::_unique2" for c in n.aten))
    assert set(dynamic) == {"Tensor.__getitem__", "torch.nonzero", "torch.masked_select", unique_key}
    # downstream, by hand: h[h > 0] -> sum -> add -> add_1 -> add_2 (4); nonzero -> float -> sum -> add ->
    # add_1 -> add_2 (5); masked_select -> sum -> add_1 -> add_2 (3); unique -> float -> sum -> add_2 (3).
    assert {op: f.metrics["downstream"] for op, f in dynamic.items()} == {
        "Tensor.__getitem__": 4, "torch.nonzero": 5, "torch.masked_select": 3, unique_key: 3}
    assert all(f.npu_api is None and f.effect.startswith("performance.pipeline") for f in dynamic.values())


def test_dynamic_shapes_fire_on_host_syncs_and_shape_branches(kb):
    # tests/models/data_dependent.py: `if x.sum() > 0:` reads the value on the host (Tensor.__bool__, dispatching
    # aten::_local_scalar_dense); only the CPU dispatch capture runs it.
    _, findings = findings_of(MODELS / "data_dependent.py", "dispatch", kb)
    sync = one(findings, "dynamic-shape", "Tensor.__bool__: reads a tensor value on the host")
    assert sync.ops == ("Tensor.__bool__",) and sync.source == "tests/models/data_dependent.py:35"
    # tests/models/data_dependent_shape.py: `if x.shape[1] > 8:` stops FX but runs on the meta device.
    inventory = scan_inventory(ScanOptions(target=str(MODELS / "data_dependent_shape.py")))
    assert inventory.capture.device == "meta" and inventory.capture.attempts[0].method == "fx"
    branch = one(find_findings(inventory, kb), "dynamic-shape", "forward() branches on an input shape")
    assert branch.nodes == () and branch.source.startswith("tests/models/data_dependent_shape.py:")


def test_an_aclop_only_kernel_fed_a_data_dependent_size_runs_slowly(kb):
    # tests/models/findings_dynamic_aclop.py: x[mask] -> nn.LSTMCell; aten::lstm_cell has only the aclop path at
    # torch 2.13 (npu_aten_ops: aclnn none), so each new batch size compiles it online. The cell stays direct.
    inventory, findings = findings_of(MODELS / "findings_dynamic_aclop.py", "fx", kb)
    slow = one(findings, "dynamic-shape", "torch.nn.LSTMCell runs aten::lstm_cell through CANN's aclop path only")
    assert "from Tensor.__getitem__" in slow.title and slow.ops == ("torch.nn.LSTMCell",)
    assert slow.effect.startswith("performance.pipeline") and slow.metrics == {"occurrences": 1}
    (cell,) = [c for c in classify(inventory, kb) if c.operator.key == "torch.nn.LSTMCell"]
    assert cell.category == "direct"


def test_a_value_branch_is_not_a_shape_branch(kb):
    # data_dependent.py's `if` is on a value: the meta device fails too and the CPU runs it: no shape finding.
    inventory = scan_inventory(ScanOptions(target=str(MODELS / "data_dependent.py")))
    assert inventory.capture.device == "cpu"
    assert not [f for f in find_findings(inventory, kb) if f.title.startswith("forward() branches")]


@pytest.mark.parametrize("method", ALL_METHODS)
def test_dynamic_shapes_do_not_fire_on_static_indexing(method, kb):
    # slicing, index_select with an int64 index, three-argument torch.where, a bool mask multiplied in.
    _, findings = findings_of(MODELS / "findings_static.py", method, kb)
    assert [f.title for f in findings if f.kind == "dynamic-shape"] == []


# ----------------------------------------------------------------------------- mixed precision


def test_mixed_precision_flags_ops_whose_kernel_lacks_the_target_dtype(kb):
    # The API page (npu_native_api_support, torch 2.13) documents F.silu for fp16 and fp32 only, and nn.Linear's
    # input likewise; torch.rsqrt lists bf16. The kernel facts outrank it (issue 11): aclnnSilu and aclnnAddmm take
    # bf16 on Atlas A2 and exclude it on the Atlas training series (910). So bf16 flags silu and Linear on 910 only.
    fact = kb.api("torch.nn.functional.silu").limitation.allowed_dtypes("Atlas A2")
    assert "float16" in fact and "bfloat16" not in fact
    _, on_a2 = findings_of(MODELS / "findings_llm.py", "fx", kb, dtype="bfloat16")
    on_a2_ops = {f.ops[0] for f in on_a2 if f.kind == "mixed-precision"}
    assert not on_a2_ops & {"torch.nn.functional.silu", "torch.nn.Linear"}
    _, bf16 = findings_of(MODELS / "findings_llm.py", "fx", kb, dtype="bfloat16", product="Atlas training series")
    flagged = {f.ops[0]: f for f in bf16 if f.kind == "mixed-precision"}
    assert "torch.nn.functional.silu" in flagged and "torch.nn.Linear" in flagged
    assert "torch.rsqrt" not in flagged
    assert flagged["torch.nn.Linear"].metrics["occurrences"] == 5  # w12, w3, q, gate, up
    assert "not bfloat16" in flagged["torch.nn.functional.silu"].title

    _, fp16 = findings_of(MODELS / "findings_llm.py", "fx", kb, dtype="float16")
    assert "torch.nn.functional.silu" not in {f.ops[0] for f in fp16 if f.kind == "mixed-precision"}


def test_mixed_precision_is_silent_without_a_target_dtype_or_float64(kb):
    _, findings = findings_of(MODELS / "findings_llm.py", "fx", kb)
    assert [f.title for f in findings if f.kind == "mixed-precision"] == []


def test_mixed_precision_ignores_integer_index_operands(kb):
    # nn.Embedding's dtype rule lists int32/int64 for its ids: no floating type, so not a bfloat16 gap.
    _, findings = findings_of(EXAMPLES / "transformer_lm.py", "fx", kb, dtype="bfloat16")
    assert "torch.nn.Embedding" not in {f.ops[0] for f in findings if f.kind == "mixed-precision"}


def test_float64_is_flagged_anywhere_without_a_target_dtype(kb):
    # tests/models/float64.py: 3 Linear and 2 Tanh calls, all float64.
    _, findings = findings_of(MODELS / "float64.py", "fx", kb)
    double = {f.ops[0]: f.metrics["occurrences"] for f in findings if f.kind == "mixed-precision"}
    assert double == {"torch.nn.Linear": 3, "torch.nn.Tanh": 2}


# ----------------------------------------------------------------------------- compute weight


@pytest.mark.parametrize("method", ALL_METHODS)
def test_compute_ranks_operators_by_flops_with_formulas_where_the_trace_has_none(method, kb):
    _, findings = findings_of(MODELS / "findings_fusion.py", method, kb)
    compute = [f for f in findings if f.kind == "compute"]
    conv = compute[0]
    # conv1, conv2: 2 * 256 outputs * (4 channels * 3 * 3) = 18,432 each; Linear 64 + 128 + 128 + 48 = 368.
    assert conv.ops == ("torch.nn.Conv2d",)
    assert conv.metrics["flops"] == 36_864
    assert conv.metrics["flops_share"] == pytest.approx(36_864 / 37_232)
    # torch.export leaves FLOPs at 0: the formulas fill both convolutions in.
    assert conv.metrics["estimated_nodes"] == (2 if method == "export" else 0)
    assert conv.effect.startswith("impact only")


def test_compute_does_not_list_negligible_operators(kb):
    # torch.flatten moves 2 * 4 floats = 32 bytes and computes nothing: under 1% of either total.
    _, findings = findings_of(MODELS / "findings_fusion.py", "fx", kb)
    listed = {f.ops[0] for f in findings if f.kind == "compute"}
    assert "torch.flatten" not in listed and "torch.nn.AdaptiveAvgPool2d" not in listed
    assert len(listed) <= 2 * load_patterns().compute_top


def test_attention_flops_formula_matches_the_flop_counter(kb):
    # On the meta device SDPA decomposes into two bmm the flop counter sees: 2 * (2*4) * 16 * 16 * 8 * 2 = 65,536.
    # On export the trace has no count and the formula must give the same.
    fx = one(findings_of(MODELS / "findings_attention.py", "fx", kb)[1], "compute",
             "torch.nn.functional.scaled_dot_product_attention")
    export = one(findings_of(MODELS / "findings_attention.py", "export", kb)[1], "compute",
                 "aten::scaled_dot_product_attention")
    assert fx.metrics["flops"] == export.metrics["flops"] == 65_536


# ----------------------------------------------------------------------------- patterns.toml


def test_shipped_patterns_name_real_operators_and_npu_apis(kb):
    book = load_patterns()
    for role in book.roles.values():
        for op in role.ops:
            if op.startswith("aten::"):
                assert hasattr(torch.ops.aten, op[len("aten::"):]), f"roles.{role.name}: {op}"
            elif op.startswith("torch.nn.functional."):
                assert hasattr(torch.nn.functional, op.rsplit(".", 1)[1]), f"roles.{role.name}: {op}"
            elif op.startswith("torch.nn."):
                assert hasattr(torch.nn, op.rsplit(".", 1)[1]), f"roles.{role.name}: {op}"
            else:
                assert op.startswith("Tensor.") and hasattr(torch.Tensor, op[len("Tensor."):]), f"{role.name}: {op}"
    for pattern in book.patterns:
        if pattern.npu_api:
            assert kb.custom_op(pattern.npu_api) is not None, f"pattern {pattern.id}: {pattern.npu_api}"


def _edited_patterns(tmp_path: Path, old: str, new: str) -> Path:
    text = data_path("patterns.toml").read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "patterns.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("old, new, message", [
    ('steps = ["conv", "batchnorm", "activation"]', 'steps = ["conv", "batchnorm", "activatoin"]',
     "pattern[id=conv-bn-act].steps: unknown role 'activatoin'"),
    ('steps = ["sdpa"]', 'steps = ["sdpa?"]', "pattern[id=attention-sdpa].steps: the first step must be plain"),
    ('title = "RMSNorm written out by hand ({count}x): pow, mean, rsqrt',
     'title = "RMSNorm written out by hand ({n}x): pow, mean, rsqrt',
     "pattern[id=rmsnorm].title: unknown placeholder {n}"),
    ('yields_to = ["conv-bn-act"]', 'yields_to = ["conv-bn-relu"]',
     "pattern[id=conv-bn].yields_to: no pattern 'conv-bn-relu'"),
    ("[roles.contiguous]", "[roles.contiguous_copy]", "roles.contiguous: missing"),
    ("tensor_inputs = 2\nsame_shapes = true\n\n[roles.matmul]",
     "tensor_inputs = 2\nsame_shape = true\n\n[roles.matmul]",
     "roles.residual_add.same_shape: unknown key"),
    ('kind = "rotary"', 'kind = "rotation"', "pattern[id=rotary-half].kind: 'rotation' has no [kinds.rotation] entry"),
    ("top = 5", "top = 0", "compute.top: must be at least 1"),
    ('[kinds.rotary]\ncriterion = "fusion"', '[kinds.rotary]\ncriterion = "fusoin"',
     "kinds.rotary.criterion: unknown criterion 'fusoin'"),
    ('[kinds.layout-churn]\ncriterion = "memory_layout"', '[kinds.layout-churn]\ncriterion = "pipeline"',
     "kinds.layout-churn.effect: names criterion 'memory_layout', the kind's criterion is 'pipeline'"),
    ('[kinds.swiglu]\ncriterion = "fusion"\nfused = true\n', '[kinds.swiglu]\ncriterion = "fusion"\n',
     "kinds.swiglu.fused: missing"),
    ("format = 1", "format = 2", "format: expected 1"),
])
def test_pattern_file_errors_name_the_file_and_key(tmp_path, old, new, message):
    path = _edited_patterns(tmp_path, old, new)
    with pytest.raises(KnowledgeBaseError, match=re.escape(f"{path}: {message}")):
        load_patterns(path)


@pytest.mark.parametrize("old, new, key", [
    ("[layout]", "[layuot]", "layuot"),
    ('npu_api = "torch_npu.npu_rms_norm"', 'npu_apii = "torch_npu.npu_rms_norm"', "pattern[id=rmsnorm].npu_apii"),
    ("[roles.conv]\nops", "[roles.conv]\nopps", "roles.conv.opps"),
    ("title_float64", "title_f64", "precision.title_f64"),
    ("min_share = 0.01", "min_shares = 0.01", "compute.min_shares"),
])
def test_a_typo_in_the_pattern_file_is_refused_in_one_line(tmp_path, old, new, key):
    # A mistyped key must not fall back to a default (or read as another key missing): one line, file and key.
    path = _edited_patterns(tmp_path, old, new)
    with pytest.raises(KnowledgeBaseError) as info:
        load_patterns(path)
    assert str(info.value) == f"{path}: {key}: unknown key"


def test_a_detail_function_registered_twice_is_refused():
    from opassess.findings.registry import DETAILS, detail

    with pytest.raises(ValueError, match="'glu_split' registered twice"):
        detail("glu_split", ("split",))(lambda graph, chain: {})
    assert DETAILS["glu_split"][0].__module__ == "opassess.findings.llm"


def test_a_pattern_is_a_data_edit(tmp_path, kb):
    # Dropping the FFN pattern from the file (no code change) lets the Linear + GELU chain it covered surface.
    text = data_path("patterns.toml").read_text(encoding="utf-8")
    start = text.index('[[pattern]]\nid = "ffn"')
    end = text.index("[[pattern]]", start + 1)
    path = tmp_path / "patterns.toml"
    path.write_text(text[:start] + text[end:].replace('"ffn", ', "", 1), encoding="utf-8")
    inventory = scan(MODELS / "findings_fusion.py", "fx")
    findings = find_findings(inventory, kb, patterns=load_patterns(path))
    chain = one(findings, "fusion", "Linear + activation chain")
    assert chain.nodes == ("fc1", "gelu")
    assert not [f for f in findings if f.title.startswith("Linear + activation + Linear")]


# ----------------------------------------------------------------------------- a dtype refused everywhere


def test_a_dtype_pytorch_refuses_on_every_device_is_a_finding_about_the_model(kb):
    """Glow's invertible 1x1 conv in bfloat16: torch.slogdet's meta and CPU kernels both raise ('Low precision dtypes
    not supported'), so no device runs it in bfloat16 (issue 37): one dtype-refused finding naming torch.slogdet,
    whatever the target, and it weighs in dtype_support at weights.toml's dtype-refused price."""
    from opassess import assess

    inventory = scan_inventory(ScanOptions(target=str(MODELS / "glow_invconv.py"), dtype="bfloat16"))
    for product in ("Atlas A2", "Atlas training series"):
        findings = find_findings(inventory, kb, dtype="bfloat16", product=product)
        refused = [f for f in findings if f.kind == "dtype-refused"]
        assert [(f.ops, f.metrics["occurrences"]) for f in refused] == [(("torch.slogdet",), 1)]
        assert refused[0].title == ("torch.slogdet: PyTorch refuses bfloat16 for aten::_linalg_slogdet on every device "
                                    "(its meta and CPU kernels raise); compute it in float32 (1x)")
    fp32 = scan_inventory(ScanOptions(target=str(MODELS / "glow_invconv.py")))
    assert not [f for f in find_findings(fp32, kb) if f.kind == "dtype-refused"]
    # a refusal of the CPU's alone (Dirichlet sampling: its meta kernel takes bfloat16) is no such finding
    dirichlet = scan_inventory(ScanOptions(target=str(MODELS / "dirichlet_mixture.py"), dtype="bfloat16"))
    assert not [f for f in find_findings(dirichlet, kb, dtype="bfloat16") if f.kind == "dtype-refused"]
    scored = assess(ScanOptions(target=str(MODELS / "glow_invconv.py"), dtype="bfloat16"))
    score = next(o.score for o in scored.estimate.ops if o.score.classified.operator.key == "torch.slogdet")
    signal = next(sub.signal for sub in score.subscores if sub.criterion == "dtype_support")
    assert "dtype-refused finding: torch.slogdet: PyTorch refuses bfloat16" in signal and ": 0.8" in signal
