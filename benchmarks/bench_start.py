"""Fast start (issue 29): a cold `opassess scan examples/resnet_like.py` against a cold `python -c "import torch"`.

Both run as fresh processes with this interpreter, alternated, `--runs` times each (default 3); the medians and their
ratio are printed side by side, with the load average (the machine may be shared). Target: ratio <= 1.6.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _wall(command: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default="examples/resnet_like.py")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        scan = [sys.executable, "-m", "opassess", "scan", args.model, "-o", str(Path(out) / "report.json")]
        torch = [sys.executable, "-c", "import torch"]
        scans, imports = [], []
        for _ in range(args.runs):
            imports.append(_wall(torch))
            scans.append(_wall(scan))
    scan_s, torch_s = statistics.median(scans), statistics.median(imports)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores, median of {args.runs}")
    print(f"{'cold scan ' + args.model:<44} {scan_s:7.2f} s")
    label = 'python -c "import torch"'
    print(f"{label:<44} {torch_s:7.2f} s")
    print(f"{'ratio (target <= 1.6)':<44} {scan_s / torch_s:7.2f} x")


if __name__ == "__main__":
    main()
