"""The graph-mode flags through typer's CliRunner: --fail-on graph-break on the --graph-backend back-end (exit 3,
one line per break), --no-graph-mode, bad values (exit 2), and the Graph mode section of md, html and terminal."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from tests.support import MODELS

runner = CliRunner()
BREAKS = MODELS / "graph_breaks.py"
STATIC = MODELS / "graph_static.py"


def scan(*args):
    return runner.invoke(app, ["scan", *map(str, args), "-q"])


def test_fail_on_graph_break_exits_3_naming_each_break_and_its_line(tmp_path):
    result = scan(BREAKS, "--fail-on", "graph-break", "-o", tmp_path / "r.json")
    assert result.exit_code == 3, result.output
    lines = [line for line in result.output.splitlines() if "graph break on inductor" in line]
    assert len(lines) == 2
    assert "Tensor.item at " in lines[0] and "graph_breaks.py:19" in lines[0]
    assert "torch.nonzero at " in lines[1] and "graph_breaks.py:20" in lines[1]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["graph_mode"]["backend"] == "inductor"
    # the effort item: 1 host-sync x [0.1-0.25-1] + 1 data-dependent x [0.25-0.5-2] = [0.35, 0.75, 3]
    assert report["graph_mode"]["effort"]["person_days"] == {"low": 0.35, "likely": 0.75, "high": 3.0}
    assert report["summary"]["person_days"]["likely"] < 100  # and not in the eager total: shown apart


def test_the_chosen_backend_decides_the_gate(tmp_path):
    # the AdaptiveAvgPool3d model breaks GE only: the inductor gate passes, the GE gate fails
    args = (STATIC, "--entry", "build_pool3d", "--input-shape", "1,2,4,4,4", "--fail-on", "graph-break",
            "-o", tmp_path / "r.md")
    assert scan(*args).exit_code == 0
    result = scan(*args, "--graph-backend", "ge")
    assert result.exit_code == 3 and "aten::_adaptive_avg_pool3d" in result.output


def test_no_graph_mode_leaves_the_analysis_out(tmp_path):
    assert scan(STATIC, "--no-graph-mode", "-o", tmp_path / "r.json").exit_code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["graph_mode"] is None and all(op["graph_mode"] is None for op in report["operators"])
    assert "graph_mode" not in report["seconds"]


@pytest.mark.parametrize("args", [("--graph-mode", "full"), ("--graph-backend", "tensorrt"),
                                  ("--no-graph-mode", "--fail-on", "graph-break")])
def test_bad_graph_values_are_usage_errors(args, tmp_path):
    assert scan(STATIC, *args, "-o", tmp_path / "r.md").exit_code == 2


def test_every_human_format_has_the_graph_mode_section(tmp_path):
    for fmt in ("md", "html", "terminal"):
        out = tmp_path / f"r.{fmt}"
        assert scan(BREAKS, "-f", fmt, "-o", out).exit_code == 0
        text = out.read_text()
        assert "Graph mode" in text and "graph_breaks.py:19" in text and "graph_breaks.py:20" in text, fmt
    md = (tmp_path / "r.md").read_text()
    # the table names each break once, with the back-ends it breaks; the action item carries the cheap fix
    assert "| inductor, npugraph\\_ex, ge | `Tensor.item` | host-sync |" in md
    assert "move Tensor.item out of forward" in md


def test_fail_on_new_gates_only_breaks_the_baseline_did_not_have(tmp_path):
    baseline = tmp_path / "before.json"
    assert scan(BREAKS, "-o", baseline).exit_code == 0
    again = scan(BREAKS, "-o", tmp_path / "after.json", "--baseline", baseline, "--fail-on-new",
                 "--fail-on", "graph-break")
    assert again.exit_code == 0, again.output
    clean = tmp_path / "clean.json"
    assert scan(STATIC, "-o", clean, "--label", "m").exit_code == 0


def test_asking_for_dynamo_and_for_no_graph_mode_is_a_usage_error(tmp_path):
    """--graph-mode dynamo --no-graph-mode silently ran no graph analysis at all (a job that asked for dynamo's breaks
    got none, exit 0); the two contradict each other: exit 2."""
    result = scan(STATIC, "--graph-mode", "dynamo", "--no-graph-mode", "-o", tmp_path / "r.json")
    assert result.exit_code == 2 and "--no-graph-mode" in result.output
    assert not (tmp_path / "r.json").exists()
