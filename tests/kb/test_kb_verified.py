"""opassess.kb.verified and classify/verified.py: the harness's JUnit results recorded into the knowledge-base
overlay (`opassess calibrate --verified`), and a later scan that reads them.

The JUnit file below has the form the harness writes (pytest --junitxml, properties per case): for
tests/models/two_custom_ops.py, gated_tanh passed on the NPU, row_rescale failed (its failure quoted), plus a CPU
reference case and a skipped device case that must change nothing. Both operators are custom-dev from the facts.
"""
from __future__ import annotations

import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.errors import KnowledgeBaseError
from opassess.kb.verified import FILE, load_verified, read_junit, record_verified, signature_key
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view
from tests.score.records import MODELS

GATED = signature_key({}, [[4, 32], [4, 32]], ["float32", "float32"])
ROW = signature_key({"eps": 1e-06}, [[4, 32]], ["float32"])
FAILURE = "AssertionError: Tensor-likes are not close! Mismatched elements: 7 / 128 (5.5%)"


def _case(name: str, op: str, key: str, device: str, inner: str = "", latency: str = "12.5") -> str:
    props = "".join(f"<property name={quoteattr(k)} value={quoteattr(v)} />" for k, v in (
        ("opassess_op", op), ("opassess_signature", key), ("device", device), ("latency_us", latency)))
    return f'<testcase classname="test_x" name="{name}" time="0.1"><properties>{props}</properties>{inner}</testcase>'


def junit(tmp_path: Path) -> Path:
    cases = [
        _case("test_device[sig1]", "opassess_two::gated_tanh", GATED, "npu"),
        _case("test_device[sig1]", "opassess_two::row_rescale", ROW, "npu",
              f'<failure message={quoteattr(FAILURE + chr(10) + "more lines")}>trace</failure>'),
        _case("test_cpu_reference[sig1]", "opassess_two::row_rescale", ROW, "cpu"),
        _case("test_device[sig2]", "opassess_two::row_rescale", "other", "npu",
              '<skipped message="torch_npu is not importable" />', latency=""),
    ]
    path = tmp_path / "results.xml"
    path.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="4">'
                    + "".join(cases) + "</testsuite></testsuites>", encoding="utf-8")
    return path


def test_junit_cases_are_read_with_status_failure_and_latency(tmp_path):
    cases = read_junit(junit(tmp_path))
    assert [(c.op, c.status) for c in cases] == [("opassess_two::gated_tanh", "passed"),
                                                 ("opassess_two::row_rescale", "failed"),
                                                 ("opassess_two::row_rescale", "skipped")]
    assert cases[0].latency_us == 12.5 and cases[1].failure == FAILURE and cases[2].latency_us is None


def test_recorded_results_update_the_overlay_and_a_later_scan(tmp_path):
    overlay = tmp_path / "kb"
    target, _, counts = record_verified(junit(tmp_path), overlay)
    assert counts == {"passed": 1, "failed": 1, "skipped": 1, "not-run": 0}
    entries = load_verified(target)
    assert entries["opassess_two::gated_tanh"][GATED]["status"] == "passed"
    assert entries["opassess_two::row_rescale"][ROW]["failure"] == FAILURE
    assert "other" not in entries["opassess_two::row_rescale"]  # a skipped case records nothing

    document = build_view(assess(ScanOptions(target=str(MODELS / "two_custom_ops.py"), kb_dir=overlay))).document
    ops = {op["op"]: op for op in document["operators"]}
    gated, row = ops["opassess_two::gated_tanh"], ops["opassess_two::row_rescale"]
    assert gated["category"] == "direct" and gated["confidence"] == "high"
    assert gated["signatures"][0]["category"] == "direct"
    assert any(r["code"] == "verified-passed" and "results.xml" in r["evidence"] for r in gated["reasons"])
    assert row["category"] == "custom-dev" and row["confidence"] == "high"
    failed = next(r for r in row["reasons"] if r["code"] == "verified-failed")
    assert FAILURE in failed["message"]

    empty = tmp_path / "empty_kb"  # the same scan without the overlay: the facts' verdict
    empty.mkdir()
    before = build_view(assess(ScanOptions(target=str(MODELS / "two_custom_ops.py"), kb_dir=empty))).document
    assert {op["op"]: op["category"] for op in before["operators"]}["opassess_two::gated_tanh"] == "custom-dev"


def test_calibrate_verified_cli(tmp_path):
    overlay = tmp_path / "kb"
    result = CliRunner().invoke(app, ["calibrate", "--verified", str(junit(tmp_path)), "--kb-dir", str(overlay)])
    assert result.exit_code == 0, result.output
    assert "recorded 1 passed and 1 failed" in result.output and FAILURE in result.output
    assert json.loads((overlay / FILE).read_text(encoding="utf-8"))["kind"] == "verified"
    assert CliRunner().invoke(app, ["calibrate"]).exit_code == 2  # no mode given
    bad = tmp_path / "bad.xml"
    for text, words in (("<testsuites><testcase", "not JUnit XML"),
                        ('<!DOCTYPE x [<!ENTITY a "b">]><testsuites/>', "DOCTYPE"),
                        ("<testsuites></testsuites>", "no verification-harness case")):
        bad.write_text(text, encoding="utf-8")
        result = CliRunner().invoke(app, ["calibrate", "--verified", str(bad), "--kb-dir", str(overlay)])
        assert result.exit_code == 1 and words in result.output, result.output
        assert len(result.output.strip().splitlines()) == 1


def test_a_broken_overlay_is_one_error_naming_it(tmp_path):
    (tmp_path / FILE).write_text('{"format": 1, "kind": "verified", "entries": {"x": {"k": {"status": "ok"}}}}',
                                 encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="verified.json: entry 'x'"):
        load_verified(tmp_path / FILE)


def test_a_device_case_run_on_the_cpu_is_no_verdict(tmp_path):
    """OPASSESS_VERIFY_DEVICE=cpu makes the CPU the harness's device (how the harness is tested): its device cases
    pass CPU against CPU. Read back, they used to make the operator direct, 'verified on our hardware'; they say
    nothing about the NPU: not-run, nothing recorded."""
    path = tmp_path / "results.xml"
    path.write_text('<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="1">'
                    + _case("test_device[sig1]", "opassess_two::gated_tanh", GATED, "cpu")
                    + "</testsuite></testsuites>", encoding="utf-8")
    [case] = read_junit(path)
    assert (case.status, case.device) == ("not-run", "cpu")
    target, _, counts = record_verified(path, tmp_path / "kb")
    assert counts["passed"] == 0 and counts["not-run"] == 1 and load_verified(target) == {}


NMS = signature_key({"iou_threshold": 0.5}, [[8, 4], [8]], ["float32", "float32"])


def _nms_junit(tmp_path: Path, route: str, failed: bool, name: str = "results.xml") -> Path:
    props = "".join(f"<property name={quoteattr(k)} value={quoteattr(v)} />" for k, v in (
        ("opassess_op", "torchvision::nms"), ("opassess_signature", NMS), ("device", "npu"), ("latency_us", "3.0"),
        ("opassess_route", route), ("opassess_arguments", "captured"), ("opassess_stage", "device"),
        ("torch_npu", "2.6.0"), ("cann", "8.1.RC1"), ("product", "Ascend910B3")))
    inner = '<failure message="RuntimeError: no kernel">trace</failure>' if failed else ""
    path = tmp_path / name
    path.write_text(f'<testsuites><testsuite name="pytest"><testcase classname="test_nms" name="test_device[sig0]">'
                    f'<properties>{props}</properties>{inner}</testcase></testsuite></testsuites>', encoding="utf-8")
    return path


def _nms(overlay: Path) -> dict:
    document = build_view(assess(ScanOptions(target=str(MODELS / "nms.py"), kb_dir=overlay))).document
    return next(op for op in document["operators"] if op["op"] == "torchvision::nms")


def test_results_are_kept_by_the_route_tested_and_the_original_failing_never_makes_it_custom_dev(tmp_path):
    """torchvision::nms: param-converted, the report recommends torch_npu.npu_nms_v4. The operator itself failing
    on the NPU is what the facts say (no kernel): it leaves the category (verified-original); the replacement
    passing keeps param-converted with high confidence and is not overwritten by a later run of the original; the
    replacement failing makes it custom-dev. Each entry says what ran: route, torch_npu, CANN, the chip."""
    overlay = tmp_path / "kb"
    record_verified(_nms_junit(tmp_path, "original", failed=True), overlay)
    nms = _nms(overlay)
    assert nms["category"] == "param-converted"
    assert any(r["code"] == "verified-original" and "torch_npu.npu_nms_v4" in r["message"] for r in nms["reasons"])

    record_verified(_nms_junit(tmp_path, "torch_npu.npu_nms_v4", failed=False, name="r2.xml"), overlay)
    record_verified(_nms_junit(tmp_path, "original", failed=True, name="r3.xml"), overlay)  # does not replace it
    entry = load_verified(overlay / FILE)["torchvision::nms"][NMS]
    assert (entry["route"], entry["status"], entry["cann"], entry["product"]) == (
        "torch_npu.npu_nms_v4", "passed", "8.1.RC1", "Ascend910B3")
    nms = _nms(overlay)
    assert nms["category"] == "param-converted" and nms["confidence"] == "high"
    passed = next(r for r in nms["reasons"] if r["code"] == "verified-passed")
    assert "through torch_npu.npu_nms_v4" in passed["message"] and "Ascend910B3" in passed["evidence"]

    record_verified(_nms_junit(tmp_path, "torch_npu.npu_nms_v4", failed=True, name="r4.xml"), overlay)
    assert _nms(overlay)["category"] == "custom-dev"
