"""Benchmark: opassess scan of a DeepSeek-V3 671B-shaped model (benchmarks/deepseek_v3.py) in bfloat16, on meta.

Each run is a fresh child process, so that its peak RSS (ru_maxrss) is the scan's alone (torch's own import
included); its seconds are the scan's: build on meta, capture, classify, score and the JSON document. Needs
transformers (`pip install -e '.[integration]'`).

    python benchmarks/bench_moe.py                # full depth, 61 layers (target: under 20 s and 2048 MB)
    python benchmarks/bench_moe.py --layers 4     # reduced depth, as the smoke test runs it

Prints seconds and peak RSS per run and the fastest run against the targets.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _common import ROOT, peak_mb, run_child

MODEL = ROOT / "benchmarks" / "deepseek_v3.py"
TARGET_SECONDS, TARGET_MB = 20.0, 2048


def _measure(dtype: str) -> dict:
    """One scan in this process; its seconds start once torch and transformers are imported (their import is
    timed apart: 5-10 s for a CUDA build of torch on a loaded 2-core machine, no part of the scan's own work)."""
    sys.path.insert(0, str(ROOT))
    before = time.perf_counter()
    import torch  # noqa: F401
    import transformers  # noqa: F401

    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess
    from opassess.report import build_view

    started = time.perf_counter()

    assessment = assess(ScanOptions(target=str(MODEL), dtype=dtype))
    document = build_view(assessment).document
    seconds = time.perf_counter() - started
    capture = document["model"]["capture"]
    grouped = [o for o in document["operators"] if "aten::_grouped_mm" in o["aten"]]
    return {"seconds": seconds, "import_seconds": started - before, "peak_mb": peak_mb(),
            "parameters": document["model"]["parameters"], "method": capture["method"], "device": capture["device"],
            "calls": len(assessment.inventory.capture.nodes), "op_types": len(document["operators"]),
            "grouped_mm_calls": sum(o["count"] for o in grouped), "grouped_mm_flops": sum(o["flops"] for o in grouped)}


def _child(dtype: str, layers: int | None, timeout: float) -> dict:
    env = dict(os.environ, OPASSESS_DSV3_LAYERS=str(layers) if layers else "")
    return run_child([sys.executable, __file__, "--one", "--dtype", dtype], timeout, env)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=None, help="override the depth of 61 layers")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--repeat", type=int, default=1, help="runs, each in a fresh process; the fastest counts")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(args.dtype)))
        return 0
    runs = [_child(args.dtype, args.layers, args.timeout) for _ in range(args.repeat)]
    depth = f"{args.layers} layers" if args.layers else "61 layers"
    print(f"opassess scan of DeepSeek-V3 671B-shaped ({depth}, {args.dtype}, meta device), each run in its own process")
    print(f"{'run':>3} {'seconds':>8} {'peak MB':>8}  detail")
    for number, run in enumerate(runs, 1):
        if "error" in run:
            print(f"{number:>3} {'-':>8} {'-':>8}  {run['error']}")
            continue
        print(f"{number:>3} {run['seconds']:8.2f} {run['peak_mb']:8.0f}  {run['parameters']:,} parameters, "
              f"imports {run['import_seconds']:.1f} s before the clock, "
              f"capture {run['method']} on {run['device']}, {run['calls']} calls, {run['op_types']} op types, "
              f"{run['grouped_mm_calls']} grouped GEMMs ({run['grouped_mm_flops']:.3g} FLOPs)")
    good = [r for r in runs if "error" not in r]
    if not good:
        return 1
    best = min(good, key=lambda r: r["seconds"])
    met = best["seconds"] < TARGET_SECONDS and best["peak_mb"] < TARGET_MB
    print(f"fastest: {best['seconds']:.2f} s, {best['peak_mb']:.0f} MB; target under {TARGET_SECONDS:.0f} s and "
          f"{TARGET_MB} MB at full depth: {'met' if met else 'not met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
