"""Tests for opassess.estimate: person-day ranges, totals, the 20/80 view, the module roll-up and risk cells,
each worked by hand from a five-operator model and the shipped "classic" profile (the default profile's cost
model is tested in tests/score/test_cost.py)."""
from __future__ import annotations

import math

import pytest

from opassess.records import Effort, Finding, Reason
from opassess.score.criteria import score
from opassess.score.estimate import effort, estimate
from opassess.score.weights.load import load_weights
from tests.score.records import call, classified, inventory, node

WEIGHTS = load_weights(None, "classic")  # the per-operator table worked by hand below (no block, no activities)

# The model, with roofline compute units = max(flops / 200, bytes):
#   conv      torch.nn.Conv2d   block.conv           4e6 flops, 1e4 bytes -> 20000 (share 0.5)
#   relu1/2   torch.nn.ReLU     block.act, head.act  5000 bytes each      -> 10000 (share 0.25)
#   add       Tensor.add        block                8000 bytes           ->  8000 (share 0.2)
#   lg        torch.lgamma      head                 2000 bytes           ->  2000 (share 0.05), no NPU kernel
#   ones      torch.ones_like   head                 0 bytes              ->     0, classified param-converted
# Edges conv -> relu1 -> add -> relu2 -> lg, conv -> add, ones -> lg: the longest path is conv, relu1, add,
# relu2, lg (5 nodes); ones (depth 1, height 2) is not on it.
#
# Composites (see tests/score/test_score.py for the per-criterion arithmetic):
#   Conv2d  multi_card min(1, 0.5 / 0.25) = 1   -> 0.2 x 0.2 x 1 = 0.04
#   ReLU    multi_card 1                        -> 0.04
#   add     multi_card 0.2 / 0.25 = 0.8         -> 0.2 x 0.2 x 0.8 = 0.032
#   lgamma  pipeline 1 -> performance 0.4; maintenance 1, version 1, multi_card 0.2 -> ecosystem 0.84;
#           composite 0.5 x 0.4 + 0.2 x 0.84 = 0.368
#   ones    every signal 0 (share 0)            -> 0
# Effort: likely = low + composite x (high - low) + extras; low x (1 - 0.2); high x (1 + pessimism):
#   Conv2d  direct 1 + 0.04 = 1.04                  low 0.832    high 1.04 x 1.5 = 1.56
#   ReLU    1.04 + (2 - 1) x 0.02 = 1.06            low 0.852    high 1.58
#   add     1 + 0.032 = 1.032                       low 0.8256   high 1.548
#   lgamma  custom-dev 10 + 0.368 x 10 = 13.68      low 10.944   high 13.68 x 2 = 27.36
#   ones    param-converted 3 + 0 = 3               low 2.4      high 3 x 1.6 = 4.8
#   total likely 19.812, low 15.8536, high 36.848
EXPECTED_LIKELY = {"torch.lgamma": 13.68, "torch.ones_like": 3.0, "torch.nn.ReLU": 1.06, "torch.nn.Conv2d": 1.04,
                   "Tensor.add": 1.032}


def model():
    return inventory(
        [
            node("conv", "torch.nn.Conv2d", "block.conv", aten=[call("aten::convolution")], flops=4_000_000,
                 bytes_moved=10_000),
            node("relu1", "torch.nn.ReLU", "block.act", aten=[call("aten::relu")], bytes_moved=5_000),
            node("add", "Tensor.add", "block", kind="method", shapes=((1, 4, 8, 8), (1, 4, 8, 8)),
                 aten=[call("aten::add", "Tensor")], bytes_moved=8_000),
            node("relu2", "torch.nn.ReLU", "head.act", aten=[call("aten::relu")], bytes_moved=5_000),
            node("ones", "torch.ones_like", "head", kind="function", aten=[call("aten::ones_like")]),
            node("lg", "torch.lgamma", "head", kind="function", aten=[call("aten::lgamma")], bytes_moved=2_000),
        ],
        edges=[("conv", "relu1"), ("relu1", "add"), ("conv", "add"), ("add", "relu2"), ("relu2", "lg"),
               ("ones", "lg")],
    )


def classify_model(inv):
    out = []
    for op in inv.operators:
        if op.key == "torch.lgamma":
            out.append(classified(op, "custom-dev", support={"aten::lgamma": False}))
        elif op.key == "torch.ones_like":
            out.append(classified(op, "param-converted"))
        else:
            out.append(classified(op))
    return out


def run(weights=WEIGHTS):
    inv = model()
    return estimate(score(classify_model(inv), inv, weights), inv, weights), inv


def points(e: Effort) -> tuple[float, float, float]:
    return e.low, e.likely, e.high


def by_op(result):
    return {op.score.classified.operator.key: op for op in result.ops}


# ------------------------------------------------------------------------------ per operator


def test_ranges_per_operator():
    result, _ = run()
    ops = by_op(result)
    assert [op.score.classified.operator.key for op in result.ops] == list(EXPECTED_LIKELY)  # largest first
    for key, likely in EXPECTED_LIKELY.items():
        assert ops[key].person_days.likely == pytest.approx(likely)
    assert points(ops["torch.lgamma"].person_days) == pytest.approx((10.944, 13.68, 27.36))
    assert points(ops["torch.nn.ReLU"].person_days) == pytest.approx((0.852, 1.06, 1.58))


def test_signals_measured_once_are_what_score_and_estimate_read(monkeypatch):
    # The pipeline measures every operator once (measure_all) and hands the same signals to both stages:
    # given them, neither stage measures again, and the result is the one each stage gets measuring on its own.
    from opassess.findings import DataFlow
    from opassess.score import signals as signals_module

    inv = model()
    ops = classify_model(inv)
    context = signals_module.ModelContext.of(inv, WEIGHTS, DataFlow.of(inv.capture))
    measured = signals_module.measure_all(ops, context, WEIGHTS)
    assert set(measured) == {op.operator.key for op in ops}
    assert context.main_path == {"conv", "relu1", "add", "relu2", "lg"}  # the longest path worked above

    def no_second_measure(*_args, **_kwargs):
        raise AssertionError("measured a second time")

    monkeypatch.setattr(signals_module, "measure", no_second_measure)
    once = estimate(score(ops, inv, WEIGHTS, signals=measured), inv, WEIGHTS, signals=measured)
    monkeypatch.undo()
    alone, _ = run()
    assert [(o.score.classified.operator.key, o.score.composite, o.person_days, o.risk) for o in once.ops] == \
        [(o.score.classified.operator.key, o.score.composite, o.person_days, o.risk) for o in alone.ops]


def test_effort_of_one_scored_op_alone():
    # The docstring example: param-converted, 3 signatures (dilation 2, 3, 4) of which 2 need conversion,
    # 11 occurrences. Composite 0.25 is set directly: placed = 3 + 0.25 x 2 = 3.5;
    # extras = (2 - 1) x 0.5 + min(1, 10 x 0.02) = 0.7; likely 4.2, low 3.5 x 0.8 + 0.7 = 3.5,
    # high 3.5 x 1.6 + 0.7 = 6.3. Unknown to the knowledge base: high 3.5 x (1 + 0.6 + 0.5) + 0.7 = 8.05.
    from dataclasses import replace

    nodes = [node(f"c{i}", "torch.nn.Conv2d", f"c{i}", attrs={"dilation": 2 + i % 3}, aten=[call("aten::convolution")])
             for i in range(11)]
    (op,) = inventory(nodes).operators
    # the two converted signatures trip different limits (a dilation limit, a dtype limit): two conversions
    limits = [Reason("param-limit", "dilation > 1", "limits: dilation", 0), Reason("dtype", "float64", "dtypes", 1)]
    (scored,) = score([classified(op, "param-converted", reasons=limits,
                                  signature_categories=["param-converted", "param-converted", "direct"])],
                      inventory(nodes), WEIGHTS)
    scored = replace(scored, composite=0.25)
    assert points(effort(scored, WEIGHTS)) == pytest.approx((3.5, 4.2, 6.3))
    unknown = replace(scored, classified=replace(scored.classified, known=False))
    assert effort(unknown, WEIGHTS).high == pytest.approx(8.05)
    # the same limit tripped by both (dilation 2 and 3 break one documented limit): one conversion, no extra
    same = [Reason("param-limit", "dilation > 1", "limits: dilation", 0),
            Reason("param-limit", "dilation > 1", "limits: dilation", 1)]
    alike = replace(scored, classified=replace(scored.classified, reasons=tuple(same)))
    assert points(effort(alike, WEIGHTS)) == pytest.approx((3.0, 3.7, 5.8))


def test_occurrence_validation_is_capped():
    # 80 occurrences: (80 - 1) x 0.02 = 1.58 -> capped at 1 day; composite 0.04 (one op, all compute): 1.04 + 1.
    nodes = [node(f"r{i}", "torch.nn.ReLU", f"r{i}", aten=[call("aten::relu")]) for i in range(80)]
    inv = inventory(nodes)
    (scored,) = score([classified(inv.operators[0])], inv, WEIGHTS)
    assert effort(scored, WEIGHTS).likely == pytest.approx(2.04)


def test_raising_custom_dev_high_moves_the_estimate_as_computed(tmp_path):
    # high 20 -> 30: lgamma placed = 10 + 0.368 x 20 = 17.36; total likely 19.812 - 13.68 + 17.36 = 23.492.
    path = tmp_path / "w.toml"
    path.write_text("[effort.custom-dev]\nhigh = 30\n")
    result, _ = run(load_weights(path, "classic"))
    assert by_op(result)["torch.lgamma"].person_days.likely == pytest.approx(17.36)
    assert result.total.likely == pytest.approx(23.492)


def test_per_occurrence_moves_the_estimate_as_computed(tmp_path):
    # per_occurrence 0.02 -> 0.1: ReLU (2 occurrences) 1.04 + 1 x 0.1 = 1.14.
    path = tmp_path / "w.toml"
    path.write_text("[effort]\nper_occurrence = 0.1\n")
    result, _ = run(load_weights(path, "classic"))
    assert by_op(result)["torch.nn.ReLU"].person_days.likely == pytest.approx(1.14)


# ------------------------------------------------------------------------------ model total


def test_total_is_the_sum_of_the_ranges():
    result, _ = run()
    assert points(result.total) == pytest.approx((15.8536, 19.812, 36.848))
    assert points(result.by_category["custom-dev"]) == pytest.approx((10.944, 13.68, 27.36))
    assert result.by_category["param-converted"].likely == pytest.approx(3.0)
    assert result.by_category["direct"].likely == pytest.approx(1.04 + 1.06 + 1.032)


def test_p50_p90_from_pert_simulation():
    # PERT mean = (low + 4 likely + high) / 6 per op, summed:
    #   lgamma (10.944 + 54.72 + 27.36) / 6 = 15.504; ones (2.4 + 12 + 4.8) / 6 = 3.2;
    #   ReLU (0.852 + 4.24 + 1.58) / 6 = 1.112; Conv2d (0.832 + 4.16 + 1.56) / 6 = 1.092;
    #   add (0.8256 + 4.128 + 1.548) / 6 = 1.0836;  total 21.9916.
    # sd = (high - low) / 6 per op; lgamma's 2.736 dominates; sqrt of the summed squares is 2.80.
    # The total is right-skewed (lgamma's beta has alpha 1.67, beta 4.33), so P50 sits a little below the mean
    # and P90 further above the median than a normal's 1.28 sd (measured: 1.57 sd).
    result, _ = run()
    mean, sd = 21.9916, 2.80
    assert mean - 0.5 * sd < result.p50 < mean
    assert 1.28 * sd < result.p90 - result.p50 < 1.8 * sd
    assert result.total.low < result.p50 < result.p90 < result.total.high
    assert "PERT-beta Monte Carlo: 20000 samples, seed 20240" in result.method
    again, _ = run()
    assert (again.p50, again.p90) == (result.p50, result.p90)  # fixed seed


def test_zero_width_ranges_give_the_likely_total(tmp_path):
    # optimism 0 and pessimism 0 everywhere: every range collapses to its likely value; P50 = P90 = 19.812.
    path = tmp_path / "w.toml"
    path.write_text("".join(f"[effort.{c}]\noptimism = 0\npessimism = 0\n"
                            for c in ("direct", "param-converted", "custom-dev")))
    result, _ = run(load_weights(path, "classic"))
    assert result.p50 == pytest.approx(19.812) and result.p90 == pytest.approx(19.812)


def test_pareto_view():
    # 80% of 19.812 = 15.8496. lgamma 13.68 < 15.85; + ones 3 = 16.68 >= 15.85: two of five types = 0.4.
    result, _ = run()
    assert result.pareto_ops == ("torch.lgamma", "torch.ones_like")
    assert result.pareto_share_of_types == pytest.approx(0.4)
    assert [op.pareto for op in result.ops] == [True, True, False, False, False]


def test_pareto_share_moves_the_cut(tmp_path):
    # pareto_share 0.6: 0.6 x 19.812 = 11.89 <= 13.68, lgamma alone: one of five types = 0.2.
    path = tmp_path / "w.toml"
    path.write_text("[estimate]\npareto_share = 0.6\n")
    result, _ = run(load_weights(path, "classic"))
    assert result.pareto_ops == ("torch.lgamma",)
    assert result.pareto_share_of_types == pytest.approx(0.2)


def test_module_roll_up():
    # ReLU's 1.06 splits over its two occurrences: 0.53 to block.act and 0.53 to head.act.
    # block = conv 1.04 + 0.53 + add 1.032 = 2.602; head = 0.53 + lgamma 13.68 + ones 3 = 17.21; "" = 19.812.
    result, _ = run()
    likely = {path: e.likely for path, e in result.by_module.items()}
    assert likely == pytest.approx({"": 19.812, "block": 2.602, "block.conv": 1.04, "block.act": 0.53,
                                    "head": 17.21, "head.act": 0.53})
    assert points(result.by_module[""]) == pytest.approx(points(result.total))


# ------------------------------------------------------------------------------------- risk


def test_risk_cells():
    # Likelihood: direct base 1, nothing adds -> 1. lgamma: custom-dev 3 + AI CPU 1 + version gap 1
    # (version_compat 1 >= 0.5) = 5. ones: param-converted 2.
    # Impact: 1 + share thresholds reached (0.02, 0.05, 0.15, 0.30) + 1 on the main path, clamped to 5:
    #   Conv2d 0.5 -> 1 + 4 + 1 = 6 -> 5; ReLU 0.25 -> 1 + 3 + 1 = 5; add 0.2 -> 5; lgamma 0.05 -> 1 + 2 + 1 = 4;
    #   ones 0 and off the main path -> 1.
    # Stars: Conv2d 1 (1 x 5 = 5: between 4 and 15); lgamma 5 (5 x 4 = 20 >= 15 -> +1, clamped at 5);
    #   ones 2 - 1 = 1 (2 x 1 = 2 <= 4).
    result, _ = run()
    ops = by_op(result)
    cells = {key: (op.risk.likelihood, op.risk.impact, op.risk.stars) for key, op in ops.items()}
    assert cells == {"torch.nn.Conv2d": (1, 5, 1), "torch.nn.ReLU": (1, 5, 1), "Tensor.add": (1, 5, 1),
                     "torch.lgamma": (5, 4, 5), "torch.ones_like": (2, 1, 1)}
    assert result.risk_matrix[4][3] == ("torch.lgamma",)
    assert result.risk_matrix[1][0] == ("torch.ones_like",)
    assert set(result.risk_matrix[0][4]) == {"torch.nn.Conv2d", "torch.nn.ReLU", "Tensor.add"}
    assert sum(len(cell) for row in result.risk_matrix for cell in row) == 5
    assert any("aten::lgamma" in s for s in ops["torch.lgamma"].risk.signals)


def test_impact_thresholds_move_the_cell(tmp_path):
    # share_levels [0.1, 0.2, 0.3, 0.4] and no main-path bump: lgamma 0.05 reaches none -> impact 1;
    # add 0.2 reaches two -> 3; Conv2d 0.5 reaches four -> 5.
    path = tmp_path / "w.toml"
    path.write_text("[risk.impact]\nshare_levels = [0.1, 0.2, 0.3, 0.4]\nmain_path_bump = 0\n")
    ops = by_op(run(load_weights(path, "classic"))[0])
    assert [ops[k].risk.impact for k in ("torch.lgamma", "Tensor.add", "torch.nn.Conv2d")] == [1, 3, 5]


def test_unknown_and_dtype_raise_likelihood():
    # float64 Tensor.mul the knowledge base does not know, classified param-converted:
    # 2 (base) + 1 (unknown) + 1 (dtype_support 1 >= 0.5) = 4. Its 12 occurrences bump impact by 1;
    # without edges there is no main-path bump: share 1 -> 5 levels, clamped 5.
    nodes = [node(f"m{i}", "Tensor.mul", kind="method", dtypes=("float64",),
                  aten=[call("aten::mul", "Tensor", dtypes=("float64",))]) for i in range(12)]
    inv = inventory(nodes)
    result = estimate(score([classified(inv.operators[0], "param-converted", known=False)], inv, WEIGHTS),
                      inv, WEIGHTS)
    risk = result.ops[0].risk
    assert (risk.likelihood, risk.impact) == (4, 5)
    assert any("main path not measured" in s for s in risk.signals)
    assert any("+1 12 occurrences" in s for s in risk.signals)


def test_empty_model():
    inv = inventory([])
    result = estimate((), inv, WEIGHTS)
    assert result.total == Effort(0.0, 0.0, 0.0)
    assert (result.p50, result.p90, result.pareto_ops, result.pareto_share_of_types) == (0.0, 0.0, (), 0.0)
    assert math.isclose(result.by_module[""].likely, 0.0)


# ------------------------------------------------------------------ a real model through the pipeline


def test_real_chain_model():
    # tests/models/score_chain.py (composites worked in tests/score/test_score.py::test_real_chain_model):
    #   i0   custom-dev 10 + 0.392 x 10 = 13.92    low 11.136   high 27.84
    #   mul, add direct 1 + 0.04 = 1.04 each            sigmoid 1 + 0.032 = 1.032
    #   total likely 13.92 + 1.04 + 1.04 + 1.032 = 17.032
    # 20/80: 0.8 x 17.032 = 13.6256 <= 13.92: i0 alone, 1 of 4 types = 0.25.
    # Risk: i0 custom-dev 3 + AI CPU 1 + version gap 1 = 5; impact 0.2 -> 1 + 3, +1 main path = 5.
    #   mul/add 0.3 -> 1 + 4 (+1) = 5 clamped; sigmoid 0.2 -> 4 + 1 = 5. All four are on the one chain.
    # Every op is called at the model's root: by_module holds only "" (the whole model).
    from tests.score.records import scan

    inv, classified_ops = scan("score_chain.py")
    result = estimate(score(classified_ops, inv, WEIGHTS), inv, WEIGHTS)
    ops = by_op(result)
    assert points(ops["torch.i0"].person_days) == pytest.approx((11.136, 13.92, 27.84))
    assert result.total.likely == pytest.approx(17.032)
    assert result.pareto_ops == ("torch.i0",) and result.pareto_share_of_types == 0.25
    assert {k: (o.risk.likelihood, o.risk.impact) for k, o in ops.items()} == {
        "torch.i0": (5, 5), "torch.sigmoid": (1, 5), "Tensor.mul": (1, 5), "Tensor.add": (1, 5)}
    assert ops["torch.i0"].risk.stars == 5 and ops["torch.sigmoid"].risk.stars == 1
    assert list(result.by_module) == [""]


def test_real_resnet_roll_up():
    # examples/resnet_like.py: module totals add up: each block's total is the sum of its children's, each
    # layer's the sum of its two blocks', and "" the whole model.
    from opassess.classify import classify
    from opassess.kb import load_kb
    from opassess.options import ScanOptions
    from opassess.pipeline.capture import scan_inventory
    from tests.score.records import MODELS

    inv = scan_inventory(ScanOptions(target=str(MODELS.parent.parent / "examples" / "resnet_like.py")))
    result = estimate(score(classify(inv, load_kb(None)), inv, WEIGHTS), inv, WEIGHTS)
    m = {path: e.likely for path, e in result.by_module.items()}
    assert m[""] == pytest.approx(result.total.likely)
    assert m["layer1"] == pytest.approx(m["layer1.0"] + m["layer1.1"])
    children = [p for p in m if p.startswith("layer2.0.") and p.count(".") == 2]
    assert m["layer2.0"] == pytest.approx(sum(m[p] for p in children) + _direct_share(result, "layer2.0"))
    assert all(op.score.classified.category == "direct" for op in result.ops)


def _direct_share(result, path):
    """Effort booked on `path` itself (occurrences whose module_path is exactly `path`, e.g. the residual add)."""
    total = 0.0
    for op in result.ops:
        nodes = op.score.classified.operator.nodes
        total += op.person_days.likely * sum(1 for n in nodes if n.module_path == path) / len(nodes)
    return total


def test_a_dynamic_shape_finding_raises_likelihood():
    # weights.toml: risk.likelihood.dynamic_shapes = 1 for "data-dependent output shapes or a dynamic-shape finding".
    # A host sync (`if x.sum() > 0:` -> Tensor.__bool__) has no data-dependent ATen op, only the finding:
    # direct base 1 + 1 = 2 with the finding, 1 without it.
    nodes = [node("gt", "Tensor.gt", kind="method", aten=[call("aten::gt", "Scalar")]),
             node("b", "Tensor.__bool__", kind="method", aten=[call("aten::_local_scalar_dense")])]
    inv = inventory(nodes, edges=[("gt", "b")])
    ops = [classified(o) for o in inv.operators]
    sync = Finding("dynamic-shape", "Tensor.__bool__: reads a tensor value on the host", ("b",),
                   ("Tensor.__bool__",), None, None, "performance.pipeline")
    with_finding = by_op(estimate(score(ops, inv, WEIGHTS, [sync]), inv, WEIGHTS, [sync]))
    assert with_finding["Tensor.__bool__"].risk.likelihood == 2
    assert any("dynamic-shape finding" in s for s in with_finding["Tensor.__bool__"].risk.signals)
    assert with_finding["Tensor.gt"].risk.likelihood == 1
    without = by_op(estimate(score(ops, inv, WEIGHTS), inv, WEIGHTS))
    assert without["Tensor.__bool__"].risk.likelihood == 1
