"""Benchmark: opassess scan end to end vs torch.export vs the floor (recording one meta forward's ATen ops).

Each measurement runs in its own child process so that peak memory (ru_maxrss) belongs to it alone. Models are
the Llama-2-shaped decoders of examples/llama_like.py, built on the meta device (no weights are allocated).

    python benchmarks/bench_scan.py                 # 7B- and 70B-shaped, full depth (several minutes)
    python benchmarks/bench_scan.py --layers 2      # reduced size, as CI runs it
    python benchmarks/bench_scan.py --skip-export   # leave out torch.export (its 70B run is the slowest)

Measurements: floor, scan (the assessment in this process), isolated (the assessment as `opassess scan FILE` runs
it: a keeper and worker forked from this process, the view sent back; its peak RSS is the worker's), export.
Prints one table: seconds and peak RSS per measurement, and the ratios to the floor and to export. Each
measurement is repeated (--repeat, default 5, each in a fresh process) and the fastest run is reported: on a
shared 2-core machine single runs vary by +-0.5 s, and the minimum is the figure least disturbed by others.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _common import ROOT, best_of, call_counter, peak_mb

LLAMA = ROOT / "examples" / "llama_like.py"
SIZES = {"7b": "build_model_7b", "70b": "build_model_70b"}


def _measure(kind: str, size: str, layers: int | None) -> dict:
    """Run one measurement in this process and return its figures."""
    import torch

    sys.path.insert(0, str(ROOT))
    env_layers = str(layers) if layers else ""
    os.environ["OPASSESS_LLAMA_CONFIG"] = size
    if env_layers:
        os.environ["OPASSESS_LLAMA_LAYERS"] = env_layers
    baseline_mb = peak_mb()
    started = time.perf_counter()
    if kind == "scan":
        from opassess.options import ScanOptions
        from opassess.pipeline.assess import assess

        result = assess(ScanOptions(target=str(LLAMA)))
        detail = f"{len(result.inventory.capture.nodes)} calls, {len(result.classified)} op types, " \
                 f"capture {result.capture.method}"
    elif kind == "isolated":  # as `opassess scan FILE` runs it: a forked worker under a keeper, the view sent back
        import resource

        from opassess.isolation.scan import finish_assessment, start_assessment
        from opassess.options import ScanOptions
        from opassess.report import build_view

        options = ScanOptions(target=str(LLAMA))
        view = build_view(finish_assessment(start_assessment(options, timeout=600, debug=False), options))
        capture = view.document["model"]["capture"]
        detail = f"{len(view.document['operators'])} op types, capture {capture['method']} (in a worker)"
        seconds = time.perf_counter() - started
        worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the worker's peak
        return {"kind": kind, "size": size, "seconds": seconds, "peak_mb": max(peak_mb(), worker_mb),
                "import_mb": baseline_mb, "detail": detail}
    else:
        from opassess.load import LoadRequest, load_model

        # Building the model on meta is part of every measurement (the scan has to build it too).
        loaded = load_model(LoadRequest(target=str(LLAMA)))
        build_s = time.perf_counter() - started
        if kind == "export":
            exported = torch.export.export(loaded.module, loaded.args, loaded.kwargs, strict=False)
            detail = f"{len(exported.graph.nodes)} graph nodes (build {build_s:.1f}s)"
        elif kind == "floor":
            counter = call_counter()
            with torch.no_grad(), counter:
                loaded.module(*loaded.args, **loaded.kwargs)
            detail = f"{counter.calls} ATen calls (build {build_s:.1f}s)"
        else:
            raise SystemExit(f"unknown measurement {kind}")
    seconds = time.perf_counter() - started
    return {"kind": kind, "size": size, "seconds": seconds, "peak_mb": peak_mb(), "import_mb": baseline_mb,
            "detail": detail}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="7b,70b")
    parser.add_argument("--layers", type=int, default=None, help="override the layer count (CI: 2)")
    parser.add_argument("--skip-export", action="store_true")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the fastest is reported")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--size", default="7b", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(args.one, args.size, args.layers)))
        return 0
    kinds = ["floor", "scan", "isolated"] + ([] if args.skip_export else ["export"])
    rows = []
    for size in args.sizes.split(","):
        results = {kind: best_of(args.repeat, __file__, kind, size, args.layers, args.timeout) for kind in kinds}
        rows.append((size, results))
    depth = f"{args.layers} layers" if args.layers else "full depth"
    print(f"opassess scan benchmark ({depth}; meta device; fastest of {args.repeat} runs, each in its own process)")
    header = f"{'model':6} {'measure':8} {'seconds':>8} {'peak MB':>8} {'x floor':>8} {'x export':>9}  detail"
    print(header)
    print("-" * len(header))
    failed = False
    for size, results in rows:
        floor = results["floor"].get("seconds")
        export = results.get("export", {}).get("seconds")
        for kind in kinds:
            r = results[kind]
            if "error" in r:
                failed = failed or kind != "export"
                print(f"{size:6} {kind:8} {'-':>8} {'-':>8} {'-':>8} {'-':>9}  {r['error']}")
                continue
            x_floor = f"{r['seconds'] / floor:.2f}" if floor else "-"
            x_export = f"{r['seconds'] / export:.2f}" if export else "-"
            print(f"{size:6} {kind:8} {r['seconds']:8.2f} {r['peak_mb']:8.0f} {x_floor:>8} {x_export:>9}  "
                  f"{r['detail']}")
    print("targets: scan (in process) and isolated (in a worker, as the CLI runs it) within 1.5x of the floor and "
          "well under export; peak under 2048 MB for 70b")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
