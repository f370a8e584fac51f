"""One fixture model per reason code (ruff's fixture-per-rule habit): tests/classify/fixtures/<code>.py names the
reason it must produce (REASON), on which operator (OPERATOR) and with which scan options (OPTIONS), and says why
in its docstring (VERIFIED: a recorded NPU verification result).
Each is scanned in a worker, as `opassess scan` scans a model, and the operator's reasons must carry the code;
every registered code (opassess/reasons.py) must have its fixture."""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from opassess.isolation.scan import finish_assessment, start_assessment
from opassess.kb.verified import record_verified, signature_key
from opassess.options import ScanOptions
from opassess.reasons import REASONS
from opassess.report import build_view

FIXTURES = Path(__file__).parent / "fixtures"
NEEDS_TOOLCHAIN = {"extension"}  # built with torch.utils.cpp_extension: a C++ compiler and ninja


def spec(path: Path) -> dict:
    """The fixture's module-level constants (REASON, OPERATOR, OPTIONS, VERIFIED), read without running it."""
    found = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target if isinstance(node, ast.AnnAssign) \
            else None
        if isinstance(target, ast.Name) and target.id.isupper() and node.value is not None:
            found[target.id] = ast.literal_eval(node.value)
    return found


def fixtures() -> dict[str, Path]:
    return {spec(path)["REASON"]: path for path in sorted(FIXTURES.glob("*.py"))}


def test_every_registered_reason_code_has_a_fixture_model():
    found = fixtures()
    assert set(found) == set(REASONS), f"missing: {sorted(set(REASONS) - set(found))}; " \
                                       f"unknown: {sorted(set(found) - set(REASONS))}"
    assert all(path.stem == code.replace("-", "_") for code, path in found.items())


def _verified_overlay(tmp_path: Path, op: str, status: str, signature: tuple | None = None) -> Path:
    """A knowledge-base overlay recording one NPU verification case of `op`'s signature (SIGNATURE: attributes,
    shapes, dtypes; by default two (4, 32) float32 inputs), run on the operator itself."""
    key = signature_key(*(signature or ({}, [[4, 32], [4, 32]], ["float32", "float32"])))
    props = "".join(f"<property name={quoteattr(k)} value={quoteattr(v)} />" for k, v in (
        ("opassess_op", op), ("opassess_signature", key), ("device", "npu"), ("latency_us", "10")))
    failure = '<failure message="AssertionError: Tensor-likes are not close!">trace</failure>' \
        if status == "failed" else ""
    results = tmp_path / "results.xml"
    results.write_text(f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="1">'
                       f'<testcase classname="test_x" name="test_device[sig1]" time="0.1"><properties>{props}'
                       f'</properties>{failure}</testcase></testsuite></testsuites>', encoding="utf-8")
    record_verified(results, tmp_path / "kb")
    return tmp_path / "kb"


@pytest.mark.parametrize("code", sorted(REASONS))
def test_the_fixture_gives_its_reason(code, tmp_path):
    path = fixtures().get(code)
    assert path is not None, f"no fixture model for {code!r} in {FIXTURES}"
    if code in NEEDS_TOOLCHAIN and not ((shutil.which("c++") or shutil.which("g++")) and shutil.which("ninja")):
        pytest.skip("building a C++ extension needs a C++ compiler and ninja")
    fixture = spec(path)
    options = dict(fixture.get("OPTIONS", {}))
    if "VERIFIED" in fixture:
        options["kb_dir"] = _verified_overlay(tmp_path, fixture["OPERATOR"], fixture["VERIFIED"],
                                              fixture.get("SIGNATURE"))
    scan = ScanOptions(target=str(path), **options)
    document = build_view(finish_assessment(start_assessment(scan, timeout=300, debug=False), scan)).document
    # a JIT-built extension is named NAME_v1 when this process built NAME before into another folder (torch's
    # versioner hashes the build folder, and the worker's sandbox gives it a private one): the same extension
    operators = {re.sub(r"_v\d+(?=\.)", "", op["op"]) if op["kind"] == "extension" else op["op"]: op
                 for op in document["operators"]}
    assert fixture["OPERATOR"] in operators, sorted(operators)
    codes = {r["code"] for r in operators[fixture["OPERATOR"]]["reasons"]}
    assert code in codes, f"{path.name}: {fixture['OPERATOR']} gave {sorted(codes)}"
