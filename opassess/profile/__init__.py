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
from .checks import all_checks
from .document import build_profile_document, count_steps
from .facts import load_facts
from .join import join
from .read import ProfileError, read_profile

__all__ = ["ProfileError", "assess_profile", "read_report"]


def read_report(path: Path) -> dict[str, Any]:
    """A scan's JSON report (only what the join needs is checked: an object with a list of operators)."""
    if not path.exists() and not path.is_symlink():
        raise ReportError(f"{path}: no such report")
    report = read_json(path, "report", ReportError)
    operators = report.get("operators") if isinstance(report, dict) else None
    if not isinstance(operators, list) or not all(isinstance(op, dict) and isinstance(op.get("op"), str)
                                                  for op in operators):
        raise ReportError(f"{path}: not an opassess JSON report (no list of operators): write one with "
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
    checks = all_checks(matches, report["operators"], data.columns, str(report.get("target") or "Atlas A2"), facts)
    return build_profile_document(data, report, str(report_path), matches, checks, steps, facts)
