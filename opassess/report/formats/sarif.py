"""SARIF 2.1.0 report: every custom-dev or param-converted operator a result located at its source line, and every
such source site at its file and line, for code scanning (GitHub's upload-sarif, GitLab, IDE viewers)."""
from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ...vocabulary import Category
from ..registry import RenderContext, register
from ..text import days_detail, inert

if TYPE_CHECKING:
    from ..view import View

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SOURCE_ROOT = "%SRCROOT%"  # relative locations resolve against the checkout root
# One rule per category that needs porting work; "direct" operators produce no result. The short text gets the
# category's person-day range from the weights the assessment used: " (3-5 person-days)".
RULES = (
    {"id": Category.CUSTOM_DEV.value, "name": "CustomDevelopmentOperator",
     "short": "Operator needs custom development for the Ascend NPU",
     "full": "No torch_npu / CANN kernel covers this operator as the model uses it: it must be written as a custom "
             "operator (Ascend C or TBE) or the model changed to avoid it.",
     "level": "warning"},
    {"id": Category.PARAM_CONVERTED.value, "name": "ParameterConvertedOperator",
     "short": "Operator runs on the Ascend NPU after a parameter or API conversion",
     "full": "A torch_npu / CANN kernel exists but not for the parameters, dtypes or API the model uses: convert "
             "them or switch to the torch_npu replacement named in the result.",
     "level": "note"},
)
SOURCE_RULES = (  # the source scan's sites: a line of GPU code, not an operator
    {"id": f"source/{Category.CUSTOM_DEV.value}", "name": "CustomDevelopmentSourceSite",
     "short": "GPU-specific code with no route to the Ascend NPU",
     "full": "A CUDA / Triton kernel, kernel-library call or CUDA API the NPU has no counterpart for: port it "
             "(Ascend C, "
             "a triton-ascend rewrite) or change the code to avoid it. The result names the table row behind it.",
     "level": "warning"},
    {"id": f"source/{Category.PARAM_CONVERTED.value}", "name": "ParameterConvertedSourceSite",
     "short": "GPU-specific code that needs a hand edit with a known route to the Ascend NPU",
     "full": "transfer_to_npu does not handle this line, but a route is known (hccl, DDP, a torch_npu op, "
             "triton-ascend): "
             "the result names it and the arguments it drops.",
     "level": "note"},
)
_RULE_INDEX = {rule["id"]: index for index, rule in enumerate((*RULES, *SOURCE_RULES))}


def _effort_range(view: View, category: str) -> str | None:
    """The category's '3-5' from the display's weights ranges; none when the view carries only a JSON document (the
    SARIF tests render hand-written documents)."""
    display = getattr(view, "display", None)
    return display.effort_range(category) if display is not None else None


def _short(rule: dict[str, str], days_range: str | None) -> str:
    """The rule's short text with its category's range: '... for the Ascend NPU (10+ person-days)'."""
    return f"{rule['short']} ({days_range} person-days)" if days_range else rule["short"]


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


def _message(op: dict[str, Any]) -> str:
    days = op.get("person_days") or {}
    parts = [f"{op['op']} is {op['category']} for the Ascend NPU"]
    if op.get("known") is False:
        parts[0] += " (unknown to the knowledge base)"
    if op.get("reasons"):
        parts.append(op["reasons"][0]["message"].rstrip("."))
    missing = [a for a, ok in (op.get("backward_support") or {}).items() if not ok]
    if missing:  # --train: the backward is where a training job meets the gap
        parts.append(f"its backward dispatches {', '.join(missing)} (no NPU kernel)")
    if op.get("replacement"):
        parts.append(f"use {op['replacement']}")
    if days:
        parts.append(f"estimated {days_detail(days['likely'], days['low'], days['high'], ' person-days')}, "
                     f"{op['count']} call(s)")
    return "; ".join(parts) + "."


def _result(op: dict[str, Any], source: str | None, model_source: str, breached: list[str],
            library: list[str]) -> dict[str, Any]:
    from ..sections.plan import shown_source

    category = op["category"]
    text = _message(op)
    if library:  # the call sits in an installed package: the result is placed on the project's side of it
        text += f" Called inside {', '.join(shown_source(s) for s in library)} (upstream code)."
    if breached:
        text += " Policy: " + " ".join(breached)
    result: dict[str, Any] = {
        "ruleId": category,
        "ruleIndex": _RULE_INDEX[category],
        "level": "error" if breached else RULES[_RULE_INDEX[category]]["level"],
        "message": {"text": inert(text)},  # viewers show it as text: no control character of the model's
        "locations": [_location(source)] if source else [],
        "partialFingerprints": {"opassessOperator/v1": f"{model_source}|{op['op']}"},
        "properties": {
            "operator": op["op"],
            "kind": op["kind"],
            "category": category,
            "known": op.get("known"),
            "confidence": op.get("confidence"),
            "calls": op["count"],
            "aten": list(op.get("aten") or ()),
            "backwardAten": list(op.get("backward_aten") or ()),  # --train: what its backward dispatched
            "personDays": op.get("person_days"),
            "riskStars": (op.get("risk") or {}).get("stars"),
            "replacement": op.get("replacement"),
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


def _source_results(document: dict[str, Any], model_source: str, breaches: dict[str, list[str]]
                    ) -> list[dict[str, Any]]:
    """One result per custom-dev or param-converted source site, at its file and line (region startLine)."""
    root = (document.get("source") or {}).get("root") or "."
    results = []
    for site in document.get("source_findings") or ():
        rule = f"source/{site['category']}"
        if rule not in _RULE_INDEX or site.get("covered_by"):
            continue
        days = site.get("person_days") or {}
        parts = [f"{site['subject']} ({site['kind']}) is {site['category']} for the Ascend NPU",
                 f"route: {site['npu_route'].rstrip('.')}", *[n.rstrip(".") for n in site.get("notes") or ()],
                 f"evidence: {', '.join(site.get('evidence') or ())}"]
        if days:
            parts.append(f"estimated {days_detail(days['likely'], days['low'], days['high'], ' person-days')}")
        breached = breaches.get(site.get("key") or "", [])
        text = "; ".join(parts) + "." + (" Policy: " + " ".join(breached) if breached else "")
        results.append({
            "ruleId": rule, "ruleIndex": _RULE_INDEX[rule],
            "level": "error" if breached else SOURCE_RULES[_RULE_INDEX[rule] - len(RULES)]["level"],
            "message": {"text": text},
            "locations": [_location(f"{_repo_path(root, site['file'])}:{site['line']}")],
            "partialFingerprints": {"opassessSource/v1": f"{model_source}|{site.get('key') or site['subject']}"},
            "properties": {"subject": site["subject"], "kind": site["kind"], "category": site["category"],
                           "confidence": site.get("confidence"), "personDays": site.get("person_days"),
                           "riskStars": (site.get("risk") or {}).get("stars"), "npuRoute": site["npu_route"],
                           "evidence": list(site.get("evidence") or ()), "code": site["code"]},
        })
    return results


@register("sarif", extension=".sarif", description="SARIF 2.1.0: custom-dev and param-converted operators at their "
                                                   "source lines, for code scanning")
def render_sarif(view: View, context: RenderContext) -> str:
    """One result per (operator, source line) for every custom-dev or param-converted operator; breached operators
    (context.breaches) at level error."""
    from ..sections.plan import project_source  # the display's helpers load with a report, not at start-up

    document = view.document
    model_source = document["model"]["source"]
    breaches: dict[str, list[str]] = {}
    for breach in context.breaches:
        if breach.op is not None:
            breaches.setdefault(breach.op, []).append(breach.message)
    results = []
    for op in document["operators"]:
        if op.get("category") not in _RULE_INDEX:
            continue
        # SARIF locations never point into site-packages: a library frame is attributed to the nearest project
        # frame the trace recorded, else the model file (one result per location, the library lines in the message)
        placed: dict[str | None, list[str]] = {}
        nearest = op.get("project_source") or []  # the project frames behind the library calls, if the trace saw any
        for source in op.get("source") or [None]:
            where = project_source(source, nearest[0] if nearest and source else model_source)
            placed.setdefault(where, [])
            if source and where != source:
                placed[where].append(source)
        for where, library in placed.items():
            results.append(_result(op, where, model_source, breaches.get(op["op"], []), library))
    results += _source_results(document, model_source, breaches)
    rules = [{"id": r["id"], "name": r["name"], "shortDescription": {"text": _short(r, _effort_range(view, r["id"]))},
              "fullDescription": {"text": r["full"]}, "defaultConfiguration": {"level": r["level"]},
              "help": {"text": r["full"]}, "properties": {"tags": ["ascend", "npu", "migration"]}}
             for r in (*RULES, *SOURCE_RULES)]
    run = {
        "tool": {"driver": {"name": document["tool"]["name"], "version": document["tool"]["version"],
                            "rules": rules}},
        "automationDetails": {"id": f"opassess/{model_source}/"},
        "results": results,
        "properties": {"model": model_source, "target": document["target"], "torchNpu": document["torch_npu"],
                       "personDays": document["summary"]["person_days"]},
    }
    sarif = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(sarif, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
