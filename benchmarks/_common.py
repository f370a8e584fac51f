"""What the benchmark scripts share: the repository root, peak RSS, an ATen call counter and the fresh-process runs.

Every measurement runs in its own child process (the script itself, re-run with `--one`) so that its peak memory
(ru_maxrss) belongs to it alone; the child prints its figures as one JSON line, the last on its stdout.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def peak_mb() -> float:
    """This process's peak resident memory so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def call_counter() -> Any:
    """A dispatch mode counting the ATen calls made under it (`.calls`); torch is imported only when it is asked for."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        calls = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.calls += 1
            return func(*args, **(kwargs or {}))

    return Recorder()


def run_child(cmd: list[str], timeout: float, env: Mapping[str, str] | None = None, **labels: str) -> dict:
    """Run `cmd` from the repository root: its last stdout line read as JSON, or `labels` with an "error"."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return {**labels, "error": f"timed out after {timeout:.0f}s"}
    if done.returncode != 0:
        return {**labels, "error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def child(script: str, kind: str, size: str, layers: int | None, timeout: float) -> dict:
    """One measurement `kind` of model `size`: `script --one KIND --size SIZE [--layers N]` in a fresh process."""
    cmd = [sys.executable, script, "--one", kind, "--size", size]
    if layers:
        cmd += ["--layers", str(layers)]
    return run_child(cmd, timeout, kind=kind, size=size)


def best_of(repeat: int, script: str, kind: str, size: str, layers: int | None, timeout: float) -> dict:
    """The fastest of `repeat` runs (an error in any run is reported as the result)."""
    runs = [child(script, kind, size, layers, timeout) for _ in range(repeat)]
    failed = [r for r in runs if "error" in r]
    return failed[0] if failed else min(runs, key=lambda r: r["seconds"])
