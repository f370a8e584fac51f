"""Profiles in: a torch_npu / msprof profiler export joined to a scan report's operators (`opassess profile`).

read (read.py: CSV -> Kernel records) -> join (join.py: kernel -> aclnn -> ATen -> operator) -> checks (checks.py)
-> document (document.py: the JSON document every format renders, formats.py).
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..datafile import read_json
from ..errors import ReportError
from ..options import DEFAULT_PRODUCT
from .checks import all_checks
from .document import build_profile_document, count_steps
from .facts import load_facts
from .join import join
from .read import ProfileError, read_profile

__all__ = ["ProfileError", "assess_profile", "read_report"]


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _signature_ok(sig: Any) -> bool:
    if not isinstance(sig, dict):
        return False
    shapes, dtypes = sig.get("input_shapes") or [], sig.get("input_dtypes") or []
    return (isinstance(shapes, list) and all(shape is None or (isinstance(shape, list) and all(
        isinstance(d, int) and not isinstance(d, bool) for d in shape)) for shape in shapes)
        and isinstance(dtypes, list) and all(d is None or isinstance(d, str) for d in dtypes))


def _estimate_ok(estimated: Any) -> bool:
    if not isinstance(estimated, dict):
        return False
    penalties = estimated.get("penalties") or []
    return (all(estimated.get(key) is None or _number(estimated[key]) for key in ("us", "at_risk_us", "calls"))
            and (estimated.get("unit") is None or isinstance(estimated["unit"], str))
            and isinstance(penalties, list) and all(isinstance(p, dict) and (p.get("us") is None or _number(p["us"]))
                                                    for p in penalties))


# The operator fields the join, the checks and the fit read, each with its check (None or absent is always fine).
_OPERATOR_FIELDS = {
    "aten": _texts, "entry": _texts, "backward_aten": _texts,
    "cann_op": lambda v: isinstance(v, str), "replacement": lambda v: isinstance(v, str),
    "category": lambda v: isinstance(v, str), "count": _number, "flops": _number, "bytes_moved": _number,
    "signatures": lambda v: isinstance(v, list) and all(_signature_ok(sig) for sig in v),
    "reasons": lambda v: isinstance(v, list) and all(isinstance(r, dict) for r in v),
    "estimated_time": _estimate_ok,
}


def _malformed(report: Any) -> str | None:
    """What is wrong with a report's shape for the join, or None: 'operators[3].aten'."""
    operators = report.get("operators") if isinstance(report, dict) else None
    if not isinstance(operators, list):
        return "no list of operators"
    if not (report.get("model") is None or (isinstance(report["model"], dict)
                                            and isinstance(report["model"].get("source") or "", str))):
        return "model: not an object with a source"
    if not (report.get("target") is None or isinstance(report["target"], str)):
        return "target: not a product name"
    for index, op in enumerate(operators):
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            return f"operators[{index}]: not an operator with an op name"
        for field, ok in _OPERATOR_FIELDS.items():
            if op.get(field) is not None and not ok(op[field]):
                if field == "signatures" and isinstance(op[field], list):
                    field = "signatures: input_shapes or input_dtypes"
                return f"operators[{index}].{field} ({op['op']}): not what a scan writes"
    return None


def read_report(path: Path) -> dict[str, Any]:
    """A scan's JSON report, its fields the join, checks and fit read checked (a report of the wrong shape is one
    ReportError naming the field)."""
    if not path.exists() and not path.is_symlink():
        raise ReportError(f"{path}: no such report")
    report = read_json(path, "report", ReportError)
    wrong = _malformed(report)
    if wrong:
        raise ReportError(f"{path}: not an opassess JSON report ({wrong}): write one with "
                          f"`opassess scan MODEL -f json -o REPORT.json`")
    return report


def assess_profile(profile: Path, report_path: Path, *, steps: int | None = None,
                   report: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The profile document for the export at `profile` against the report at `report_path`."""
    facts = load_facts()
    report = report if report is not None else read_report(report_path)
    data = read_profile(profile, facts)
    matches = join(data.kernels, report["operators"])
    steps = count_steps(data.kernels, steps)
    checks = all_checks(matches, report["operators"], data.columns, str(report.get("target") or DEFAULT_PRODUCT), facts)
    return build_profile_document(data, report, str(report_path), matches, checks, steps, facts)
