"""JUnit XML report: one test case per operator type and per source site (failed when it breaches the CI policy) for
CI dashboards."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

from ..reading import parts_of
from ..registry import RenderContext, register
from ..sections.operators import OperatorPart
from ..sections.source import SitePart, is_work
from ..text import days, days_detail, inert, step_text

if TYPE_CHECKING:
    from ..view import View

MODEL_CASE = "(model) estimated effort"  # the test case that carries --max-person-days
# Characters XML 1.0 cannot hold at all (model-supplied names could contain them).
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any, lines: bool = False) -> str:
    """Text for an attribute (one line) or, with `lines`, an element body whose line feeds are kept: control
    characters shown as escapes (report/text.py), anything else XML 1.0 cannot hold replaced."""
    text = "" if value is None else str(value)
    text = "\n".join(inert(line) for line in text.split("\n")) if lines else inert(text)
    return _NOT_XML.sub("\ufffd", text)


def _class_name(source: str) -> str:
    """'examples/resnet_like.py' -> 'opassess.examples.resnet_like' (dashboards group test cases by class name)."""
    stem = source[:-3] if source.endswith(".py") else source
    return "opassess." + ".".join(part for part in re.split(r"[/\\:]+", stem) if part)


def _details(op: OperatorPart) -> str:
    days, risk = op.person_days, op.risk
    lines = [f"category: {op.category or 'unclassified'}"
             + (" (unknown to the knowledge base)" if op.known is False else "")
             + (f", confidence {op.confidence}" if op.confidence else ""),
             f"calls: {op.count}"]
    step = step_text(op.kind, op.backward_aten, training=True)  # backward ops come from --train
    if step == "optimizer":
        lines.append("step: optimizer")
    elif step != "forward":
        lines.append(f"step: {step}; backward ATen ops: " + ", ".join(op.backward_aten or ()))
    if days:
        lines.append(f"person-days: {days_detail(days.likely, days.low, days.high)}")
    if risk:
        lines.append(f"risk: {risk.stars} stars (likelihood {risk.likelihood}, impact {risk.impact})")
    if op.replacement:
        lines.append(f"replacement: {op.replacement}")
    if op.source:
        lines.append("source: " + ", ".join(op.source))
    return "\n".join(lines) + "\n"


def _site_details(site: SitePart) -> str:
    days, risk = site.person_days, site.risk
    lines = [f"source site: {site.file}:{site.line}: {site.code}",
             f"category: {site.category}, confidence {site.confidence}", f"route: {site.npu_route}",
             *(f"note: {n}" for n in site.notes), "evidence: " + "; ".join(site.evidence)]
    if days:
        lines.append(f"person-days: {days_detail(days.likely, days.low, days.high)}")
    if risk:
        lines.append(f"risk: {risk.stars} stars (likelihood {risk.likelihood}, impact {risk.impact})")
    return "\n".join(lines) + "\n"


def _case(parent: ET.Element, class_name: str, name: str, failures: list[Any], output: str) -> None:
    case = ET.SubElement(parent, "testcase", {"classname": _text(class_name), "name": _text(name), "time": "0"})
    if failures:
        failure = ET.SubElement(case, "failure", {"type": _text(failures[0].rule),
                                                  "message": _text(failures[0].message)})
        failure.text = _text("\n".join(f"{b.rule}: {b.message}" for b in failures) + "\n", lines=True)
    out = ET.SubElement(case, "system-out")
    out.text = _text(output, lines=True)


@register("junit", extension=".xml", description="JUnit XML: one test case per operator type, failed when it "
                                                 "breaches the CI policy")
def render_junit(view: View, context: RenderContext) -> str:
    """A <testsuite> with one <testcase> per operator type and one for the model's total; a test case fails when a
    breach in context.breaches names its operator (the total's when it names none)."""
    document = parts_of(view)
    source = document.model.source
    class_name = _text(_class_name(source))
    by_op: dict[str | None, list[Any]] = {}
    for breach in context.breaches:
        by_op.setdefault(breach.op, []).append(breach)
    operators = document.operators
    sites = [site for site in document.source_findings  # work only: notes and covered sites aside
             if is_work(site) and not site.covered_by]
    tests = len(operators) + len(sites) + 1
    failed = sum(1 for op in operators if by_op.get(op.op)) + (1 if by_op.get(None) else 0) \
        + sum(1 for site in sites if by_op.get(site.key))
    seconds = sum(document.seconds.values())
    suites = ET.Element("testsuites", {"name": "opassess", "tests": str(tests), "failures": str(failed),
                                       "errors": "0", "time": f"{seconds:.3f}"})
    suite = ET.SubElement(suites, "testsuite", {"name": _text(f"opassess: {source}"), "tests": str(tests),
                                                "failures": str(failed), "errors": "0", "skipped": "0",
                                                "time": f"{seconds:.3f}"})
    properties = ET.SubElement(suite, "properties")
    for name, value in (("model", source), ("target", document.target), ("torch_npu", document.torch_npu),
                        ("kb_version", document.kb_version), ("opassess", document.tool.version)):
        ET.SubElement(properties, "property", {"name": name, "value": _text(value)})
    for op in operators:
        _case(suite, class_name, op.op, by_op.get(op.op, []), _details(op))
    for site in sites:
        _case(suite, class_name, site.key or f"{site.file}:{site.line} {site.subject}",
              by_op.get(site.key, []), _site_details(site))
    total, headline = document.summary.person_days, document.summary.headline
    # the headline (P50 and its band) where the report has one: the figure --max-person-days compares
    summary = (f"estimated effort: {headline}; sum of the most likely values {days(total.likely)}, of the lows "
               f"and highs {days(total.low)}-{days(total.high)}\n" if total and headline
               else f"person-days: {days_detail(total.likely, total.low, total.high)}\n" if total
               else "not estimated\n")
    _case(suite, class_name, MODEL_CASE, by_op.get(None, []), summary)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
