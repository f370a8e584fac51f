"""The capture side of the spine (stages 1-2): load the model and trace it. All a worker runs (isolation/worker.py),
and all it sends back (isolation/wire.py); the parent assesses the capture (assess.py)."""
from __future__ import annotations

from dataclasses import replace

from ..graphmode.dynamo import run_dynamo
from ..inventory import build_inventory
from ..load import LoadRequest, load_model
from ..options import ScanOptions
from ..records import Capture, Inventory, ModelInfo
from ..trace.driver import trace_model
from ..trace.lazy_dynamo import dynamo_on_demand
from ..trace.methods import check_methods
from ..trace.train import TrainOptions
from . import Progress, noop, timed


def capture_stage(options: ScanOptions, progress: Progress = noop) -> tuple[ModelInfo, Capture, dict[str, float]]:
    """Load and trace the model (stages 1-2), with --graph-mode dynamo torch._dynamo's run on it too (model code runs
    there): the model's facts, its capture and the seconds of each stage."""
    if options.methods:
        check_methods(options.methods)  # a mistyped --capture fails before any model code runs
    seconds: dict[str, float] = {}
    with dynamo_on_demand():  # torch._dynamo only if the model or a capture method uses it (trace/lazy_dynamo.py)
        with timed(seconds, "load"):
            progress(f"loading {options.target}")
            loaded = load_model(LoadRequest.of(options))
        with timed(seconds, "trace"):
            train = TrainOptions(amp=options.amp) if options.train else None
            capture = trace_model(loaded, options.methods, progress, train, drive=options.drive)
    if options.graph_mode == "dynamo":  # torch._dynamo on the model, here in the worker (model code runs here)
        progress("running torch._dynamo on the forward (--graph-mode dynamo)")
        with timed(seconds, "dynamo"):
            on = loaded if capture.device == loaded.device else loaded.rebuild(capture.device)
            run = run_dynamo(on.module, on.args, on.kwargs)
            if run.error and on.device == "meta":  # a value read on the host (.item()) needs real data: the CPU
                on = on.rebuild("cpu")
                run = run_dynamo(on.module, on.args, on.kwargs)
            capture = replace(capture, dynamo=run)
    progress(f"captured {len(capture.nodes)} operator calls with {capture.method} on {capture.device}")
    return loaded.info, capture, seconds


def scan_inventory(options: ScanOptions, progress: Progress = noop) -> Inventory:
    """Load and trace the model and group its operators (stages 1-3), in this process."""
    info, capture, _ = capture_stage(options, progress)
    return build_inventory(info, capture)
