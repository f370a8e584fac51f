"""Benchmark: `opassess scan --train` end to end vs the floor (one recorded training step on meta).

Each measurement runs in its own child process so that peak memory (ru_maxrss) belongs to it alone. The model is
Hugging Face transformers' Llama at Llama-2-7B's sizes (benchmarks/llama2_7b_hf.py), built on the meta device (no
weights, no gradients and no optimizer state are allocated); without transformers installed, the Llama-2-shaped
decoder of examples/llama_like.py (the table's first line says which).

    python benchmarks/bench_train.py                # 7B-shaped, full depth
    python benchmarks/bench_train.py --layers 2     # reduced size, as CI runs it

The floor is what any tool capturing a training step has to do: build the model, then run one forward in train
mode, a scalar loss, backward() and one AdamW(foreach=True) step under a dispatch mode that counts the ATen calls
(with torch.compiler.is_compiling() true for the HF model, whose mask helpers read a value on meta otherwise: the
scan's training step takes the same path). The scan does that plus what makes it an assessment: operator nodes with
attributes and source lines, backward attribution per operator, gradient clipping (part of its default step),
classification, findings and estimates. Prints one table: seconds and peak RSS per measurement and the ratio
scan/floor, fastest of --repeat runs.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import time

from _common import ROOT, best_of, call_counter, peak_mb

HF = importlib.util.find_spec("transformers") is not None
MODEL = ROOT / "benchmarks" / "llama2_7b_hf.py" if HF else ROOT / "examples" / "llama_like.py"
TARGET_RATIO = 2.0  # scan --train within 2x of the floor
TARGET_PEAK_MB = 2048


def _measure(kind: str, size: str, layers: int | None) -> dict:
    """Run one measurement in this process and return its figures."""
    import torch

    sys.path.insert(0, str(ROOT))
    os.environ["OPASSESS_LLAMA_CONFIG"] = size
    if layers:
        os.environ["OPASSESS_LLAMA_LAYERS"] = os.environ["OPASSESS_LLAMA_HF_LAYERS"] = str(layers)
    started = time.perf_counter()
    if kind == "scan":
        from opassess.options import ScanOptions
        from opassess.pipeline.assess import assess

        result = assess(ScanOptions(target=str(MODEL), train=True))
        nodes = result.inventory.capture.nodes
        detail = f"{len(nodes)} calls, {sum(len(n.backward) for n in nodes)} backward ATen calls, " \
                 f"{len(result.classified)} op types"
    elif kind == "floor":
        from opassess.load import LoadRequest, load_model
        from opassess.trace.patches import compiling

        loaded = load_model(LoadRequest(target=str(MODEL)))  # building on meta is part of every measurement
        build_s = time.perf_counter() - started
        counter = call_counter()
        model = loaded.module.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        with counter, compiling() if HF else contextlib.nullcontext():
            output = model(*loaded.args, **loaded.kwargs)
            (output.logits if HF else output).mean().backward()
            optimizer.step()
        detail = f"{counter.calls} ATen calls (build {build_s:.1f}s)"
    else:
        raise SystemExit(f"unknown measurement {kind}")
    seconds = time.perf_counter() - started
    return {"kind": kind, "size": size, "seconds": seconds, "peak_mb": peak_mb(), "detail": detail}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="7b")
    parser.add_argument("--layers", type=int, default=None, help="override the layer count (CI: 2)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest is reported")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--size", default="7b", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_measure(args.one, args.size, args.layers)))
        return 0
    kinds = ["floor", "scan"]
    depth = f"{args.layers} layers" if args.layers else "full depth"
    print(f"opassess scan --train benchmark: {MODEL.relative_to(ROOT)} ({depth}; meta device; fastest of "
          f"{args.repeat} runs, each in its own process)")
    header = f"{'model':6} {'measure':8} {'seconds':>8} {'peak MB':>8} {'x floor':>8}  detail"
    print(header)
    print("-" * len(header))
    failed = False
    for size in args.sizes.split(","):
        results = {kind: best_of(args.repeat, __file__, kind, size, args.layers, args.timeout) for kind in kinds}
        floor = results["floor"].get("seconds")
        for kind in kinds:
            r = results[kind]
            if "error" in r:
                failed = True
                print(f"{size:6} {kind:8} {'-':>8} {'-':>8} {'-':>8}  {r['error']}")
                continue
            x_floor = f"{r['seconds'] / floor:.2f}" if floor else "-"
            print(f"{size:6} {kind:8} {r['seconds']:8.2f} {r['peak_mb']:8.0f} {x_floor:>8}  {r['detail']}")
    print(f"targets: scan --train within {TARGET_RATIO:g}x of the floor, peak under {TARGET_PEAK_MB} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
