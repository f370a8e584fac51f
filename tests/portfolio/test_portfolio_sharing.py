"""Portfolio sharing is monotone by construction: over seeded random portfolios of the bundled examples and test
models (each assessed once here, some in bf16 on 910A for a precision decision, some twice under two names), the
shared plan never costs more than the models one by one and no model's marginal cost is above its own, on the low,
likely and high points and on the simulated P10, P50 and P90."""
from __future__ import annotations

import random
from pathlib import Path

import pytest

from opassess.ci.snapshot import read_snapshot
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.portfolio import plan_portfolio
from opassess.portfolio.plan import bands
from opassess.records import Effort
from opassess.score.weights.load import load_weights
from tests.ci.records import op, report, sig

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = load_weights(None)
SLACK = 1e-9

MODELS = [  # (file, product, dtype): the bundled examples and test models with shared and own work
    ("examples/resnet_like.py", "Atlas A2", None),
    ("examples/custom_op_model.py", "Atlas A2", None),
    ("examples/transformer_lm.py", "Atlas A2", None),
    ("examples/llama_like.py", "Atlas A2", None),
    ("examples/llama_like.py", "910A", "bfloat16"),  # a precision decision
    ("examples/lstm_tagger.py", "Atlas A2", None),
    ("tests/models/deform_conv.py", "Atlas A2", None),
    ("tests/models/channels_last.py", "Atlas A2", None),  # a layout decision
    ("tests/models/attention_libraries.py", "Atlas A2", None),  # an attention decision
    ("tests/models/two_custom_ops.py", "Atlas A2", None),
    ("tests/models/bf16_block.py", "910A", "bfloat16"),
    ("tests/models/lgamma.py", "Atlas A2", None),
]


@pytest.fixture(scope="module")
def snapshots():
    found = {}
    for path, product, dtype in MODELS:
        name = f"{Path(path).stem}-{product.replace(' ', '')}-{dtype or 'fp32'}"
        found[name] = read_snapshot(assess(ScanOptions(target=str(ROOT / path), product=product, dtype=dtype)))
    return found


def at_most(a: Effort, b: Effort) -> bool:
    return a.low <= b.low + SLACK and a.likely <= b.likely + SLACK and a.high <= b.high + SLACK


def check(portfolio):
    plan, _, standalone, shared = plan_portfolio(portfolio, WEIGHTS)
    for entry in plan:
        assert at_most(entry.marginal, entry.standalone), (entry.name, entry.marginal, entry.standalone)
    assert at_most(shared, standalone), (shared, standalone)
    shared_band, alone_band = bands(plan, WEIGHTS)
    assert all(s <= a + SLACK for s, a in zip(shared_band, alone_band, strict=True)), (shared_band, alone_band)
    return plan, standalone, shared, shared_band, alone_band


def test_random_portfolios_of_real_models_never_cost_more_shared(snapshots):
    rng = random.Random(40)
    names = sorted(snapshots)
    for _ in range(60):
        chosen = [rng.choice(names) for _ in range(rng.randint(1, 7))]  # repeats: the same model under two names
        portfolio = [(f"{n}#{i}", n, snapshots[n]) for i, n in enumerate(chosen)]
        plan, standalone, _, _, _ = check(portfolio)
        # alone, each model costs its report's total: the pieces add up to it
        for entry, (_, _, snapshot) in zip(sorted(plan, key=lambda p: p.name), sorted(portfolio), strict=True):
            assert entry.standalone.likely == pytest.approx(snapshot.total.likely, abs=0.03)


def test_a_model_twice_costs_its_own_model_level_work_the_second_time(snapshots):
    resnet = snapshots["resnet_like-AtlasA2-fp32"]
    plan, standalone, shared, _, _ = check([("a", "a.py", resnet), ("b", "b.py", resnet)])
    second = plan[1]
    activities = dict(resnet.activities)
    # every operator and the environment bring-up are paid by the first; the second pays its own validation,
    # accuracy alignment and tuning (its outputs compared, its accuracy aligned, its step tuned)
    own = sum(days.likely for name, days in activities.items() if name != "environment")
    assert second.marginal.likely == pytest.approx(own, abs=0.02)
    assert second.costs == ()
    assert shared.likely < standalone.likely


def test_random_hand_built_portfolios_never_cost_more_shared():
    """Reports built here: random operators, categories, signatures, counts and ranges, half of them listing
    activities and decisions (the environment bring-up shared, a decision by its cause), half not."""
    rng = random.Random(4040)
    names = [f"op{i}" for i in range(12)]
    categories = ["direct", "param-converted", "custom-dev"]
    for _ in range(80):
        portfolio = []
        for m in range(rng.randint(1, 6)):
            ops = []
            for name in rng.sample(names, rng.randint(1, 6)):
                category = rng.choice(categories)
                low = rng.uniform(0.0, 10.0)
                likely = low + rng.uniform(0.0, 5.0)
                signatures = [sig(category, shapes=([1, rng.choice([4, 8, 16])],), count=rng.randint(1, 30))
                              for _ in range(rng.randint(1, 3))]
                entry = op(name, category, days=(low, likely, likely + rng.uniform(0.0, 10.0)),
                           composite=rng.random(), signatures=signatures)
                entry["cost"] = rng.choice(["per-operator", "validation-block"]) if category == "direct" \
                    else "per-operator"
                ops.append(entry)
            document = report(f"m{m}.py", ops)
            if rng.random() < 0.5:
                env = rng.choice([(0.5, 1.0, 2.0), (0.4, 1.2, 2.5)])
                document["summary"]["activities"] = [
                    {"name": "environment", "title": "", "basis": "",
                     "person_days": dict(zip(("low", "likely", "high"), env, strict=True))},
                    {"name": "validation", "title": "", "person_days": {"low": 0.25, "likely": 0.5, "high": 1.0},
                     "basis": ""}]
                document["summary"]["decisions"] = [
                    {"name": "precision", "cause": rng.choice(["bf16 on 910A", "fp64"]),
                     "once": {"low": 1.0, "likely": 2.0, "high": rng.choice([4.0, 6.0])}}]
                extra = sum(a["person_days"]["likely"] for a in document["summary"]["activities"]) + 2.0
                document["summary"]["person_days"]["likely"] += extra
                document["summary"]["person_days"]["high"] += extra + 4.0
                document["target"] = rng.choice(["Atlas A2", "Atlas A3"])
            portfolio.append((f"m{m}", f"m{m}.py", read_snapshot(document)))
        check(portfolio)
