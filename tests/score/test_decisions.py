"""Tests for opassess.score.decisions: one decision for operators sharing one cause (bf16 on 910A: a precision
plan), priced once plus a check each, and parameter limits priced by the change they need (issue 23, items 1-2).
Models: tests/models/bf16_block.py (bf16 Linear, silu, neg, softmax, topk, grouped mm, weight-normed Conv1d) and
tests/models/keyword_limits.py (topk sorted=False, interpolate scale_factor=1.0)."""
from __future__ import annotations

from pathlib import Path

import pytest

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.records import Reason
from opassess.score.decisions import change_of
from opassess.score.weights.load import load_weights

MODELS = Path(__file__).resolve().parents[1] / "models"
WEIGHTS = load_weights()


def _assess(name: str, product: str = "Atlas A2", profile: str = "default", dtype: str | None = None):
    return assess(ScanOptions(target=str(MODELS / f"{name}.py"), product=product, profile=profile, dtype=dtype))


@pytest.fixture(scope="module")
def bf16():
    return {product: _assess("bf16_block", product, dtype="bfloat16") for product in ("910A", "Atlas A2")}


def test_a_training_step_scales_the_loss_in_the_precision_plan_and_in_each_dtype_reason():
    result = assess(ScanOptions(target=str(MODELS / "bf16_block.py"), product="910A", dtype="bfloat16", train=True))
    (plan,) = [d for d in result.estimate.decisions if d.name == "precision"]
    assert plan.title.startswith("precision plan: run in float16 with loss scaling on Atlas training series")
    assert any(line.startswith("loss scaling this capture is a training step") for line in plan.plan)
    linear = next(op for op in result.estimate.ops if op.score.classified.operator.key == "torch.nn.Linear")
    assert any(r.code == "dtype" and "run it in float16 with loss scaling" in r.message
               for r in linear.score.classified.reasons)


def test_bf16_on_910A_is_one_precision_decision_priced_once(bf16):
    est = bf16["910A"].estimate
    precision = [d for d in est.decisions if d.name == "precision"]
    assert len(precision) == 1
    plan = precision[0]
    ops = {op.score.classified.operator.key: op for op in est.ops}
    # every member keeps its verdict and its dtype reason, and costs only its check (0.05 likely) plus any
    # other decision's check
    assert "torch.nn.Linear" in plan.operators and len(plan.operators) >= 3
    for key in plan.operators:
        assert ops[key].score.classified.category == "param-converted"
        assert any(r.code == "dtype" and "bfloat16" in r.message for r in ops[key].score.classified.reasons)
        assert ops[key].cost == "decision" and "precision" in ops[key].decisions
        assert ops[key].person_days.likely < 0.1
    n = len(plan.operators)
    assert plan.once.likely == 2.0 and plan.person_days.likely == pytest.approx(2.0 + 0.05 * n)
    # a forward-only capture: float16, with loss scaling a plan line for when the model trains, not the title's
    assert plan.title.startswith("precision plan: run in float16 on Atlas training series") and \
        "loss scaling" not in plan.title
    assert any("loss scaling when training: torch_npu.npu.amp.GradScaler(init_scale=1024, growth_interval=2000)"
               in line for line in plan.plan)
    prone = next(line for line in plan.plan if line.startswith("keep in float32"))
    assert "torch.nn.functional.softmax" in prone and "torch.nn.Linear" not in prone


def test_bf16_on_910A_costs_within_a_few_days_of_A2(bf16):
    on_910, on_a2 = bf16["910A"].estimate, bf16["Atlas A2"].estimate
    assert on_910.p50 - on_a2.p50 < 4.0
    # the total holds each decision once: operators' own efforts + activities + decisions' once
    once = sum(d.once.likely for d in on_910.decisions)
    assert once >= 2.0
    assert on_910.p10 <= on_910.p50 <= on_910.p90


def test_classic_profile_prices_every_operator_on_its_own():
    est = _assess("bf16_block", "910A", profile="classic", dtype="bfloat16").estimate
    assert est.decisions == ()
    assert all(op.cost != "decision" for op in est.ops)


def test_keyword_limits_cost_under_a_day_each():
    est = _assess("keyword_limits").estimate
    ops = {op.score.classified.operator.key: op for op in est.ops}
    topk, interpolate = ops["torch.topk"], ops["torch.nn.functional.interpolate"]
    assert topk.score.classified.category == "param-converted"  # the verdict stays
    assert topk.cost == "priced-change" and "local-rewrite" in topk.basis
    assert topk.person_days.likely < 1.0 and topk.person_days.high <= 1.0
    # scale_factor: the API page's "not supported" is overruled by the kernel facts (aclnnUpsampleNearest2dV2 takes
    # scalesH/scalesW; issue 22): direct with a kernel-param reason, a focused check under a day
    assert interpolate.score.classified.category == "direct"
    assert any(r.code == "kernel-param" for r in interpolate.score.classified.reasons)
    assert interpolate.person_days.likely < 1.0 and interpolate.person_days.high <= 1.0


def test_change_tiers_from_the_reason():
    rules = WEIGHTS.decisions
    tier = {text: change_of(Reason("param-limit", text, "e"), rules).tier for text in (
        "sorted=False: sorted must be True on the NPU",
        "scale_factor=1.0: scale_factor is not supported (must stay at its default) on the NPU",
        "scale_factor=(1.0, 1.0): scale_factor is not supported (must stay at its default) on the NPU",
        "scale_factor=2.0: scale_factor is not supported (must stay at its default) on the NPU",
        "dilation=2: dilation must be 1 on the NPU")}
    assert list(tier.values()) == ["local-rewrite", "no-op", "no-op", "algorithm", "algorithm"]
    assert change_of(Reason("dtype", "input dtype float64 ...", "e"), rules) is None


def test_no_mark_on_910A_is_no_kernel_check_the_kernel_facts_judge():
    """The torch_npu API pages mark no API for Atlas training series (910A): their silence says nothing of one
    operator, so those operators join the validation block as on Atlas A2 (tests/models/bert_shaped.py, whose
    kernels' docs all list the 910: its 910A estimate is its A2 one); only a kernel whose doc marks the product ✘
    and falls back to the aclop path (kernel-product) is a kernel-check cause: integer repeat_interleave, whose
    aclnnRepeatInterleaveInt is ✘ on the 910."""
    on_910, on_a2 = (_assess("bert_shaped", product).estimate for product in ("910A", "Atlas A2"))
    silent = [op for op in on_910.ops if {r.code for r in op.score.classified.reasons} & {"api-undocumented"}
              and not any(r.code == "kernel-product" for r in op.score.classified.reasons)]
    assert len(silent) >= 10  # every API of the model: the page's 910A column is empty
    assert all(op.cost in ("validation-block", "zero-cost") and not op.decisions for op in silent)
    assert not [d for d in on_910.decisions if d.name == "kernel-check"]
    assert on_910.total.likely == pytest.approx(on_a2.total.likely, abs=0.01)
    path = MODELS / "int_repeat_interleave.py"
    on_910, on_a2 = (assess(ScanOptions(target=str(path), product=product)).estimate for product in ("910A", "A2"))
    ops = {op.score.classified.operator.key: op for op in on_910.ops}
    check = [d for d in on_910.decisions if d.name == "kernel-check"]
    assert len(check) == 1 and check[0].operators == ("Tensor.repeat_interleave",)
    assert any(r.code == "kernel-product" and "aclnnRepeatInterleaveInt" in r.message
               for r in ops["Tensor.repeat_interleave"].score.classified.reasons)
    assert "no mark for the target is no such cause" in check[0].cause
    # the difference from Atlas A2 is that one check, priced once (0.5 likely) plus its operator's 0.02
    assert on_910.total.likely - on_a2.total.likely == pytest.approx(0.5, abs=0.05)


def _ungrouped(tmp_path):
    """A weights overlay that turns decisions off: every operator and site priced on its own (the 'before')."""
    path = tmp_path / "ungrouped.toml"
    path.write_text("[decisions]\ngroup = false\n", encoding="utf-8")
    return path


def _both(name: str, tmp_path):
    target = str(MODELS / f"{name}.py")
    return (assess(ScanOptions(target=target, weights=_ungrouped(tmp_path))).estimate,
            assess(ScanOptions(target=target)).estimate)


def test_four_gpu_attention_calls_are_one_attention_decision(tmp_path):
    """tests/models/attention_libraries.py: flash_attn_func, flash_attn_qkvpacked_func, flash_attn_with_kvcache and
    xformers memory_efficient_attention, with their two imports: six sites whose routes all lead to the NPU's fused
    attention, priced one by one before; one wrapper priced once after, each site a check."""
    before, after = _both("attention_libraries", tmp_path)
    assert before.decisions == ()
    sites = [s for s in before.source if s.finding.kind in ("library-import", "library-call")]
    assert len(sites) == 6 and all(s.person_days.likely == 0.5 for s in sites)  # [source] param-converted each
    attention = [d for d in after.decisions if d.name == "attention"]
    assert len(attention) == 1
    decision = attention[0]
    assert sorted(decision.sites) == sorted(s.key for s in sites)
    # the captured library operators are listed under it; they keep their verdict and cost nothing of their own
    assert set(decision.operators) == {"flash_attn.flash_attn_func", "flash_attn.flash_attn_qkvpacked_func",
                                       "flash_attn.flash_attn_with_kvcache", "xformers.ops.memory_efficient_attention"}
    ops = {op.score.classified.operator.key: op for op in after.ops}
    for key in decision.operators:
        assert ops[key].score.classified.category == "param-converted" and ops[key].person_days.likely == 0
        assert any(r.code == "library-route" for r in ops[key].score.classified.reasons)
    # once 0.5-1-3, plus 6 checks of 0.02-0.05-0.15
    assert (decision.once.likely, decision.person_days.likely) == (1.0, pytest.approx(1.0 + 6 * 0.05))
    covered = {s.key: s for s in after.source if s.key in decision.sites}
    assert all(s.person_days.likely == 0.05 and "priced once, on the decision" in s.basis for s in covered.values())
    # the total holds the switch once: six sites 3.0 -> 6 checks 0.3 + the decision's 1.0; the four operators are
    # no longer types at risk of the accuracy line (4 x 0.25): 1.0 less
    assert before.total.likely - after.total.likely == pytest.approx(3.0 - 0.3 - 1.0 + 1.0, abs=0.01)
    assert after.p50 < before.p50 - 3.0  # P50 8.2 -> 4.5 person-days


def test_channels_last_is_one_layout_decision(tmp_path):
    """tests/models/channels_last.py: Tensor.to(memory_format=channels_last) trips the API page's limit (an
    algorithm-tier param limit, priced as a port before) and four source sites name torch.channels_last: one layout
    decision after, the operator keeping its verdict and reason."""
    before, after = _both("channels_last", tmp_path)
    ops_before = {op.score.classified.operator.key: op for op in before.ops}
    ops = {op.score.classified.operator.key: op for op in after.ops}
    to_before, to = ops_before["Tensor.to"], ops["Tensor.to"]
    assert to_before.cost == "per-operator" and to_before.person_days.likely > 2.0
    layout = [d for d in after.decisions if d.name == "layout"]
    assert len(layout) == 1
    decision = layout[0]
    assert decision.operators == ("Tensor.to",) and len(decision.sites) == 4
    assert to.score.classified.category == "param-converted" and to.cost == "decision" and to.decisions == ("layout",)
    assert any(r.code == "param-limit" and r.message.startswith("memory_format=") for r in to.score.classified.reasons)
    assert decision.person_days.likely == pytest.approx(0.5 + 5 * 0.02)  # once + Tensor.to and four sites
    sites_before = sum(s.person_days.likely for s in before.source if s.finding.subject == "torch.channels_last")
    assert sites_before == pytest.approx(0.5 + 3 * 0.1)  # the first site, then the same edit again x 0.2
    # before: Tensor.to's port + the sites + Tensor.to at risk in the accuracy line (0.25)
    assert before.total.likely - after.total.likely == pytest.approx(
        to_before.person_days.likely + sites_before + 0.25 - decision.person_days.likely, abs=0.01)
    assert decision.title == "memory layout" and "channels_last" in decision.cause and "TransData" in decision.plan[0]


def test_a_single_attention_call_keeps_its_own_price():
    """tests/models/gpu_only.py calls flash_attn_func once: below [decisions.attention] min_members (2) there is no
    wrapper to share, so the call (one item with its import) keeps its site's own price."""
    est = _assess("gpu_only").estimate
    assert not [d for d in est.decisions if d.name == "attention"]
    flash = [s for s in est.source if s.finding.subject.startswith("flash_attn")]
    assert len(flash) == 1 and flash[0].person_days.likely == 0.5
    assert "imported at line 8" in flash[0].finding.notes


def test_the_attention_decision_reads_in_the_reader_s_language():
    from opassess.report import render

    text = render(_assess("attention_libraries"), "md", language="zh-CN")
    assert "注意力实现" in text and "一次性 0.5-1-3 + 6 个源码位置 × 0.02-0.05-0.15（每项一次检查）" in text
    assert "编写一个注意力封装" in text and "write one attention wrapper" not in text


def test_without_the_source_scan_the_attention_operators_are_the_decision_s_members(tmp_path):
    """Without the project's source scan (project_scan=False) the four stand-in operators carry the routes
    themselves (library-route; xformers' route reaches npu_fusion_attention only past its first clause, so the
    operator's replacement is read too): priced one by one before, one decision with four checks after."""
    target = str(MODELS / "attention_libraries.py")
    before, after = (assess(ScanOptions(target=target, project_scan=False, weights=weights)).estimate
                     for weights in (_ungrouped(tmp_path), None))
    keys = {"flash_attn.flash_attn_func", "flash_attn.flash_attn_qkvpacked_func",
            "flash_attn.flash_attn_with_kvcache", "xformers.ops.memory_efficient_attention"}
    priced = {op.score.classified.operator.key: op for op in before.ops if op.cost == "per-operator"}
    assert keys <= set(priced) and all(priced[k].person_days.likely > 3.0 for k in keys)
    (decision,) = after.decisions
    assert decision.name == "attention" and set(decision.operators) == keys and decision.sites == ()
    assert decision.person_days.likely == pytest.approx(1.0 + 4 * 0.05)
    assert after.p50 < before.p50 - 10.0  # four ports of 3.2-3.4 days -> one wrapper


def test_a_float64_cause_on_several_lines_is_one_decision(tmp_path):
    """tests/models/float64_lines.py: a float32 model computing one part in float64 on five lines. Before, each
    operator type it trips (the cast, the matmul, the tanh) was a port of its own; after, one float64 decision
    listing the lines, priced once plus a check each; the operators keep their verdict and reasons."""
    before, after = _both("float64_lines", tmp_path)
    ops_before = {op.score.classified.operator.key: op for op in before.ops}
    members = ("Tensor.double", "Tensor.matmul", "torch.tanh")
    assert all(ops_before[k].cost == "per-operator" and ops_before[k].person_days.likely > 2.0 for k in members)
    (decision,) = [d for d in after.decisions if d.name == "float64"]
    assert decision.operators == members
    ops = {op.score.classified.operator.key: op for op in after.ops}
    for key in members:
        assert ops[key].score.classified.category == "param-converted" and ops[key].cost == "decision"
        assert ops[key].decisions == ("float64",)
    # once 0.25-0.5-2 plus three checks of 0.02-0.05-0.15
    assert decision.person_days.likely == pytest.approx(0.5 + 3 * 0.05)
    assert decision.title == "float64 computation: 3 operator type(s) on 5 line(s), one choice"
    assert decision.plan[0].endswith(" at " + ", ".join(f"tests/models/float64_lines.py:{n}" for n in range(26, 31)))
    assert after.p50 < before.p50 - 5.0


def test_a_single_float64_operator_keeps_its_own_price(model_file):
    """One operator type in float64 (below [decisions.float64] min_members, 2): no choice to share, its own port."""
    path = model_file('''
        import torch

        class Tanh64(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = torch.nn.Linear(4, 4)

            def forward(self, x, t):
                return self.proj(x) + torch.tanh(t).float()

        def build_model():
            return Tanh64().eval()

        def example_inputs():
            return (torch.randn(4, 4), torch.linspace(0, 1, 4, dtype=torch.float64))
    ''')
    est = assess(ScanOptions(target=str(path))).estimate
    assert not [d for d in est.decisions if d.name == "float64"]
    tanh = next(op for op in est.ops if op.score.classified.operator.key == "torch.tanh")
    assert tanh.cost == "per-operator"


def test_a_float64_model_stays_a_precision_plan():
    est = _assess("float64").estimate
    assert [d.name for d in est.decisions] == ["precision"]

