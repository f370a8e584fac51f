"""Benchmark: what the graph-mode analysis adds to a scan, for the Llama-2-7B shape of examples/llama_like.py.

    python benchmarks/bench_graph.py                # 7B shape, full depth
    python benchmarks/bench_graph.py --layers 2     # reduced size, as CI runs it

Three scans of the same model, each in a fresh process (the fastest of --repeat runs): --no-graph-mode, the default
(graph mode from the capture: per-operator verdicts and the breaks in the dispatched ATen calls), and --graph-mode
dynamo (torch._dynamo.explain on the forward as well). Prints per scan the wall time of the assessment, the
graph-mode stage and the dynamo run as the assessment timed them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from _common import ROOT, best_of, peak_mb

LLAMA = ROOT / "examples" / "llama_like.py"
SIZES = {"7b": "build_model_7b", "70b": "build_model_70b"}
MODES = {"off": "off", "capture": "capture", "dynamo": "dynamo"}


def _measure(mode: str, size: str, layers: int | None) -> dict:
    """One scan in this process with --graph-mode `mode`; its figures."""
    sys.path.insert(0, str(ROOT))
    os.environ["OPASSESS_LLAMA_CONFIG"] = size
    if layers:
        os.environ["OPASSESS_LLAMA_LAYERS"] = str(layers)
    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess

    started = time.perf_counter()
    result = assess(ScanOptions(target=str(LLAMA), graph_mode=mode))
    seconds = time.perf_counter() - started
    graph = result.graph_mode
    detail = "" if graph is None else ", ".join(f"{b.backend} {'ready' if b.ready else f'{len(b.breaks)} breaks'}"
                                                for b in graph.backends)
    return {"kind": mode, "size": size, "seconds": seconds, "peak_mb": peak_mb(),
            "graph_mode_s": result.seconds.get("graph_mode", 0.0), "dynamo_s": result.seconds.get("dynamo", 0.0),
            "dynamo_graphs": graph.dynamo.graphs if graph is not None and graph.dynamo is not None else None,
            "detail": detail}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="7b")
    parser.add_argument("--layers", type=int, default=None, help="override the number of decoder layers")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement, the fastest reported")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--one", choices=sorted(MODES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(_measure(args.one, args.size, args.layers)))
        return 0
    rows = [best_of(args.repeat, __file__, mode, args.size, args.layers, args.timeout) for mode in MODES]
    base = next((r["seconds"] for r in rows if r.get("kind") == "off" and "error" not in r), None)
    print(f"{'graph mode':<10} {'scan s':>8} {'+ vs off':>9} {'graph s':>8} {'dynamo s':>9} {'peak MB':>8}  detail")
    for r in rows:
        if "error" in r:
            print(f"{r['kind']:<10} error: {r['error']}")
            continue
        extra = f"{r['seconds'] - base:+.2f}" if base is not None else "-"
        print(f"{r['kind']:<10} {r['seconds']:>8.2f} {extra:>9} {r['graph_mode_s']:>8.2f} {r['dynamo_s']:>9.2f} "
              f"{r['peak_mb']:>8.0f}  {r['detail']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
