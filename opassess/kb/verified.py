"""The "verified on our hardware" overlay: verification-harness results (JUnit XML) read into verified.json.

`opassess scan --handoff DIR` writes test_<op>.py per operator with non-direct signatures; run on the NPU host with
`pytest --junitxml=results.xml`, its results are read back by `opassess calibrate --verified results.xml`, which
merges them into verified.json in the knowledge-base overlay folder (OPASSESS_KB_DIR, else the user folder, or
--kb-dir). Later scans read it (KnowledgeBase.verified) and classify/verified.py applies it: a signature whose
device test passed becomes direct with high confidence, one whose test failed custom-dev with the failure quoted.

verified.json (format 1): {"format": 1, "kind": "verified", "entries": {OP: {SIGNATURE_KEY: {"status": "passed" |
"failed", "device": "npu", "latency_us": float | null, "failure": str | null, "case": str, "results": str,
"recorded_at": ISO time, "route": what the device ran ("original": the operator itself, else the replacement the
report recommends, e.g. "torch_npu.npu_deformable_conv2d"), "torch_npu", "cann", "product": str | null (as the
harness read them on the host)}}}}. SIGNATURE_KEY is `signature_key` of the captured attributes (every argument),
shapes and dtypes. Entries written before routes were recorded have no "route": the operator itself.

A result is kept by what was tested: a newer result for the same route replaces the older one, and a result of the
original operator never replaces one of a replacement (the report recommends the replacement: whether the original
runs on the NPU is no longer the question). A case whose arguments held placeholders (the capture missed one) tested
another signature than the model's: it is read as not-run, like one that never reached the device.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..datafile import read_bytes, read_json
from ..errors import KnowledgeBaseError

FILE = "verified.json"
FORMAT = 1
STATUSES = ("passed", "failed")
FAILURE_LIMIT = 300  # characters of a failure message kept (the first line of the assertion)
DEVICE_TEST = "test_device"  # the harness's test on the device; test_cpu_reference checks the harness itself
JUNIT_LIMIT = 64 * 1024 * 1024
ORIGINAL = "original"  # the route of a case that ran the operator itself


def _plain(value: Any) -> Any:
    """The JSON report's form of an attribute value (report/document.jsonable): tuples as lists, a non-finite
    float or any other object by its str()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


def signature_key(attrs: Mapping[str, Any], input_shapes: Any, input_dtypes: Any) -> str:
    """One signature as a stable string (the same as ci/snapshot.signature_key of its JSON form)."""
    return json.dumps({"attrs": _plain(attrs), "shapes": _plain(input_shapes), "dtypes": _plain(input_dtypes)},
                      sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class VerifiedCase:
    """One device test case of a verification harness, as JUnit recorded it."""

    op: str
    signature: str  # signature_key
    status: str  # passed | failed | skipped | not-run (the harness failed before the device call, or the device was
    # the CPU)
    device: str
    latency_us: float | None
    failure: str | None
    case: str  # classname::name
    route: str = ORIGINAL  # what the device ran: the operator itself, or the replacement the report recommends
    torch_npu: str | None = None
    cann: str | None = None
    product: str | None = None

    def entry(self, results: str, recorded_at: str) -> dict[str, object]:
        return {"status": self.status, "device": self.device, "latency_us": self.latency_us,
                "failure": self.failure, "case": self.case, "results": results, "recorded_at": recorded_at,
                "route": self.route, "torch_npu": self.torch_npu, "cann": self.cann, "product": self.product}


def read_junit(path: Path) -> list[VerifiedCase]:
    """The harness's device cases of a JUnit XML file (pytest --junitxml); other test cases are left out."""
    data = read_bytes(path, "JUnit results", KnowledgeBaseError, limit=JUNIT_LIMIT)
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise KnowledgeBaseError(f"{path}: JUnit results must not declare a DOCTYPE or entities")
    try:
        root = ElementTree.fromstring(data)
    except ElementTree.ParseError as exc:
        raise KnowledgeBaseError(f"{path}: not JUnit XML ({exc})") from exc
    if root.tag not in ("testsuites", "testsuite"):
        raise KnowledgeBaseError(f"{path}: not JUnit XML (root element <{root.tag}>)")
    cases = []
    for case in root.iter("testcase"):
        if not case.get("name", "").startswith(DEVICE_TEST):
            continue
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        op, signature = props.get("opassess_op"), props.get("opassess_signature")
        if not op or not signature:
            continue
        failed = case.find("failure")
        if failed is None:
            failed = case.find("error")
        status = "failed" if failed is not None else "skipped" if case.find("skipped") is not None else "passed"
        if status == "failed" and props.get("opassess_stage") == "reference":
            status = "not-run"  # the harness failed before the device ran: says nothing about the NPU
        device = props.get("device") or "npu"
        if status in STATUSES and device.split(":")[0] == "cpu":
            status = "not-run"  # OPASSESS_VERIFY_DEVICE=cpu: CPU against CPU says nothing about the NPU
        if status in STATUSES and (props.get("opassess_arguments") or "captured") != "captured":
            status = "not-run"  # placeholders stood for arguments the capture missed: not the model's signature
        failure = None
        if failed is not None:
            text = (failed.get("message") or failed.text or "").strip()
            failure = (text.splitlines() or [""])[0][:FAILURE_LIMIT]
        try:
            latency_text = props.get("latency_us")
            latency = float(latency_text) if latency_text else None
        except ValueError:
            latency = None
        cases.append(VerifiedCase(op, signature, status, device, latency, failure,
                                  f"{case.get('classname', '')}::{case.get('name', '')}",
                                  props.get("opassess_route") or ORIGINAL, props.get("torch_npu"), props.get("cann"),
                                  props.get("product")))
    return cases


def load_verified(path: Path) -> dict[str, dict[str, dict[str, object]]]:
    """The entries of one verified.json (op -> signature key -> entry), validated; {} when the file is missing. Only
    an entry's status is checked (the file is the user's): readers narrow its other fields."""
    if not path.exists():
        return {}
    data = read_json(path, "verified overlay", KnowledgeBaseError)
    problem = None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("kind") != "verified":
        problem = f"not a format-{FORMAT} verified overlay"
    elif not isinstance(data.get("entries"), dict):
        problem = "'entries' is not an object"
    else:
        for op, signatures in data["entries"].items():
            if not isinstance(signatures, dict) or not all(
                    isinstance(e, dict) and e.get("status") in STATUSES for e in signatures.values()):
                problem = f"entry {op!r} is not an object of signature -> {{status: passed|failed, ...}}"
                break
    if problem:
        raise KnowledgeBaseError(f"{path}: {problem}; `opassess calibrate --verified` writes it: remove it or "
                                 f"record the results again")
    return data["entries"]


def merge_results(entries: Mapping[str, Mapping[str, object]], cases: list[VerifiedCase], results: str,
                  now: str | None = None) -> tuple[dict[str, dict[str, object]], dict[str, int]]:
    """The overlay's entries with `cases` recorded on top (a newer result replaces an older one), and counts of
    passed, failed, skipped and not-run cases (skipped and not-run ones change nothing: the device was not there, or
    the harness broke before it ran)."""
    merged = {op: dict(signatures) for op, signatures in entries.items()}
    stamp = now or _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    counts = {"passed": 0, "failed": 0, "skipped": 0, "not-run": 0}
    for case in cases:
        counts[case.status] += 1
        if case.status not in STATUSES:
            continue
        older = merged.setdefault(case.op, {}).get(case.signature)
        if case.route == ORIGINAL and isinstance(older, Mapping) and (older.get("route") or ORIGINAL) != ORIGINAL:
            continue  # the replacement's result stands: the original operator is not what the report recommends
        merged[case.op][case.signature] = case.entry(results, stamp)
    return merged, counts


def overlay_text(entries: Mapping[str, object]) -> str:
    return json.dumps({"format": FORMAT, "kind": "verified", "entries": entries}, indent=1, sort_keys=True) + "\n"


def record_verified(results: Path, folder: Path) -> tuple[Path, list[VerifiedCase], dict[str, int]]:
    """Read the harness's JUnit `results` and merge them into `folder`/verified.json (written atomically)."""
    from ..output import write_output

    cases = read_junit(results)
    if not cases:
        raise KnowledgeBaseError(f"{results}: no verification-harness case in it (test_device cases carrying the "
                                 f"opassess_op and opassess_signature properties; run the hand-off's test_*.py with "
                                 f"pytest --junitxml)")
    if folder.exists() and not folder.is_dir():
        raise KnowledgeBaseError(f"{folder}: not a folder (the knowledge-base overlay folder)")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / FILE
    entries, counts = merge_results(load_verified(target), cases, str(results))
    write_output(overlay_text(entries), target, "the verified overlay")
    return target, cases, counts
