"""JUnit reporter: one test case per operator type plus the model total, failed where the policy is breached."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace

from opassess.ci.policy import Policy, evaluate
from opassess.ci.snapshot import read_snapshot
from opassess.report import REPORTERS, RenderContext
from opassess.report.formats.junit import MODEL_CASE
from tests.ci.records import op, report

# 3 operator types, total likely 12 + 4 + 1.5 = 17.5 person-days.
DOCUMENT = report("examples/net.py", [
    op("mylib::fused_gelu", "custom-dev", days=(10.0, 12.0, 16.0), stars=5, source=("examples/net.py:42",)),
    op("torch.nn.BatchNorm2d", "param-converted", days=(3.0, 4.0, 5.0), stars=3),
    op("torch.nn.Conv2d\x01<&>", "direct"),  # a name XML cannot hold as is
])


def render(breaches=()):
    text = REPORTERS["junit"].render(SimpleNamespace(document=DOCUMENT), RenderContext(breaches=tuple(breaches)))
    return text, ET.fromstring(text.split("\n", 1)[1])


def cases(root):
    return {case.get("name"): case for case in root.iter("testcase")}


def test_one_case_per_operator_type_and_one_for_the_total_all_passing_without_a_policy():
    text, root = render()
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "0")
    # the control character is shown as its escape (report/text.py's inert)
    assert list(cases(root)) == ["mylib::fused_gelu", "torch.nn.BatchNorm2d", "torch.nn.Conv2d\\x01<&>", MODEL_CASE]
    assert {c.get("classname") for c in root.iter("testcase")} == {"opassess.examples.net"}
    out = cases(root)["mylib::fused_gelu"].find("system-out").text
    assert "category: custom-dev" in out and "person-days: 12.0 (10.0-16.0)" in out
    assert "person-days: 17.5 (14.0-23.0)" in cases(root)[MODEL_CASE].find("system-out").text


def test_breaching_operators_and_the_total_fail():
    # --fail-on param-converted fails BatchNorm2d and fused_gelu; --max-person-days 10 fails the total (17.5 > 10).
    breaches = evaluate(read_snapshot(DOCUMENT), Policy(fail_on=("param-converted",), max_person_days=10))
    _, root = render(breaches)
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("4", "3")
    failed = {name for name, case in cases(root).items() if case.find("failure") is not None}
    assert failed == {"mylib::fused_gelu", "torch.nn.BatchNorm2d", MODEL_CASE}
    failure = cases(root)["mylib::fused_gelu"].find("failure")
    assert failure.get("type") == "fail-on" and "examples/net.py:42" in failure.get("message")
    assert cases(root)[MODEL_CASE].find("failure").get("type") == "max-person-days"


def test_the_model_case_says_the_headline_its_gate_compares():
    """--max-person-days fails the model case on P50 (the headline); its output said 'person-days: 17.5 (14.0-23.0)',
    the unlabelled sum of the most likely values, beside a failure message quoting P50 19.2."""
    document = report("examples/net.py", DOCUMENT["operators"])
    document["summary"].update(p10=16.0, p50=19.2, p90=23.0, headline="19.2 person-days (P10-P90 16.0-23.0)")
    breaches = evaluate(read_snapshot(document), Policy(max_person_days=18))
    text = REPORTERS["junit"].render(SimpleNamespace(document=document), RenderContext(breaches=breaches))
    case = cases(ET.fromstring(text.split("\n", 1)[1]))[MODEL_CASE]
    assert "(P50) 19.2 person-days" in case.find("failure").get("message")
    assert case.find("system-out").text == ("estimated effort: 19.2 person-days (P10-P90 16.0-23.0); sum of the most "
                                            "likely values 17.5, of the lows and highs 14.0-23.0\n")
