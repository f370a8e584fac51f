"""The one worker body, for single scans, local portfolios and Ray tasks alike: load and trace the model, send the
capture (wire.py) or one error, nothing else. Inventory, classification, findings, scores, estimates and reports
are built by the parent from the capture it has checked (`assess_outcome`), never in the process that ran the model.
"""
from __future__ import annotations

import os
import resource
import sys
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

from .. import errors
from .process import Channel, Outcome, WorkerFailed
from .sandbox import Plan, apply, refused
from .wire import BadCapture, decode_capture, decode_onnx, encode_capture

if TYPE_CHECKING:
    from ..assessment import Assessment
    from ..options import ScanOptions
    from ..records import ModelInfo
    from .inputs import Pinned

DEFAULT_TIMEOUT = 600.0  # seconds a model may take, in a single scan and in a portfolio
# What every worker imports, imported before the fork (single scans) or in the forkserver (portfolios) so each worker
# inherits it; none of it runs model code. torch's tracing machinery (torch._dynamo, torch.export, sympy) is left to
# the worker: a dispatch capture (large models) never needs it.
PRELOAD = ("torch", "torch.fx", "opassess.pipeline.capture", "opassess.load", "opassess.trace",
           "opassess.classify.decompose", "opassess.isolation.wire")


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker needs besides the scan options: the parent's (cwd, environment, sys.path) for a worker that
    comes from a forkserver (None when it is forked from the parent itself), the address-space cap (0: none) and
    whether to print the traceback of an error (--debug)."""

    where: tuple[str, Mapping[str, str], tuple[str, ...]] | None = None
    memory_cap: int = 0
    debug: bool = False
    sandbox: Plan | None = None  # what the worker applies before the model runs (sandbox.py); None: nothing


def _mapped_bytes() -> int:
    """The address space this process has mapped now (0 where /proc does not say)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def cap_memory(cap: int) -> None:
    """Let the model allocate at most `cap` bytes of address space beyond what the worker has mapped already (a CUDA
    build of torch maps about 3 GiB at import, a CPU build 0.6 GiB: an absolute cap would mean different things)."""
    if cap > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = _mapped_bytes() + cap
        limit = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _out_of_memory(exc: BaseException | None) -> bool:
    """MemoryError, or torch's allocator failing, anywhere in the chain of causes (the loader wraps them)."""
    seen = 0
    while exc is not None and seen < 10:
        text = str(exc).lower()
        if isinstance(exc, MemoryError) or "can't allocate memory" in text or "not enough memory" in text:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _memory_message(exc: BaseException, cap: int) -> str:
    within = f" under the memory cap of {cap / 2**30:.1f} GiB" if cap else ""
    first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return f"out of memory{within}: {first}"


def capture_body(options: ScanOptions, setup: WorkerSetup, channel: Channel) -> None:
    """Worker body: load and trace the model, send ('ok', capture), ('error', {type, message}) or ('failed', cause)."""
    if setup.where is not None:
        cwd, environ, sys_path = setup.where
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = list(sys_path)
    import torch  # noqa: F401 - mapped before the cap is measured: the cap is for the model, not for opassess

    from ..pipeline.capture import capture_stage

    cap_memory(setup.memory_cap)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing model leaves no core file behind
    applied = None
    if setup.sandbox is not None:
        try:
            applied = apply(setup.sandbox)  # before any model code: the user's files and the network out of reach
        except OSError as exc:
            channel.send("failed", f"--sandbox {setup.sandbox.mode}: the sandbox could not be applied: {exc}"[:10_000])
            channel.close()
            return
    # the timeout counts from here, not from the worker's start-up; what the sandbox applied is said before any model
    # code has run (the model cannot make it up)
    channel.send("begun", applied)
    payload: dict[str, object] | str
    try:
        kind, payload = "ok", encode_capture(*capture_stage(options, lambda text: channel.send("progress", text)))
        if getattr(options, "route", None) == "onnx":  # the export runs model code too: here, never in the parent
            from ..routes.onnx_export import export_plain

            payload["onnx"] = export_plain(options, lambda text: channel.send("progress", text))
    except Exception as exc:  # noqa: BLE001 - the parent turns it into the line and exit code it always was
        if setup.debug:
            traceback.print_exc()
        if _out_of_memory(exc):
            kind, payload = "failed", _memory_message(exc, setup.memory_cap)
        else:
            name = type(exc).__name__ if isinstance(exc, errors.OpassessError) else "InternalError"
            text = str(exc) if isinstance(exc, errors.OpassessError) else f"{type(exc).__name__}: {exc}"
            if applied not in (None, "off"):
                text += refused(exc)
            kind, payload = "error", {"type": name, "message": text[:100_000]}
    except BaseException as exc:  # noqa: BLE001 - sys.exit(0) or a stray KeyboardInterrupt in model code
        kind, payload = "failed", f"the model raised {type(exc).__name__}({exc}) instead of returning"[:10_000]
    channel.send(kind, payload)
    channel.close()


def _error(payload: Mapping[str, str]) -> errors.OpassessError:
    """The worker's error as the parent raises it: a known error class of opassess's by name, else InternalError."""
    cls = getattr(errors, payload["type"], None)
    if not (isinstance(cls, type) and issubclass(cls, errors.OpassessError)):
        from ..source import SourceScanError

        cls = SourceScanError if payload["type"] == "SourceScanError" else errors.InternalError
    return cls(payload["message"])


def _named_here(info: ModelInfo, options: ScanOptions) -> ModelInfo:
    """The capture's model named by this process, which knows what it asked the worker to scan: the file (or module)
    and factory come from the options, never from the worker; the class name stays the worker's claim."""
    from ..load import LoadRequest, named_source

    named = named_source(LoadRequest(target=options.target, entry=options.entry))
    return info if named is None else replace(info, source=named[0], entry=named[1])


def process_age() -> float | None:
    """Seconds since this process started (its interpreter start and imports included), from /proc; None elsewhere."""
    try:
        with open("/proc/self/stat") as stat:
            ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime, in clock ticks since boot
        with open("/proc/uptime") as uptime:
            return max(0.0, float(uptime.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def worker_seconds(outcome: Outcome, seconds: dict[str, float], start: float | None = None) -> dict[str, float]:
    """The worker's stage times with what the run cost around them, so that they add up to the wall time waited:
    'start' (a single scan: the process's start, imports and checks before the worker's fork), 'worker' the
    worker's start-up (fork to the model's start), 'transfer' the rest of the wait (sending, receiving and checking
    the capture, the worker's exit)."""
    if outcome.begun is None:
        return dict(seconds)
    rest = outcome.seconds - outcome.begun - sum(seconds.values())
    head = {"start": round(start, 6)} if start is not None else {}
    return {**head, "worker": round(outcome.begun, 6), **seconds, "transfer": round(max(0.0, rest), 6)}


def assess_outcome(outcome: Outcome, options: ScanOptions, target: str,
                   progress: Callable[[str], None] | None = None, start: float | None = None,
                   pinned: Pinned | None = None) -> Assessment:
    """The Assessment the parent builds from a worker's outcome (from the `pinned` inputs: inputs.py); the worker's
    error raised again; WorkerFailed naming the target when the worker failed or sent something that is not a
    capture."""
    from ..pipeline.assess import assess_capture  # the assessing side: loaded by the parent only
    from .inputs import held

    pinned = pinned or held()
    if outcome.status == "ok":
        try:
            info, capture, seconds = decode_capture(outcome.payload)
            export = decode_onnx(outcome.payload)
        except BadCapture as exc:
            raise WorkerFailed(f"{target}: {exc}") from None
        seconds = worker_seconds(outcome, seconds, start)
        info = _named_here(info, options)
        assessment = assess_capture(options, info, capture, seconds, progress or (lambda _text: None),
                                    onnx_export=export,
                                    pinned=None if pinned is None else (pinned.kb, pinned.weights, pinned.recorded()))
        return replace(assessment, sandbox=outcome.sandbox)
    if outcome.status == "error":
        raise _error(cast("Mapping[str, str]", outcome.payload))  # Job._take admits only {type, message} strings
    raise WorkerFailed(f"{target}: {outcome.payload}")
