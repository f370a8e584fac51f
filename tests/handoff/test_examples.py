"""Every bundled example's hand-off runs on the CPU (OPASSESS_VERIFY_DEVICE=cpu): each generated verification
harness passes, CPU reference and device case, from a folder other than the one scanned from. This is the check CI
runs on every change to the harness, the capture of arguments or the examples."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from opassess.handoff import write_handoffs
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def test_every_bundled_examples_handoff_passes_on_the_cpu(tmp_path):
    harnesses = []
    for example in EXAMPLES:
        document = build_view(assess(ScanOptions(target=str(example.relative_to(ROOT))))).document
        written = write_handoffs(document, tmp_path / example.stem, ROOT / example.relative_to(ROOT))
        harnesses += [p for p in written if p.name.startswith("test_")]
    names = {p.name for p in harnesses}
    # custom_op_model.py: the custom op and the autograd.Function (param-converted, its backward to port)
    assert {"test_custom_op_model_FakeQuantizeSTE.py", "test_opassess_examples__fused_bias_gelu.py"} <= names
    junit = tmp_path / "results.xml"
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OPASSESS_VERIFY_DEVICE": "cpu"}
    environment.pop("OPASSESS_MODEL", None)
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *map(str, harnesses),
                             f"--junitxml={junit}", "-o", "junit_family=xunit1"], cwd=tmp_path, env=environment,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    assert cases and not any(c.find("failure") is not None or c.find("error") is not None for c in cases)
    backward = {(c.get("name"), p.get("value")) for c in cases for p in c.iter("property")
                if p.get("name") == "opassess_backward"}
    # FakeQuantizeSTE's three signatures (0, 1, 2 as in the JSON) each had their backward tested
    assert {name for name, _ in backward} >= {"test_device[sig0]", "test_device[sig1]", "test_device[sig2]"}


def test_a_training_scans_handoff_tests_the_backward_of_a_custom_op(tmp_path):
    """With --train the harness tests every case's backward too: custom_op_model.py's fused_bias_gelu, a
    torch.library op with its own autograd formula, has its gradients compared with the CPU's."""
    example = Path("examples") / "custom_op_model.py"
    document = build_view(assess(ScanOptions(target=str(example), train=True))).document
    written = write_handoffs(document, tmp_path / "handoff", ROOT / example)
    harness = next(p for p in written if p.name == "test_opassess_examples__fused_bias_gelu.py")
    assert "TRAINING = True" in harness.read_text(encoding="utf-8")
    junit = tmp_path / "results.xml"
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "OPASSESS_VERIFY_DEVICE": "cpu"}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(harness),
                             f"--junitxml={junit}", "-o", "junit_family=xunit1"], cwd=tmp_path, env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
    assert 'name="opassess_backward" value="tested"' in junit.read_text(encoding="utf-8")
