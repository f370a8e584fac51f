"""Tests for opassess.score.cost and the cost model end to end: zero-cost operators, the validation block, the
model-level activities, origins, profiles, and the issue's floors on models built in the suite
(tests/models/resnet50_shaped.py, bert_shaped.py, two_custom_ops.py)."""
from __future__ import annotations

import functools
import tomllib
from pathlib import Path

import pytest

from opassess.errors import ConfigError
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.records import Reason
from opassess.score.cost import (
    PER_OPERATOR,
    VALIDATION_BLOCK,
    ZERO_COST,
    activities,
    cost_basis,
    distinct_limits,
    origin_of,
)
from opassess.score.weights.load import load_weights, profile_names
from tests.score.records import MODELS, call, classified, inventory, node

DEFAULT = load_weights(None)
CLASSIC = load_weights(None, "classic")
ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def scanned(name: str, profile: str = "default"):
    return assess(ScanOptions(target=str(MODELS / f"{name}.py"), profile=profile))


def ordered(estimate) -> None:
    total = estimate.total
    assert total.low <= estimate.p10 <= estimate.p50 <= estimate.p90 <= total.high


# ------------------------------------------------------------------ the floors


@pytest.mark.parametrize("name", ["resnet50_shaped", "bert_shaped"])
def test_all_direct_models_come_to_at_most_five_person_days(name):
    result = scanned(name)
    assert {c.category for c in result.classified} == {"direct"}
    est = result.estimate
    assert est.p50 <= 5 and est.total.likely <= 5
    ordered(est)
    assert {op.cost for op in est.ops} <= {ZERO_COST, VALIDATION_BLOCK}


def test_bert_views_and_eval_dropout_are_zero_cost():
    est = scanned("bert_shaped").estimate
    costs = {op.score.classified.operator.key: op for op in est.ops}
    for key in ("torch.nn.Dropout", "Tensor.view", "Tensor.permute", "Tensor.transpose"):
        assert costs[key].cost == ZERO_COST and costs[key].person_days.high == 0
    assert costs["torch.nn.Linear"].cost == VALIDATION_BLOCK


def test_two_custom_dev_operators_come_to_at_least_twenty():
    est = scanned("two_custom_ops").estimate
    custom = [op for op in est.ops if op.score.classified.category == "custom-dev"]
    assert len(custom) == 2 and all(op.cost == PER_OPERATOR for op in custom)
    assert est.p50 >= 20 and est.total.low >= 20
    ordered(est)


@pytest.mark.parametrize("name", ["resnet50_shaped", "bert_shaped"])
def test_classic_profile_costs_each_direct_type_at_least_a_day(name):
    est = scanned(name, "classic").estimate
    assert est.profile == "classic" and est.activities == ()
    assert all(op.person_days.likely >= 1 and op.cost == PER_OPERATOR for op in est.ops)
    assert est.p50 >= len(est.ops)
    ordered(est)


def test_by_origin_adds_up_to_the_total():
    for name in ("resnet50_shaped", "two_custom_ops"):
        est = scanned(name).estimate
        assert sum(e.likely for e in est.by_origin.values()) == pytest.approx(est.total.likely)
        assert set(est.by_origin) == {"project", "model-level"}


# ------------------------------------------------------------------------------ units


def test_cost_basis_of_views_dispatch_free_limits_and_unknown():
    inv = inventory([
        node("v", "Tensor.view", "", kind="method", aten=[call("aten::view")]),
        node("d", "torch.nn.Dropout", "drop", aten=[]),
        node("c", "torch.nn.Conv2d", "conv", aten=[call("aten::convolution")]),
    ])
    view, drop, conv = inv.operators
    assert cost_basis(classified(view), DEFAULT.effort, True) == ZERO_COST
    assert cost_basis(classified(drop), DEFAULT.effort, True) == ZERO_COST
    assert cost_basis(classified(drop), DEFAULT.effort, False) == VALIDATION_BLOCK  # no ATen recorded anywhere
    assert cost_basis(classified(conv), DEFAULT.effort, True) == VALIDATION_BLOCK
    tripped = classified(conv, reasons=[Reason("decomposes", "decomposes", "dispatcher")])
    assert cost_basis(tripped, DEFAULT.effort, True) == PER_OPERATOR
    assert cost_basis(classified(conv, known=False), DEFAULT.effort, True) == PER_OPERATOR
    assert cost_basis(classified(conv, "param-converted"), DEFAULT.effort, True) == PER_OPERATOR
    assert cost_basis(classified(conv), CLASSIC.effort, True) == PER_OPERATOR
    assert cost_basis(classified(view), CLASSIC.effort, True) == PER_OPERATOR


def test_extra_signatures_count_only_different_limits():
    nodes = [node(f"c{i}", "torch.nn.Conv2d", f"c{i}", attrs={"dilation": 2 + i}, aten=[call("aten::convolution")])
             for i in range(3)]
    (op,) = inventory(nodes).operators
    same = [Reason("param-limit", "m", "limits: dilation", i) for i in range(3)]
    assert distinct_limits(classified(op, "param-converted", reasons=same)) == 1
    other = [*same[:2], Reason("dtype", "m", "dtypes", 2)]
    assert distinct_limits(classified(op, "param-converted", reasons=other)) == 2
    assert distinct_limits(classified(op)) == 0


def test_activities_scale_with_units_and_cap():
    lines = {a.name: a for a in activities({"finding": 20, "direct_type": 3, "dtype_at_risk": 1,
                                            "type_at_risk": 2}, DEFAULT)}
    perf = lines["performance"].person_days
    assert (perf.low, perf.likely, perf.high) == pytest.approx((3.25, 3.5, 4.5))  # 20 x 0.25 = 5, capped at 3
    assert "capped at 3" in lines["performance"].basis
    acc = lines["accuracy"].person_days
    assert acc.likely == pytest.approx(0.5 + 0.5 + 2 * 0.25)
    assert activities({"finding": 5}, CLASSIC) == ()


def test_origin_from_the_source_frame():
    assert origin_of("/venv/lib/python3.12/site-packages/transformers/masking_utils.py:12") == "transformers"
    assert origin_of("/usr/lib/python3/dist-packages/six.py:3") == "six"
    assert origin_of("examples/model.py:4") == "project"
    assert origin_of(None) == "project"


# --------------------------------------------------------------------------- profiles


def test_profiles_are_shipped_and_named():
    assert profile_names() == ("default", "classic")
    force = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"]["wheel"][
        "force-include"]
    assert force["profiles"] == "opassess/_bundled/profiles" and force["weights.toml"].endswith("weights.toml")
    assert (ROOT / "profiles" / "classic.toml").is_file()


def test_unknown_profile_names_the_known_ones():
    with pytest.raises(ConfigError, match="unknown weights profile 'fast'.*default, classic"):
        load_weights(None, "fast")


def test_weights_file_applies_on_top_of_the_profile(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text("[effort.direct]\nhigh = 3.0\n")
    weights = load_weights(path, "classic")
    assert weights.profile == "classic"
    assert (weights.effort.categories["direct"].low, weights.effort.categories["direct"].high) == (1.0, 3.0)
    assert weights.effort.block_direct is False  # from the profile
    assert "classic.toml" in weights.source and weights.source.endswith("mine.toml")


def test_bad_activity_is_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text("[activities.environment]\nlikely = 9.0\n")
    with pytest.raises(ConfigError, match="expected low <= likely <= high"):
        load_weights(path)
    path.write_text("[activities.performance]\nper = { findings = 1.0 }\n")
    with pytest.raises(ConfigError, match="unknown unit"):
        load_weights(path)
