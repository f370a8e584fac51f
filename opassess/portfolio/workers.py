"""Local worker processes: one model per fresh process, with a deadline, an address-space cap and crash isolation.

Every model is scanned in a fresh worker process with a per-model timeout (counted from the moment the worker
begins the scan, not from its start-up) and a cap on the address space it may add (resource.setrlimit(RLIMIT_AS)).
The worker is forked, in a process group of its own, by a keeper process (isolation/process.py) that the forkserver
starts (spawn where the platform has no forkserver): a model that kills its parent kills only its keeper. A worker
that hangs is killed, with its process group, at its deadline; one that aborts, segfaults, runs out of memory or
exits without a result is reported as failed with its cause; every other model's result is still written.

`LocalWorkers` is one Executor: the portfolio hands it the pending models and a `finish` callback and does not care
where they run, so an executor on other machines can take its place.
"""
from __future__ import annotations

import os
import resource
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any, Protocol

from ..ci.policy import Policy, evaluate
from ..errors import OpassessError
from ..isolation import Job, Outcome, stop_helpers
from ..isolation.process import POLL
from ..pipeline import ScanOptions
from .records import ModelResult, PortfolioEvent, PortfolioOptions
from .targets import ModelTarget

Finish = Callable[[ModelTarget, ModelResult, Mapping[str, str] | None], None]


class Executor(Protocol):
    """Runs the scans of `pending` models and calls `finish(model, result, {format: text} or None)` for each as it
    ends, `notify` with a 'start' event as each begins; `done` of `total` models had finished before."""

    def run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
            notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None: ...


@dataclass(frozen=True)
class _WorkerSetup:
    """What a worker needs besides the scan options to behave like the parent (forkserver children do not inherit
    the parent's current directory, environment or sys.path as they are now)."""

    cwd: str
    environ: Mapping[str, str]
    sys_path: tuple[str, ...]
    memory_cap: int
    formats: tuple[str, ...]
    policy: Policy


def worker_setup(options: PortfolioOptions, memory_cap: int, *, cwd: str | None = None,
                 drop_path: str | None = None) -> _WorkerSetup:
    """What a worker started from this process needs: its current directory (this one unless given), environment
    and sys.path (less `drop_path`), the memory cap and what to render."""
    return _WorkerSetup(cwd=cwd or os.getcwd(), environ=dict(os.environ),
                        sys_path=tuple(p for p in sys.path if drop_path is None or p != drop_path),
                        memory_cap=memory_cap, formats=tuple(f for f in options.formats if f != "json"),
                        policy=options.policy)


def _mapped_bytes() -> int:
    """The address space this process has mapped now (0 where /proc does not say)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _cap_memory(cap: int) -> None:
    """Let the model allocate at most `cap` bytes of address space beyond what the worker has mapped already.

    The cap is on top of torch's own mappings: a CUDA build of torch maps about 3 GiB of address space at import
    (its GPU libraries, on a machine without a GPU too) against about 0.6 GiB for a CPU build, so an absolute cap
    of 2 GiB would leave one build nothing to allocate with and the other 1.4 GiB."""
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


def _work(options: ScanOptions, setup: _WorkerSetup, conn: mp_connection.Connection) -> None:
    """Worker body: scan one model, render its reports, send ('ok', {format: text}) or ('failed', cause)."""
    os.chdir(setup.cwd)
    os.environ.clear()
    os.environ.update(setup.environ)
    sys.path[:] = list(setup.sys_path)
    import torch  # noqa: F401 - mapped before the cap is measured (preloaded already under forkserver)

    from .. import pipeline  # noqa: F401 - likewise: the cap is for the model, not for opassess
    from ..report import templates, view  # noqa: F401 - opassess.report loads these lazily; a worker needs them

    _cap_memory(setup.memory_cap)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing model leaves no core file behind
    conn.send(("begun", None))  # the timeout counts from here, not from the worker's start-up
    message: tuple[str, Any]
    try:
        from ..ci.snapshot import read_snapshot
        from ..pipeline import assess
        from ..report import RenderContext, build_view, render_view

        assessment = assess(options)
        view = build_view(assessment, options.language)  # built once: the JSON report, the gates, every format
        context = RenderContext(breaches=evaluate(read_snapshot(view.document), setup.policy))
        texts = {fmt: render_view(view, fmt, context) for fmt in ("json", *setup.formats)}
        message = ("ok", texts)
    except OpassessError as exc:
        message = ("failed", _memory_message(exc, setup.memory_cap) if _out_of_memory(exc) else str(exc))
    except BaseException as exc:  # noqa: BLE001 - the worker reports everything; the parent decides
        if _out_of_memory(exc):
            message = ("failed", _memory_message(exc, setup.memory_cap))
        else:
            first = str(exc).splitlines()[0][:300] if str(exc) else ""
            message = ("failed", f"internal error: {type(exc).__name__}: {first}".rstrip(": "))
    conn.send(message)
    conn.close()


def _context():
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        # Workers fork from a server that has torch and opassess imported already (nothing run yet, so no threads
        # to lose in the fork): a worker starts in ~0.1 s instead of the ~2 s that importing torch takes.
        context.set_forkserver_preload(["torch", "opassess.pipeline", "opassess.report", "opassess.report.view",
                                        "opassess.report.templates", "opassess.load", "opassess.trace"])
        return context
    return multiprocessing.get_context("spawn")


class LocalWorkers:
    """The Executor of local worker processes, at most options.jobs at a time."""

    def run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
            notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None:
        """Start, watch and collect the workers; an interruption leaves no worker behind."""
        context = _context()
        setup = worker_setup(options, options.memory_cap())
        queue = list(pending)
        running: list[tuple[ModelTarget, Job]] = []
        try:
            while queue or running:
                while queue and len(running) < max(1, options.jobs):
                    model = queue.pop(0)
                    running.append((model, Job(context, _work, (model.scan_options(options.scan), setup),
                                               name=f"opassess-{model.name}", timeout=options.timeout)))
                    notify(PortfolioEvent("start", model.name, done, total))
                wait_for = min(max(0.0, min(job.deadline for _, job in running) - time.monotonic()), POLL)
                mp_connection.wait([handle for _, job in running for handle in job.handles()], wait_for)
                for model, job in list(running):
                    outcome = job.poll()
                    if outcome is None:
                        continue
                    running.remove((model, job))
                    ok = outcome.status == "ok"
                    finish(model, ModelResult(model.target, model.name, "ok" if ok else "failed",
                                              None if ok else _cause(outcome), (), outcome.seconds),
                           outcome.payload if ok else None)
                    done += 1
        except KeyboardInterrupt:  # interrupted or terminated: no worker, forkserver or resource tracker left behind
            for _, job in running:
                job.stop()
            running.clear()
            stop_helpers()
            raise
        finally:
            for _, job in running:
                job.stop()


def _cause(outcome: Outcome) -> str:
    """A failed outcome's cause as one line (the worker body sends strings; anything else is described)."""
    return outcome.payload if isinstance(outcome.payload, str) else f"{type(outcome.payload).__name__}: " \
                                                                     f"{outcome.payload}"


def scan_in_worker(options: ScanOptions, setup: _WorkerSetup, timeout: float) -> tuple[str, Any, float]:
    """Scan one model in a fresh worker process of this one and wait for it: ('ok', {format: text}, seconds) or
    ('failed', cause, seconds), its crash or its timeout included (what a remote executor runs on its node)."""
    job = Job(_context(), _work, (options, setup), name=f"opassess-{Path(options.target).stem}", timeout=timeout)
    try:
        outcome = job.wait()
    finally:
        job.stop()  # cancelled or interrupted: leave no worker behind
    return (outcome.status, outcome.payload if outcome.status == "ok" else _cause(outcome), outcome.seconds)
