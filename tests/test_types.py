"""The type gate: mypy over the files pyproject.toml's [tool.mypy] lists is clean (make test runs it too)."""
from __future__ import annotations

import subprocess
import sys

from conftest import ROOT


def test_mypy_is_clean_on_the_checked_packages():
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 0 and not errors, "\n".join(errors) or result.stdout + result.stderr


def test_the_gate_fails_on_a_type_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def half(n: int) -> int:\n    return n / 2\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--config-file", str(ROOT /
                            "pyproject.toml"), str(bad)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 1 and "Incompatible return value type" in result.stdout
