"""SARIF 2.1.0 report: every custom-dev or param-converted operator a result located at its source line, and every
such source site at its file and line, for code scanning (GitHub's upload-sarif, GitLab, IDE viewers)."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ...vocabulary import Category
from ..parts import EffortPart, encode
from ..reading import DocumentPart, parts_of
from ..registry import RenderContext, register
from ..sections.operators import OperatorPart
from ..text import days_detail, inert

if TYPE_CHECKING:
    from ..view import View

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"  # relative locations resolve against the checkout root


@dataclass(frozen=True)
class Rule:
    """A SARIF rule: one per category that needs porting work ("direct" operators produce no result)."""

    id: str
    name: str
    short: str  # gets the category's person-day range from the weights the assessment used: " (3-5 person-days)"
    full: str
    level: str


RULES = (
    Rule(Category.CUSTOM_DEV.value, "CustomDevelopmentOperator",
         "Operator needs custom development for the Ascend NPU",
         "No torch_npu / CANN kernel covers this operator as the model uses it: it must be written as a custom "
         "operator (Ascend C or TBE) or the model changed to avoid it.",
         "warning"),
    Rule(Category.PARAM_CONVERTED.value, "ParameterConvertedOperator",
         "Operator runs on the Ascend NPU after a parameter or API conversion",
         "A torch_npu / CANN kernel exists but not for the parameters, dtypes or API the model uses: convert "
         "them or switch to the torch_npu replacement named in the result.",
         "note"),
)
SOURCE_RULES = (  # the source scan's sites: a line of GPU code, not an operator
    Rule(f"source/{Category.CUSTOM_DEV.value}", "CustomDevelopmentSourceSite",
         "GPU-specific code with no route to the Ascend NPU",
         "A CUDA / Triton kernel, kernel-library call or CUDA API the NPU has no counterpart for: port it "
         "(Ascend C, "
         "a triton-ascend rewrite) or change the code to avoid it. The result names the table row behind it.",
         "warning"),
    Rule(f"source/{Category.PARAM_CONVERTED.value}", "ParameterConvertedSourceSite",
         "GPU-specific code that needs a hand edit with a known route to the Ascend NPU",
         "transfer_to_npu does not handle this line, but a route is known (hccl, DDP, a torch_npu op, "
         "triton-ascend): "
         "the result names it and the arguments it drops.",
         "note"),
)
_RULE_INDEX = {rule.id: index for index, rule in enumerate((*RULES, *SOURCE_RULES))}


def _effort_range(view: View, category: str) -> str | None:
    """The category's '3-5' from the display's weights ranges; none when the view carries only a JSON document (the
    SARIF tests render hand-written documents)."""
    display = getattr(view, "display", None)
    return display.effort_range(category) if display is not None else None


def _short(rule: Rule, days_range: str | None) -> str:
    """The rule's short text with its category's range: '... for the Ascend NPU (10+ person-days)'."""
    return f"{rule.short} ({days_range} person-days)" if days_range else rule.short


def _location(source: str) -> dict[str, Any]:
    """'examples/model.py:42' -> a physicalLocation; an absolute path becomes a file: URI, a relative one is
    resolved against %SRCROOT%; a source without a line number gets no region."""
    path, _, line = source.rpartition(":")
    if not (line.isdigit() and path):
        path, line = source, ""
    posix = path.replace("\\", "/")
    if PurePosixPath(posix).is_absolute():
        artifact: dict[str, Any] = {"uri": "file://" + quote(posix)}
    else:
        artifact = {"uri": quote(posix), "uriBaseId": SOURCE_ROOT}
    location: dict[str, Any] = {"artifactLocation": artifact}
    if line and int(line) >= 1:
        location["region"] = {"startLine": int(line)}
    return {"physicalLocation": location}


def _message(op: OperatorPart) -> str:
    parts = [f"{op.op} is {op.category} for the Ascend NPU"]
    if op.known is False:
        parts[0] += " (unknown to the knowledge base)"
    if op.reasons:
        parts.append(op.reasons[0].message.rstrip("."))
    missing = [a for a, ok in op.backward_support.items() if not ok]
    if missing:  # --train: the backward is where a training job meets the gap
        parts.append(f"its backward dispatches {', '.join(missing)} (no NPU kernel)")
    if op.replacement:
        parts.append(f"use {op.replacement}")
    if op.person_days:
        days = op.person_days
        parts.append(f"estimated {days_detail(days.likely, days.low, days.high, ' person-days')}, "
                     f"{op.count} call(s)")
    return "; ".join(parts) + "."


def _days(effort: EffortPart | None) -> dict[str, Any] | None:
    """personDays as the JSON report writes it: {low, likely, high}."""
    return encode(effort) if effort is not None else None


def _result(op: OperatorPart, source: str | None, model_source: str, breached: list[str],
            library: list[str]) -> dict[str, Any]:
    from ..sections.plan import shown_source

    category = op.category or ""
    text = _message(op)
    if library:  # the call sits in an installed package: the result is placed on the project's side of it
        text += f" Called inside {', '.join(shown_source(s) for s in library)} (upstream code)."
    if breached:
        text += " Policy: " + " ".join(breached)
    result: dict[str, Any] = {
        "ruleId": category,
        "ruleIndex": _RULE_INDEX[category],
        "level": "error" if breached else RULES[_RULE_INDEX[category]].level,
        "message": {"text": inert(text)},  # viewers show it as text: no control character of the model's
        "locations": [_location(source)] if source else [],
        "partialFingerprints": {"opassessOperator/v1": f"{model_source}|{op.op}"},
        "properties": {
            "operator": op.op,
            "kind": op.kind,
            "category": category,
            "known": op.known,
            "confidence": op.confidence,
            "calls": op.count,
            "aten": list(op.aten),
            "backwardAten": list(op.backward_aten or ()),  # --train: what its backward dispatched
            "personDays": _days(op.person_days),
            "riskStars": op.risk.stars if op.risk else None,
            "replacement": op.replacement,
        },
    }
    return result


def _repo_path(root: str, file: str) -> str:
    """A source site's file as the checkout sees it: relative to the working directory when the scanned root lies
    under it (`opassess source src/` run from the checkout: 'src/train.py'), else absolute."""
    import os
    from pathlib import Path

    path = Path(root) / file
    try:
        return path.relative_to(Path(os.getcwd()).resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _source_results(document: DocumentPart, model_source: str, breaches: dict[str, list[str]]
                    ) -> list[dict[str, Any]]:
    """One result per custom-dev or param-converted source site, at its file and line (region startLine)."""
    root = (document.source.root if document.source else None) or "."
    results = []
    for site in document.source_findings:
        rule = f"source/{site.category}"
        if rule not in _RULE_INDEX or site.covered_by:
            continue
        days = site.person_days
        parts = [f"{site.subject} ({site.kind}) is {site.category} for the Ascend NPU",
                 f"route: {site.npu_route.rstrip('.')}", *[n.rstrip(".") for n in site.notes],
                 f"evidence: {', '.join(site.evidence)}"]
        if days:
            parts.append(f"estimated {days_detail(days.likely, days.low, days.high, ' person-days')}")
        breached = breaches.get(site.key or "", [])
        text = "; ".join(parts) + "." + (" Policy: " + " ".join(breached) if breached else "")
        results.append({
            "ruleId": rule, "ruleIndex": _RULE_INDEX[rule],
            "level": "error" if breached else SOURCE_RULES[_RULE_INDEX[rule] - len(RULES)].level,
            "message": {"text": text},
            "locations": [_location(f"{_repo_path(root, site.file)}:{site.line}")],
            "partialFingerprints": {"opassessSource/v1": f"{model_source}|{site.key or site.subject}"},
            "properties": {"subject": site.subject, "kind": site.kind, "category": site.category,
                           "confidence": site.confidence, "personDays": _days(site.person_days),
                           "riskStars": site.risk.stars if site.risk else None, "npuRoute": site.npu_route,
                           "evidence": list(site.evidence), "code": site.code},
        })
    return results


@register("sarif", extension=".sarif", description="SARIF 2.1.0: custom-dev and param-converted operators at their "
                                                   "source lines, for code scanning")
def render_sarif(view: View, context: RenderContext) -> str:
    """One result per (operator, source line) for every custom-dev or param-converted operator; breached operators
    (context.breaches) at level error."""
    from ..sections.plan import project_source  # the display's helpers load with a report, not at start-up

    document = parts_of(view)
    model_source = document.model.source
    breaches: dict[str, list[str]] = {}
    for breach in context.breaches:
        if breach.op is not None:
            breaches.setdefault(breach.op, []).append(breach.message)
    results = []
    for op in document.operators:
        if op.category not in _RULE_INDEX:
            continue
        # SARIF locations never point into site-packages: a library frame is attributed to the nearest project
        # frame the trace recorded, else the model file (one result per location, the library lines in the message)
        placed: dict[str | None, list[str]] = {}
        nearest = op.project_source  # the project frames behind the library calls, if the trace saw any
        for source in op.source or [None]:
            where = project_source(source, nearest[0] if nearest and source else model_source)
            placed.setdefault(where, [])
            if source and where != source:
                placed[where].append(source)
        for where, library in placed.items():
            results.append(_result(op, where, model_source, breaches.get(op.op, []), library))
    results += _source_results(document, model_source, breaches)
    rules = [{"id": r.id, "name": r.name, "shortDescription": {"text": _short(r, _effort_range(view, r.id))},
              "fullDescription": {"text": r.full}, "defaultConfiguration": {"level": r.level},
              "help": {"text": r.full}, "properties": {"tags": ["ascend", "npu", "migration"]}}
             for r in (*RULES, *SOURCE_RULES)]
    run = {
        "tool": {"driver": {"name": document.tool.name, "version": document.tool.version, "rules": rules}},
        "automationDetails": {"id": f"opassess/{model_source}/"},
        "results": results,
        "properties": {"model": model_source, "target": document.target, "torchNpu": document.torch_npu,
                       "personDays": _days(document.summary.person_days)},
    }
    sarif = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(sarif, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
