"""opassess.handoff.verify: the verification harness per operator with non-direct signatures, run for real on
the CPU (the CPU reference, and the device part skipped without torch_npu, or run on the CPU as the device)."""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

from opassess.handoff import handoff_files, write_handoffs
from opassess.handoff.verify import harness_signatures
from opassess.kb.verified import FILE, load_verified, read_junit, record_verified, signature_key
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view
from tests.score.records import MODELS

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def document(model: str) -> dict:
    return build_view(assess(ScanOptions(target=str((MODELS / model).relative_to(ROOT))))).document


def run_harness(path: Path, junit: Path, cwd: Path = ROOT, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    environment.pop("OPASSESS_VERIFY_DEVICE", None) if "OPASSESS_VERIFY_DEVICE" not in env else None
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path),
                           f"--junitxml={junit}", "-o", "junit_family=xunit1"],
                          cwd=cwd, env=environment, capture_output=True, text=True, timeout=300)


def test_one_harness_per_operator_with_non_direct_signatures():
    files = handoff_files(document("two_custom_ops.py"))
    harnesses = sorted(name for name in files if name.startswith("test_"))
    # the two custom-dev custom ops; torch.nn.Linear is direct in both signatures: no harness
    assert harnesses == ["test_opassess_two__gated_tanh.py", "test_opassess_two__row_rescale.py"]
    text = files["test_opassess_two__gated_tanh.py"]
    assert "torch.testing.assert_close's defaults for the output dtype" in text
    gated = next(op for op in document("two_custom_ops.py")["operators"] if op["op"] == "opassess_two::gated_tanh")
    [signature] = harness_signatures(gated)
    assert signature["key"] == signature_key({}, [[4, 32], [4, 32]], ["float32", "float32"])
    assert json.dumps(signature["key"]) in text  # embedded in the SIGNATURES JSON


def test_harness_runs_on_the_cpu_and_skips_the_npu_without_torch_npu(tmp_path):
    written = write_handoffs(document("two_custom_ops.py"), tmp_path / "handoff")
    harness = next(p for p in written if p.name == "test_opassess_two__gated_tanh.py")
    junit = tmp_path / "results.xml"
    result = run_harness(harness, junit)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    text = junit.read_text(encoding="utf-8")
    assert 'name="opassess_op" value="opassess_two::gated_tanh"' in text and "torch_npu is not importable" in text
    [case] = read_junit(junit)
    assert case.status == "skipped" and case.op == "opassess_two::gated_tanh"


def test_harness_compares_the_device_with_the_cpu_when_the_device_is_the_cpu(tmp_path):
    # custom_op.py: SignSTE (an autograd.Function, param-converted) and scale_shift (custom-dev, float not captured)
    written = write_handoffs(document("custom_op.py"), tmp_path / "handoff")
    harness = next(p for p in written if p.name == "test_custom_op_SignSTE.py")
    junit = tmp_path / "results.xml"
    result = run_harness(harness, junit, OPASSESS_VERIFY_DEVICE="cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout
    [case] = read_junit(junit)
    # passed on the CPU as the device: read back as not-run (CPU against CPU is no verdict on the NPU)
    assert (case.op, case.status, case.device) == ("custom_op.SignSTE", "not-run", "cpu") and case.failure is None
    assert case.latency_us is not None and case.latency_us > 0


def test_a_module_is_built_from_its_captured_fields(tmp_path):
    # lstm_proj.py: torch.nn.LSTM with proj_size (param-converted); its captured fields include `mode`, which
    # LSTM's constructor sets itself and refuses: the harness drops it and builds the same LSTM on both sides
    written = write_handoffs(document("lstm_proj.py"), tmp_path / "handoff")
    harness = next(p for p in written if p.name == "test_torch_nn_LSTM.py")
    result = run_harness(harness, tmp_path / "results.xml", OPASSESS_VERIFY_DEVICE="cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_a_harness_that_cannot_build_its_cpu_reference_records_no_verdict(tmp_path):
    """A model file that is not there (OPASSESS_MODEL naming a missing file): test_device fails before the device
    ran anything. That failure says nothing about the NPU: it is 'not-run', and `calibrate --verified` records no
    verdict for it (it used to record custom-dev, quoting the ModuleNotFoundError)."""
    written = write_handoffs(document("custom_op.py"), tmp_path / "handoff")
    harness = next(p for p in written if p.name == "test_custom_op_SignSTE.py")
    junit = tmp_path / "results.xml"
    result = run_harness(harness, junit, cwd=tmp_path, OPASSESS_VERIFY_DEVICE="cpu",
                         OPASSESS_MODEL=str(tmp_path / "missing.py"))
    assert result.returncode == 1 and "ModuleNotFoundError" in result.stdout, result.stdout
    [case] = read_junit(junit)
    assert (case.op, case.status) == ("custom_op.SignSTE", "not-run") and "ModuleNotFoundError" in case.failure
    target, _, counts = record_verified(junit, tmp_path / "kb")
    assert (counts["failed"], counts["not-run"]) == (0, 1) and load_verified(target) == {}
    assert target.name == FILE


def test_the_harness_finds_the_model_relative_to_itself_and_tests_the_backward(tmp_path):
    """Run from another folder than the one scanned from, the harness finds the model file relative to itself. The
    autograd.Function's captured scalar goes to its forward, and its backward (the hand-written one the report says
    to port) is tested against the CPU's; test ids are the JSON's signature numbers."""
    written = write_handoffs(document("custom_op.py"), tmp_path / "handoff")
    harness = next(p for p in written if p.name == "test_custom_op_SignSTE.py")
    assert "MODEL_FROM_HERE = '../../" in harness.read_text(encoding="utf-8")
    junit = tmp_path / "results.xml"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_harness(harness, junit, cwd=elsewhere, OPASSESS_VERIFY_DEVICE="cpu")
    assert result.returncode == 0 and "2 passed" in result.stdout, result.stdout + result.stderr
    text = junit.read_text(encoding="utf-8")
    assert 'name="test_device[sig0]"' in text  # the JSON's signature 0
    assert 'name="opassess_backward" value="tested"' in text
    assert 'name="opassess_route" value="original"' in text and 'value="captured"' in text


def test_a_case_with_placeholders_says_so_and_never_records_a_pass(tmp_path):
    """row_rescale(x, eps): with eps left out of the capture (as a capture that records no scalars did), the harness
    calls it with a placeholder, records opassess_arguments 'placeholder: eps', and the pass is read back as not-run:
    it tested another signature than the model's."""
    doc = json.loads(json.dumps(document("two_custom_ops.py")))
    row = next(op for op in doc["operators"] if op["op"] == "opassess_two::row_rescale")
    assert row["signatures"][0]["attrs"] == {"eps": 1e-06}  # captured (schema-named)
    row["signatures"][0]["attrs"] = {}
    written = write_handoffs(doc, tmp_path / "handoff")
    harness = next(p for p in written if p.name == "test_opassess_two__row_rescale.py")
    junit = tmp_path / "results.xml"
    result = run_harness(harness, junit, OPASSESS_VERIFY_DEVICE="cpu")
    assert result.returncode == 0, result.stdout + result.stderr
    assert 'name="opassess_arguments" value="placeholder: eps"' in junit.read_text(encoding="utf-8")
    text = junit.read_text(encoding="utf-8").replace('value="cpu"', 'value="npu"')  # as if run on the NPU
    junit.write_text(text, encoding="utf-8")
    assert [c.status for c in read_junit(junit)] == ["not-run"]
