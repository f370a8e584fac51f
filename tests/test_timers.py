"""The report's `seconds` cover the whole run (issue 29, item 4): a single scan's stages, from the process's start
to the report, add up to the wall time the user waited, less rendering and writing; a portfolio model's include its
worker's start-up and the capture's transfer."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time

from tests.support import ROOT, TINY

HEAD = ["start", "worker", "load", "trace", "transfer", "classify"]


def test_a_single_scan_s_seconds_add_up_to_its_wall_time(tmp_path):
    model, report = tmp_path / "tiny.py", tmp_path / "r.json"
    model.write_text(textwrap.dedent(TINY))
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "opassess", "scan", str(model), "-f", "json", "-o", str(report), "-q"],
                   check=True, timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    wall = time.monotonic() - started
    seconds = json.loads(report.read_text())["seconds"]
    assert list(seconds)[:len(HEAD)] == HEAD, seconds
    assert all(value >= 0 for value in seconds.values())
    total = sum(seconds.values())
    # what is left out: forking this interpreter, building the view, rendering and writing the report, exiting
    assert total <= wall and wall - total < max(1.5, 0.2 * wall), (total, wall, seconds)


def test_a_portfolio_model_s_seconds_include_its_worker(tmp_path):
    from typer.testing import CliRunner

    from opassess.cli import app

    for name in ("a", "b"):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(TINY))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["scan", str(tmp_path / "a.py"), str(tmp_path / "b.py"), "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    for name in ("a", "b"):
        seconds = json.loads((out / f"{name}.json").read_text())["seconds"]
        assert list(seconds)[:5] == ["worker", "load", "trace", "transfer", "classify"], seconds


def test_a_source_scan_s_seconds_add_up_to_its_wall_time(tmp_path):
    """`opassess source`: the process's start (interpreter and imports), the scan, the estimate."""
    (tmp_path / "train.py").write_text("import torch\ntorch.cuda.synchronize()\nx = torch.zeros(2).cuda()\n")
    report = tmp_path / "r.json"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "opassess", "source", str(tmp_path), "-f", "json", "-o", str(report), "-q"],
                   check=True, timeout=300, cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    wall = time.monotonic() - started
    seconds = json.loads(report.read_text())["seconds"]
    assert list(seconds) == ["start", "source", "estimate"] and seconds["start"] > 0, seconds
    total = sum(seconds.values())
    assert total <= wall and wall - total < max(1.0, 0.2 * wall), (total, wall, seconds)


def test_timed_records_each_stage_in_the_order_run():
    import pytest

    from opassess.pipeline import timed

    seconds: dict[str, float] = {"start": 0.5}
    with timed(seconds, "load"):
        time.sleep(0.01)
    with timed(seconds, "trace"):
        pass
    assert list(seconds) == ["start", "load", "trace"] and seconds["load"] >= 0.01 > seconds["trace"] >= 0
    with pytest.raises(ValueError), timed(seconds, "classify"):  # a failing stage raises through, as it always did
        raise ValueError("bad model")
