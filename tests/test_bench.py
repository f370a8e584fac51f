"""The benchmark script runs end to end at a reduced size (CI); its figures are read by people, not asserted."""
from __future__ import annotations

import subprocess
import sys

from tests.support import ROOT


def test_benchmark_runs_at_reduced_size():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_scan.py"), "--sizes", "7b",
                           "--layers", "2", "--repeat", "1"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("7b ")]
    assert [row[1] for row in rows] == ["floor", "scan", "isolated", "export"]
    # every measurement produced seconds and a peak memory figure (no '-' placeholders for failures)
    assert all(row[2] != "-" and float(row[3]) > 0 for row in rows)
    assert "2 layers" in done.stdout


def test_train_benchmark_runs_at_reduced_size():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_train.py"), "--layers", "2",
                           "--repeat", "1"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith("7b ")]
    assert [row[1] for row in rows] == ["floor", "scan"]
    assert all(row[2] != "-" and float(row[3]) > 0 for row in rows)
    assert "backward ATen calls" in done.stdout and "2 layers" in done.stdout


def test_graph_mode_benchmark_runs_at_reduced_size():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_graph.py"), "--layers", "1",
                           "--repeat", "1"], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[1:] if line.strip()}
    assert list(rows) == ["off", "capture", "dynamo"] and not any("error:" in " ".join(r) for r in rows.values())
    assert float(rows["off"][4]) == 0.0 and float(rows["dynamo"][4]) > 0  # only --graph-mode dynamo runs dynamo
    assert "inductor ready" in " ".join(rows["capture"])


def test_source_benchmark_runs_at_reduced_size():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_source.py"), "--lines", "2000", "--files",
                           "4", "--repeat", "1"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("2") and "findings, 0 skipped" in lines[0]  # ~2,000 lines in 4 files, all scanned
    rows = {line[:44].strip(): line[44:].split() for line in lines[2:-1]}  # after the counts and the header
    assert list(rows) == ["ast.parse of every file, one process", "opassess source TREE (terminal summary)",
                          "opassess source TREE -o report.json", "ast.parse of every file, in process",
                          "scan_sources(TREE), in process"]
    assert [len(row) for row in rows.values()] == [2, 4, 4, 2, 4]  # wall and CPU seconds, and each one's ratio
    assert all(float(value) > 0 for row in rows.values() for value in row[:1])
