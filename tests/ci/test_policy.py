"""CI policy: each rule on a hand-built report, the category threshold, and the diff-only (--fail-on-new) reading."""
from __future__ import annotations

import pytest

from opassess.ci.diff import diff_snapshots
from opassess.ci.policy import Policy, evaluate
from opassess.ci.snapshot import read_snapshot
from tests.ci.records import op, report

# A legacy model: Conv2d direct (1.5 d, 2 stars), BatchNorm2d param-converted (4 d, 3 stars),
# mylib::legacy custom-dev (12 d, 5 stars, unknown to the KB). Total likely 1.5 + 4 + 12 = 17.5.
LEGACY = [
    op("torch.nn.Conv2d", "direct", days=(1.0, 1.5, 2.0), stars=2, source=("m.py:10",)),
    op("torch.nn.BatchNorm2d", "param-converted", days=(3.0, 4.0, 5.0), stars=3, source=("m.py:11",)),
    op("mylib::legacy", "custom-dev", days=(10.0, 12.0, 16.0), stars=5, known=False, source=("m.py:12",)),
]


def snap(operators, **kw):
    return read_snapshot(report("m.py", operators, **kw))


def test_an_empty_policy_breaches_nothing():
    assert not Policy().active
    assert evaluate(snap(LEGACY), Policy()) == ()


def test_fail_on_custom_dev_names_the_operator_and_its_source():
    breaches = evaluate(snap(LEGACY), Policy(fail_on=("custom-dev",)))
    assert [(b.rule, b.op, b.source) for b in breaches] == [("fail-on", "mylib::legacy", "m.py:12")]
    assert "custom-dev" in breaches[0].message and "m.py:12" in breaches[0].message


def test_fail_on_param_converted_also_fails_custom_dev():
    # param-converted is a threshold: param-converted and everything worse (custom-dev) breach; direct does not.
    breaches = evaluate(snap(LEGACY), Policy(fail_on=("param-converted",)))
    assert [b.op for b in breaches] == ["torch.nn.BatchNorm2d", "mylib::legacy"]


def test_fail_on_unknown_only_fails_operators_the_kb_does_not_know():
    breaches = evaluate(snap(LEGACY), Policy(fail_on=("unknown",)))
    assert [b.op for b in breaches] == ["mylib::legacy"]
    assert "unknown to the knowledge base" in breaches[0].message


def test_two_fail_on_reasons_for_one_operator_are_one_line():
    breaches = evaluate(snap(LEGACY), Policy(fail_on=("custom-dev", "unknown")))
    assert len(breaches) == 1
    assert "custom-dev, unknown to the knowledge base" in breaches[0].message


def test_max_person_days_compares_the_likely_total_of_a_report_without_p50():
    assert evaluate(snap(LEGACY), Policy(max_person_days=17.5)) == ()  # 17.5 is not more than 17.5
    breaches = evaluate(snap(LEGACY), Policy(max_person_days=17))
    assert [(b.rule, b.op) for b in breaches] == [("max-person-days", None)]
    assert "17.5 person-days" in breaches[0].message


def test_max_person_days_gates_p50_when_the_report_has_one():
    # the same operators (likely sum 17.5) in a report whose simulation put P50 at 19.2 (P10 16.0, P90 23.0)
    document = report("m.py", LEGACY)
    document["summary"].update(p10=16.0, p50=19.2, p90=23.0)
    assert evaluate(read_snapshot(document), Policy(max_person_days=19.2)) == ()
    breaches = evaluate(read_snapshot(document), Policy(max_person_days=18))
    assert [b.rule for b in breaches] == ["max-person-days"]
    assert "(P50) 19.2 person-days" in breaches[0].message


def test_max_risk_fails_operators_above_the_stars():
    # stars 2, 3, 5: --max-risk 3 fails only the 5-star operator, --max-risk 2 the 3- and 5-star ones.
    assert [b.op for b in evaluate(snap(LEGACY), Policy(max_risk=3))] == ["mylib::legacy"]
    assert [b.op for b in evaluate(snap(LEGACY), Policy(max_risk=2))] == ["torch.nn.BatchNorm2d", "mylib::legacy"]


def test_policy_rejects_values_outside_its_rules():
    with pytest.raises(ValueError):
        Policy(fail_on=("slow",))
    with pytest.raises(ValueError):
        Policy(max_risk=6)


# ---------------------------------------------------------------- the diff reading (--fail-on-new)

NEW_CUSTOM = op("mylib::fresh", "custom-dev", days=(10.0, 11.0, 14.0), stars=4, known=True, source=("m.py:20",))


def test_on_a_diff_a_known_custom_op_does_not_breach_but_a_new_one_does():
    before, after = snap(LEGACY), snap(LEGACY + [NEW_CUSTOM])
    diff = diff_snapshots(before, after)
    breaches = evaluate(diff, Policy(fail_on=("custom-dev",)))
    assert [b.op for b in breaches] == ["mylib::fresh"]
    assert breaches[0].message.startswith("new mylib::fresh: custom-dev")
    # the whole new report, read without the baseline, also fails on the legacy one
    assert [b.op for b in evaluate(after, Policy(fail_on=("custom-dev",)))] == ["mylib::legacy", "mylib::fresh"]


def test_on_a_diff_a_reclassification_to_worse_breaches_and_says_what_it_was():
    worse = [LEGACY[0], op("torch.nn.BatchNorm2d", "custom-dev", days=(10.0, 12.0, 16.0), stars=3,
                           source=("m.py:11",)), LEGACY[2]]
    breaches = evaluate(diff_snapshots(snap(LEGACY), snap(worse)), Policy(fail_on=("custom-dev",)))
    assert [b.op for b in breaches] == ["torch.nn.BatchNorm2d"]
    assert "custom-dev (was param-converted)" in breaches[0].message


def test_on_a_diff_max_person_days_bounds_the_growth():
    # 17.5 -> 17.5 + 11 = 28.5: growth 11.0 person-days
    diff = diff_snapshots(snap(LEGACY), snap(LEGACY + [NEW_CUSTOM]))
    assert evaluate(diff, Policy(max_person_days=11)) == ()
    breaches = evaluate(diff, Policy(max_person_days=10))
    assert [b.rule for b in breaches] == ["max-person-days"]
    assert "grew by 11.0 person-days (17.5 -> 28.5)" in breaches[0].message


def test_on_a_diff_max_person_days_bounds_the_growth_of_p50_when_both_reports_have_one():
    """The headline is P50: a gate on the growth reads P50 after - P50 before, not the sums of the most likely values
    (which a precision plan or any right-skewed range moves less: here likely 17.5 -> 28.5, +11.0; P50 19.2 -> 32.0,
    +12.8)."""
    before, after = report("m.py", LEGACY), report("m.py", LEGACY + [NEW_CUSTOM])
    before["summary"].update(p10=16.0, p50=19.2, p90=23.0)
    after["summary"].update(p10=27.0, p50=32.0, p90=38.0)
    diff = diff_snapshots(read_snapshot(before), read_snapshot(after))
    assert evaluate(diff, Policy(max_person_days=12.8)) == ()
    breaches = evaluate(diff, Policy(max_person_days=12))
    assert [b.rule for b in breaches] == ["max-person-days"]
    assert "(P50) grew by 12.8 person-days (19.2 -> 32.0)" in breaches[0].message


def test_on_a_diff_max_risk_fails_only_stars_that_rose_above_the_limit():
    # legacy 5 stars stays 5 (no breach); Conv2d 2 -> 4 rises above 3 (breach)
    riskier = [op("torch.nn.Conv2d", "direct", days=(1.0, 1.5, 2.0), stars=4, source=("m.py:10",))] + LEGACY[1:]
    breaches = evaluate(diff_snapshots(snap(LEGACY), snap(riskier)), Policy(max_risk=3))
    assert [b.op for b in breaches] == ["torch.nn.Conv2d"]
    assert "(was 2)" in breaches[0].message


def test_max_person_days_at_gates_the_named_percentile():
    """--max-person-days-at P90: a lead who budgets for the bad case gates P90 (23.0 here), not the headline P50."""
    document = report("m.py", LEGACY)
    document["summary"].update(p10=16.0, p50=19.2, p90=23.0)
    assert evaluate(read_snapshot(document), Policy(max_person_days=20)) == ()  # P50 19.2 is within 20
    breaches = evaluate(read_snapshot(document), Policy(max_person_days=20, percentile="P90"))
    assert [b.rule for b in breaches] == ["max-person-days"]
    assert "(P90) 23.0 person-days" in breaches[0].message
    assert evaluate(read_snapshot(document), Policy(max_person_days=15.9, percentile="P10")) != ()
    with pytest.raises(ValueError, match="--max-person-days-at 'P75'"):
        Policy(max_person_days=1, percentile="P75")


def test_on_a_diff_max_person_days_at_bounds_the_growth_of_the_named_percentile():
    before, after = report("m.py", LEGACY), report("m.py", LEGACY + [NEW_CUSTOM])
    before["summary"].update(p10=16.0, p50=19.2, p90=23.0)
    after["summary"].update(p10=27.0, p50=32.0, p90=38.0)
    diff = diff_snapshots(read_snapshot(before), read_snapshot(after))
    assert evaluate(diff, Policy(max_person_days=14)) == ()  # P50 grew by 12.8
    breaches = evaluate(diff, Policy(max_person_days=14, percentile="P90"))  # P90 grew by 15.0
    assert "(P90) grew by 15.0 person-days (23.0 -> 38.0)" in breaches[0].message
