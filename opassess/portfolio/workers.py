"""Local worker processes: one model per fresh process, with a deadline, an address-space cap and crash isolation.

Every model is scanned in a fresh worker process (forkserver where the platform has it, else spawn) with a
per-model timeout (counted from the moment the worker begins the scan, not from its start-up) and a cap on the
address space it may add (resource.setrlimit(RLIMIT_AS)). A worker that hangs is killed at its deadline; one
that aborts, segfaults or runs out of memory is reported as failed with its cause; every other model's result is
still written.

`LocalWorkers` is one Executor: the portfolio hands it the pending models and a `finish` callback and does not care
where they run, so an executor on other machines can take its place.
"""
from __future__ import annotations

import os
import resource
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any, Protocol

from ..ci.policy import Policy, evaluate
from ..errors import OpassessError
from ..pipeline import ScanOptions
from .records import ModelResult, PortfolioEvent, PortfolioOptions
from .targets import ModelTarget

_KILL_GRACE = 5.0  # seconds a worker that has sent its result gets to exit before it is killed
_POLL = 0.5  # seconds between deadline checks while waiting on workers
# Seconds a worker may take to start (the forkserver imports torch once, 6-8 s on a loaded 2-core machine) before
# its --timeout, which counts from the moment it reports that it has begun the scan, starts to run.
_START_GRACE = 120.0

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


def _crash_cause(exitcode: int | None) -> str:
    if exitcode is None:
        return "worker ended without a result"
    if exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        text = {signal.SIGABRT: "aborted", signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error",
                signal.SIGFPE: "floating-point exception", signal.SIGILL: "illegal instruction",
                signal.SIGKILL: "killed (out of memory, or from outside)"}.get(number, "killed by a signal")
        return f"worker crashed: {name} ({text})"
    return f"worker exited with status {exitcode} without a result"


@dataclass
class _Running:
    model: ModelTarget
    process: Any
    conn: mp_connection.Connection
    started: float
    deadline: float


class LocalWorkers:
    """The Executor of local worker processes, at most options.jobs at a time."""

    def run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
            notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None:
        """Start, watch and collect the workers; an interruption leaves no worker behind."""
        context = _context()
        setup = worker_setup(options, options.memory_cap())
        queue = list(pending)
        running: list[_Running] = []
        try:
            while queue or running:
                while queue and len(running) < max(1, options.jobs):
                    model = queue.pop(0)
                    receiver, sender = context.Pipe(duplex=False)
                    process = context.Process(target=_work, name=f"opassess-{model.name}",
                                              args=(model.scan_options(options.scan), setup, sender),
                                              daemon=True)
                    started = time.monotonic()
                    process.start()
                    sender.close()  # the parent keeps only the reading end: EOF when the worker dies
                    running.append(_Running(model, process, receiver, started,
                                            started + _START_GRACE + options.timeout))
                    notify(PortfolioEvent("start", model.name, done, total))
                now = time.monotonic()
                wait_for = min(max(0.0, min(r.deadline for r in running) - now), _POLL)
                mp_connection.wait([r.conn for r in running] + [r.process.sentinel for r in running], wait_for)
                for job in list(running):
                    outcome = _collect(job, options.timeout)
                    if outcome is None:
                        continue
                    running.remove(job)
                    status, payload = outcome
                    seconds = time.monotonic() - job.started
                    if status == "ok":
                        finish(job.model, ModelResult(job.model.target, job.model.name, "ok", None, (), seconds),
                               payload)
                    else:
                        finish(job.model, ModelResult(job.model.target, job.model.name, "failed", payload, (),
                                                      seconds), None)
                    done += 1
        finally:
            for job in running:  # interrupted: leave no worker behind
                _stop(job.process)
                job.conn.close()


def _collect(job: _Running, timeout: float) -> tuple[str, Any] | None:
    """The worker's outcome once there is one: its message, its crash, or its timeout; None while it runs."""
    if job.conn.poll():
        try:
            status, payload = job.conn.recv()
        except (EOFError, OSError):  # died before (or while) sending
            job.process.join(_KILL_GRACE)
            job.conn.close()
            return "failed", _crash_cause(job.process.exitcode)
        if status == "begun":  # set up and about to scan: the model's own time starts now
            job.started = time.monotonic()
            job.deadline = job.started + timeout
            return None
        job.process.join(_KILL_GRACE)
        if job.process.is_alive():
            _stop(job.process)
        job.conn.close()
        return status, payload
    if not job.process.is_alive():
        job.process.join()
        job.conn.close()
        return "failed", _crash_cause(job.process.exitcode)
    if time.monotonic() >= job.deadline:
        _stop(job.process)
        job.conn.close()
        return "failed", f"timed out after {timeout:g} s (worker killed)"
    return None


def _stop(process: Any) -> None:
    if process.is_alive():
        process.kill()  # SIGKILL: a worker stuck in C code does not answer SIGTERM
    process.join(_KILL_GRACE)


def scan_in_worker(options: ScanOptions, setup: _WorkerSetup, timeout: float) -> tuple[str, Any, float]:
    """Scan one model in a fresh worker process of this one and wait for it: ('ok', {format: text}, seconds) or
    ('failed', cause, seconds), its crash or its timeout included (what a remote executor runs on its node)."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_work, name=f"opassess-{Path(options.target).stem}",
                              args=(options, setup, sender), daemon=True)
    started = time.monotonic()
    process.start()
    sender.close()
    job = _Running(ModelTarget(options.target, Path(options.target).stem), process, receiver, started,
                   started + _START_GRACE + timeout)
    try:
        while True:
            mp_connection.wait([job.conn, process.sentinel], max(0.0, min(job.deadline - time.monotonic(), _POLL)))
            outcome = _collect(job, timeout)
            if outcome is not None:
                return outcome[0], outcome[1], time.monotonic() - started
    finally:
        _stop(process)  # cancelled or interrupted: leave no worker behind
