"""CSV report: one row per operator type, parses back with pandas, formula-looking names made inert."""
from __future__ import annotations

import io
from dataclasses import replace

import pandas as pd
import pytest

from opassess.report import render
from tests.report.support import example_files, real_assessment, synthetic_example


@pytest.mark.parametrize("name", [p.stem for p in example_files()])
def test_one_row_per_operator(name):
    assessment = real_assessment(name)
    frame = pd.read_csv(io.StringIO(render(assessment, "csv")))
    assert len(frame) == len(assessment.inventory.operators)
    assert sorted(frame["op"]) == sorted(o.key for o in assessment.inventory.operators)
    assert frame["count"].sum() == sum(o.count for o in assessment.inventory.operators)
    # the operators' own efforts (the validation-block shares included); the model-level lines are in the JSON
    per_operator = sum(op.person_days.likely for op in assessment.estimate.ops)
    assert frame["person_days_likely"].sum() == pytest.approx(per_operator, abs=0.01 * len(frame))


def test_values_of_the_hand_built_assessment():
    frame = pd.read_csv(io.StringIO(render(synthetic_example("resnet_like"), "csv")))
    conv = frame[frame["op"] == "torch.nn.Conv2d"].iloc[0]
    assert (conv["category"], conv["count"], conv["signatures"]) == ("direct", 20, 11)
    assert (conv["person_days_low"], conv["person_days_likely"], conv["person_days_high"]) == (1.0, 1.5, 2.0)
    assert conv["aten"] == "aten::convolution"
    assert conv["modules"].split("; ")[:2] == ["conv1", "layer1.0.conv1"]
    assert frame["person_days_likely"].sum() == 27.5  # 12 + 2 x 4 + 5 x 1.5
    assert list(frame["category"]).count("param-converted") == 2


def test_formula_like_names_are_made_inert():
    assessment = synthetic_example("resnet_like")
    first = assessment.inventory.operators[0]
    evil_op = replace(first, key="=HYPERLINK(\"http://x\")")
    classified = tuple(replace(c, operator=evil_op) if c.operator is first else c for c in assessment.classified)
    inventory = replace(assessment.inventory, operators=(evil_op,) + assessment.inventory.operators[1:])
    text = render(replace(assessment, inventory=inventory, classified=classified, estimate=None), "csv")
    frame = pd.read_csv(io.StringIO(text))
    assert "'=HYPERLINK(\"http://x\")" in list(frame["op"])
