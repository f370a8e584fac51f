"""Baseline diff: added, removed, re-classified and changed operators, the change in effort, Markdown and JSON."""
from __future__ import annotations

import json

import pytest

from opassess.ci.diff import diff_snapshots, effort_delta
from opassess.ci.diff.format import render_diff
from opassess.ci.snapshot import read_snapshot
from opassess.errors import ReportError
from opassess.records import Effort
from tests.ci.records import op, report

BASE = [
    op("torch.nn.Conv2d", "direct", days=(1.0, 1.5, 2.0), count=4),
    op("torch.nn.BatchNorm2d", "direct", days=(1.0, 1.5, 2.0)),
    op("torch.nn.Dropout", "direct", days=(1.0, 1.0, 1.0)),
]
# New: Dropout removed (-1.0), BatchNorm2d re-classified direct -> param-converted (1.5 -> 4.0: +2.5),
# Conv2d used 6 times instead of 4 (1.5 -> 1.7: +0.2), mylib::fused_gelu added custom-dev (+12.0).
NEW = [
    op("mylib::fused_gelu", "custom-dev", days=(10.0, 12.0, 16.0), stars=5, source=("m.py:42",), kind="custom"),
    op("torch.nn.Conv2d", "direct", days=(1.1, 1.7, 2.2), count=6),
    op("torch.nn.BatchNorm2d", "param-converted", days=(3.0, 4.0, 5.0), stars=3),
]


@pytest.fixture
def diff():
    return diff_snapshots(read_snapshot(report("m.py", BASE)), read_snapshot(report("m.py", NEW)))


def test_effort_delta_subtracts_each_point():
    assert effort_delta(Effort(4, 5, 6), Effort(1, 2, 3)) == Effort(3, 3, 3)
    assert effort_delta(None, Effort(1, 2, 3)) == Effort(-1, -2, -3)


def test_changes_are_listed_added_reclassified_changed_removed(diff):
    assert [(c.change, c.op) for c in diff.changes] == [
        ("added", "mylib::fused_gelu"),
        ("reclassified", "torch.nn.BatchNorm2d"),
        ("changed", "torch.nn.Conv2d"),
        ("removed", "torch.nn.Dropout"),
    ]
    added = diff.of("added")[0]
    assert added.before is None and added.after.category == "custom-dev" and added.worse


def test_the_change_in_effort_is_worked_per_operator_and_in_total(diff):
    deltas = {c.op: round(c.effort.likely, 2) for c in diff.changes}
    assert deltas == {"mylib::fused_gelu": 12.0, "torch.nn.BatchNorm2d": 2.5, "torch.nn.Conv2d": 0.2,
                      "torch.nn.Dropout": -1.0}
    # totals: before 1.5 + 1.5 + 1.0 = 4.0; after 12.0 + 1.7 + 4.0 = 17.7; change +13.7 (= 12 + 2.5 + 0.2 - 1)
    assert round(diff.effort.likely, 2) == 13.7


def test_identical_reports_have_no_changes():
    same = diff_snapshots(read_snapshot(report("m.py", BASE)), read_snapshot(report("m.py", BASE)))
    assert same.changes == () and same.effort == Effort(0.0, 0.0, 0.0)
    assert "No operator was added, removed or re-classified" in render_diff(same)


def test_markdown_for_a_pull_request_comment(diff):
    text = render_diff(diff, "md")
    assert "**+13.7**" in text
    assert "1 added · 1 re-classified · 1 changed · 1 removed" in text
    assert "**New custom development:** `mylib::fused_gelu`" in text
    assert "| `mylib::fused_gelu` | custom-dev | 1 | +12.0 | `m.py:42` |" in text
    assert "| `torch.nn.BatchNorm2d` | direct → param-converted | 1 | 1.5 → 4.0 | +2.5 |" in text
    assert "| `torch.nn.Dropout` | direct | 1 | -1.0 |" in text


def test_markdown_leads_with_p50_as_the_reports_do(diff):
    """Reports carrying P50 (the headline everywhere else) are compared by it: the step summary above the diff says
    P50, the diff must not say the sum of the most likely values as the estimated effort."""
    before, after = report("m.py", BASE), report("m.py", NEW)
    before["summary"].update(p10=3.6, p50=4.3, p90=5.0)
    after["summary"].update(p10=16.5, p50=19.0, p90=21.5)
    banded = diff_snapshots(read_snapshot(before), read_snapshot(after))
    text = render_diff(banded, "md")
    assert "Estimated effort: **19.0 person-days**, baseline 4.3 (**+14.7**)." in text
    assert json.loads(render_diff(banded, "json"))["p50"] == {"before": 4.3, "after": 19.0, "change": 14.7}
    assert json.loads(render_diff(diff, "json"))["p50"] is None  # reports without a simulation: the likely sums


def test_a_baseline_of_another_model_is_said_so(diff):
    assert diff.other_model is None and "another model" not in render_diff(diff)
    other = diff_snapshots(read_snapshot(report("old/net.py", BASE, class_name="OldNet")),
                           read_snapshot(report("m.py", NEW)))
    assert other.other_model == "old/net.py:build_model (OldNet)"
    assert "the baseline is a report of another model, `old/net.py:build_model (OldNet)`" in render_diff(other)
    assert json.loads(render_diff(other, "json"))["baseline_model"] == "old/net.py:build_model (OldNet)"
    another_factory = diff_snapshots(read_snapshot(report("m.py", BASE, entry="build_small")),
                                     read_snapshot(report("m.py", NEW)))
    assert another_factory.other_model == "m.py:build_small (Net)"


def test_models_match_by_entry_and_class_not_by_path():
    # The base revision checked out in a worktree: another path, the same factory and class.
    moved = diff_snapshots(read_snapshot(report("/tmp/base/models/net.py", BASE)),
                           read_snapshot(report("models/net.py", BASE)))
    assert moved.other_model is None and "another model" not in render_diff(moved)


def test_labels_name_models_explicitly_when_both_reports_carry_one():
    renamed = diff_snapshots(read_snapshot(report("a.py", BASE, class_name="NetV1", label="detector")),
                             read_snapshot(report("b.py", BASE, class_name="NetV2", label="detector")))
    assert renamed.other_model is None  # same label: the same model, whatever its class became
    other = diff_snapshots(read_snapshot(report("m.py", BASE, label="encoder")),
                           read_snapshot(report("m.py", BASE, label="decoder")))
    assert other.other_model == "encoder (Net)"
    # one side without a label (a baseline written before --label): factory and class decide
    half = diff_snapshots(read_snapshot(report("x.py", BASE)), read_snapshot(report("m.py", BASE, label="net")))
    assert half.other_model is None


def test_markdown_escapes_model_supplied_names():
    evil = [op("x|<script>", "custom-dev", source=("m.py:1",))]
    text = render_diff(diff_snapshots(read_snapshot(report("m.py", [])), read_snapshot(report("m.py", evil))))
    assert "<script>" not in text.replace("`x\\|<script>`", "")


def test_json_document(diff):
    document = json.loads(render_diff(diff, "json"))
    assert document["diff_format_version"] == 1
    assert document["person_days"]["change"]["likely"] == 13.7
    assert [c["change"] for c in document["changes"]] == ["added", "reclassified", "changed", "removed"]
    assert document["changes"][0]["before"] is None and document["changes"][0]["after"]["category"] == "custom-dev"


def test_a_file_that_is_not_a_report_is_one_clear_error(tmp_path):
    bad = tmp_path / "old.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(ReportError, match="format_version"):
        read_snapshot(bad)
    with pytest.raises(ReportError, match="no such report"):
        read_snapshot(tmp_path / "missing.json")
    bad.write_text("{")
    with pytest.raises(ReportError, match="not a JSON report"):
        read_snapshot(bad)


def test_a_report_malformed_inside_is_one_error_naming_the_file_and_the_place(tmp_path):
    """A baseline edited by hand (or cut short) is read back once, at the boundary: the error says where."""
    document = report("m.py", [op("a"), op("b")])
    document["operators"][1]["risk"] = [1, 2]
    bad = tmp_path / "old.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(ReportError, match=r"old\.json: not an opassess JSON report: missing or malformed "
                                          r"operators\[1\]\.risk: expected an object, got list$"):
        read_snapshot(bad)


@pytest.mark.parametrize(("field", "value", "said"), [
    ("op", 5, r"operators\[1\]\.op: expected a string, got a number"),  # an operator type gone, not "no change"
    ("count", None, r"operators\[1\]\.count: expected an integer, got null"),
    ("count", True, r"operators\[1\]\.count: expected an integer, got a boolean"),
    ("category", ["direct"], r"operators\[1\]\.category: expected a string, got a list"),
])
def test_a_plain_value_of_the_wrong_json_type_is_refused_naming_the_place(tmp_path, field, value, said):
    document = report("m.py", [op("a"), op("b")])
    document["operators"][1][field] = value
    bad = tmp_path / "old.json"
    bad.write_text(json.dumps(document))
    with pytest.raises(ReportError, match=rf"old\.json: not an opassess JSON report: missing or malformed {said}$"):
        read_snapshot(bad)
