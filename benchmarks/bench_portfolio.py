"""Benchmark: one portfolio of small models through the local executor and the Ray executor, wall time side by side.

The models (40 by default) are generated into a temporary folder: small MLPs and CNNs of varied widths and
activations, so that the plan has operators to share. Each executor runs the CLI in a fresh process, as a user
would (`opassess scan DIR -o OUT`), so its figure includes everything: for Ray, starting a local Ray instance
(nothing is running beforehand) or joining --ray-address, shipping the folder and starting Ray's workers.

    python benchmarks/bench_portfolio.py                     # 40 models, a Ray instance started on this machine
    python benchmarks/bench_portfolio.py --models 8          # fewer
    python benchmarks/bench_portfolio.py --ray-address HOST:PORT   # join a running cluster instead

Prints one table (executor, seconds, models scanned, ratio to local; target for Ray: <= 1.3x, issue 29), the load
average (the machine may be shared) and whether the reports were the same apart from timing fields. --repeat N runs
each executor N times, alternately, and keeps the best.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACTIVATIONS = ("ReLU", "GELU", "SiLU", "Tanh", "Sigmoid")

MLP = """import torch
from torch import nn


def build_model():
    return nn.Sequential(nn.Linear(16, {width}), nn.{act}(), nn.LayerNorm({width}), nn.Linear({width}, 4))


def example_inputs():
    return (torch.randn(2, 16),)
"""

CNN = """import torch
from torch import nn


def build_model():
    return nn.Sequential(nn.Conv2d(3, {width}, 3, padding=1), nn.BatchNorm2d({width}), nn.{act}(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear({width}, 10))


def example_inputs():
    return (torch.randn(2, 3, 16, 16),)
"""


def generate(folder: Path, count: int) -> None:
    for index in range(count):
        template = MLP if index % 2 == 0 else CNN
        source = template.format(width=8 * (1 + index % 5), act=ACTIVATIONS[index % len(ACTIVATIONS)])
        (folder / f"model_{index:03d}.py").write_text(source)


def run(folder: Path, out: Path, extra: list[str]) -> tuple[float, int, str]:
    """Seconds, exit code and stderr of one `opassess scan` of the folder."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "opassess", "scan", str(folder), "-o", str(out), "-f", "json",
                           "--timeout", "300", *extra], capture_output=True, text=True, env=env, cwd=folder.parent)
    return time.perf_counter() - started, done.returncode, done.stderr


def scrubbed(out: Path) -> dict:
    def strip(value):
        if isinstance(value, dict):
            # the resume state's sha256 digests are of reports that hold their timings
            return {k: strip(v) for k, v in value.items() if k not in ("seconds", "sha256")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return {p.name: strip(json.loads(p.read_text())) for p in sorted(out.glob("*.json"))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=40)
    parser.add_argument("--ray-address", default=None, help="join this Ray cluster instead of starting one")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each executor (the best is shown)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="opassess-bench-") as tmp:
        folder = Path(tmp) / "zoo"
        folder.mkdir()
        generate(folder, args.models)
        ray_flags = ["--executor", "ray"] + (["--ray-address", args.ray_address] if args.ray_address else [])
        best: dict[str, tuple[float, int]] = {}
        loads = []
        for attempt in range(args.repeat):
            for name, extra in (("local", []), ("ray", ray_flags)):
                out = Path(tmp) / f"{name}-{attempt}"
                loads.append(os.getloadavg()[0])
                seconds, code, stderr = run(folder, out, extra)
                if code != 0:
                    sys.exit(f"{name}: exit {code}\n{stderr}")
                scanned = len(json.loads((out / "portfolio.json").read_text())["models"])
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, scanned)
        rows = [(name, seconds, scanned) for name, (seconds, scanned) in best.items()]
        same = scrubbed(Path(tmp) / "local-0") == scrubbed(Path(tmp) / "ray-0")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{args.models} models, {cores} cores{', Ray at ' + args.ray_address if args.ray_address else ''}, "
          f"load average {min(loads):.2f}-{max(loads):.2f}, best of {args.repeat}")
    print(f"{'executor':<10}{'seconds':>10}{'models':>8}{'vs local':>10}")
    for name, seconds, scanned in rows:
        print(f"{name:<10}{seconds:>10.1f}{scanned:>8}{seconds / rows[0][1]:>9.2f}x")
    print("target: ray <= 1.3x local (Ray's start included)")
    print(f"reports the same apart from timing fields: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
