"""The versions section: which torch, torch_npu, CANN and Python to install for the target and the features the model
uses, from the release table (kb/versions.json); its JSON part (`versions_doc`) and its lines (`version_lines`).

The torch_npu wheel is the one paired with the torch line the scan assessed against; a feature whose facts state a
minimum (npu_fusion_attention's `sink=`: torch_npu 7.3.0 / CANN 8.5.0+) is listed when the model's findings or
replacements call it; a torch newer than any torch_npu release is a warning to pin."""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from ...assessment import Assessment
from ...kb.releases import Releases, load_releases
from ...kb.versions import format_version, parse_version
from ...messages import N_

Gettext = Callable[[str], str]
VERSION_WARNINGS = ("torch-newer",)  # the schema's versions.warnings[].code
FEATURES = {"attention sink": N_("attention sink")}  # the features the facts give a minimum for, translated
# The release table's line statuses, said in the reader's language (another status is shown as the table has it)
STATUSES = {"development": N_("in development"), "maintenance": N_("maintained"), "eol": N_("end of life"),
            "planned": N_("planned"), "released on the python package registry": N_("released on the package registry")}


def _texts(assessment: Assessment) -> Iterable[str]:
    for finding in assessment.findings:
        yield finding.title
        if finding.npu_api:
            yield finding.npu_api
    for op in assessment.classified:
        if op.replacement:
            yield op.replacement


def versions_doc(assessment: Assessment, releases: Releases | None = None) -> dict[str, Any]:
    """The `versions` part of the JSON report."""
    table = releases or load_releases()
    line = parse_version(assessment.torch_version)
    release = table.for_torch(line)
    stated = table.newest_stated()
    texts = list(_texts(assessment))
    needs = [r for r in table.requirements if any(r.used_in(t) for t in texts)]
    running = assessment.torch_running
    warnings = []
    newest = table.newest_torch()
    if running and parse_version(running) > newest:
        warnings.append({"code": VERSION_WARNINGS[0], "running": running, "newest": format_version(newest)})
    return {
        "torch": release.torch if release else assessment.torch_version,
        "torch_npu": release.wheel if release else None,
        "product_version": release.product_version if release else None,
        "cann": release.cann if release else None,
        "cann_note": release.cann_text if release and not release.cann else None,
        "python": release.python if release else None,
        "status": release.status if release else None,
        "source": table.cite(release.row) if release else None,
        "newest_with_cann": None if stated is None else {
            "torch_npu": stated.wheel, "torch": stated.torch, "product_version": stated.product_version,
            "cann": stated.cann, "source": table.cite(stated.row)},
        "requirements": [{"feature": r.feature, "op": r.op, "param": r.param, "torch_npu": r.product_version,
                          "cann": r.cann, "source": r.cite} for r in needs],
        "driver": None if table.driver is None else {"text": table.driver["text"], "stated": table.driver["stated"],
                                                     "source": table.cite(table.driver["row"])},
        "running_torch": running,
        "warnings": warnings,
    }


# ------------------------------------------------------------------ the JSON part as the lines read it back
# (report/parts.py; tests/test_vocabulary.py ties these to the schema)


@dataclass(frozen=True)
class VersionWarningPart:
    code: str
    running: str
    newest: str


@dataclass(frozen=True)
class PairingPart:
    """The newest release pairing a torch_npu wheel with a stated CANN."""

    torch_npu: str
    torch: str
    product_version: str | None
    cann: str | None
    source: str


@dataclass(frozen=True)
class RequirementPart:
    feature: str
    op: str | None
    param: str
    torch_npu: str
    cann: str
    source: str


@dataclass(frozen=True)
class DriverPart:
    text: str
    stated: bool
    source: str


@dataclass(frozen=True)
class VersionsPart:
    """`versions`: what to install for the target and the features the model uses."""

    torch: str
    torch_npu: str | None = None
    product_version: str | None = None
    cann: str | None = None
    cann_note: str | None = None
    python: str | None = None
    status: str | None = None
    source: str | None = None
    newest_with_cann: PairingPart | None = None
    requirements: tuple[RequirementPart, ...] = ()
    driver: DriverPart | None = None
    running_torch: str | None = None
    warnings: tuple[VersionWarningPart, ...] = ()


def version_lines(doc: VersionsPart | None, _: Gettext) -> tuple[str, ...]:
    """The section's lines, for the terminal, Markdown and HTML."""
    if not doc:
        return ()
    lines = []
    for warning in doc.warnings:
        if warning.code == VERSION_WARNINGS[0]:
            lines.append(_("torch %(running)s is newer than any torch_npu release (the newest pairs with torch "
                           "%(newest)s): install torch %(newest)s in the environment that runs on the NPU")
                         % asdict(warning))
    if doc.torch_npu:
        python = re.match(r"[\d.,\s]*", doc.python or "").group(0).strip(" ,") or "-"  # type: ignore[union-attr]
        status = STATUSES.get((doc.status or "").lower())
        values = {"torch": doc.torch, "wheel": doc.torch_npu, "python": python, "source": doc.source,
                  "status": _(status) if status else doc.status, "cann": doc.cann}
        lines.append((_("Install: torch %(torch)s, torch_npu %(wheel)s, CANN %(cann)s, Python %(python)s (%(status)s; "
                        "%(source)s)") if doc.cann else
                      _("Install: torch %(torch)s, torch_npu %(wheel)s (the CANN it pairs with is not stated), Python "
                        "%(python)s (%(status)s; %(source)s)")) % values)
    else:
        lines.append(_("No torch_npu release pairs with torch %(torch)s in the facts") % {"torch": doc.torch})
    newest = doc.newest_with_cann
    if newest and newest.torch_npu != doc.torch_npu:
        lines.append(_("Newest pairing with a stated CANN: torch_npu %(torch_npu)s (product %(product_version)s) with "
                       "torch %(torch)s and CANN %(cann)s (%(source)s)") % asdict(newest))
    for need in doc.requirements:
        lines.append(_("%(feature)s (%(op)s %(param)s=) needs torch_npu %(torch_npu)s or newer and CANN %(cann)s or "
                       "newer (%(source)s)") % dict(asdict(need), feature=_(FEATURES.get(need.feature, need.feature))))
    if doc.driver:
        lines.append((_("Driver and firmware: %(text)s (%(source)s)") if doc.driver.stated else
                      _("Driver and firmware: the facts state no minimum; they defer to the CANN release notes "
                        "(%(source)s)")) % asdict(doc.driver))
    return tuple(lines)
