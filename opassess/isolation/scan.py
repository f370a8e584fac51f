"""One model's capture in a worker (process.py, worker.py), for `opassess scan FILE`; the parent assesses it.

The keeper is forked from the CLI process itself, which has imported torch and what a scan needs (PRELOAD) but run
no model code and started no thread: a worker costs a fork, not a torch import, so a scan stays within its speed
goal (benchmarks/bench_scan.py measures the isolated scan against its floor). The worker sends the capture only;
this process checks it (wire.py) and classifies, scores and renders it.
OPASSESS_IN_PROCESS=1 runs the model in the CLI process instead, for a debugger (no isolation, no --timeout).
"""
from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.context import ForkContext, ForkServerContext
from pathlib import Path
from typing import TYPE_CHECKING

from ..options import IN_PROCESS_ENV
from .process import Job
from .sandbox import prepared
from .worker import DEFAULT_TIMEOUT, PRELOAD, WorkerSetup, assess_outcome, capture_body, process_age

if TYPE_CHECKING:
    from ..assessment import Assessment
    from ..options import ScanOptions
    from .inputs import Pinned

__all__ = ["DEFAULT_TIMEOUT", "Started", "finish_assessment", "in_process", "start_assessment"]


@dataclass(frozen=True)
class Started:
    """A single scan whose worker has been started: its job, the inputs read before the model ran (verified after
    it), what removes the worker's private folders, and the seconds this process ran before the fork (the report's
    seconds['start'])."""

    job: Job
    pinned: Pinned
    private: contextlib.ExitStack
    start_up: float | None


def in_process() -> bool:
    """True when OPASSESS_IN_PROCESS=1 asks for the model to run in this process, or the platform cannot fork."""
    return os.environ.get(IN_PROCESS_ENV) == "1" or "fork" not in multiprocessing.get_all_start_methods()


def start_assessment(options: ScanOptions, *, timeout: float, debug: bool, templates: Path | None = None,
                     extra: tuple[Path, ...] = ()) -> Started:
    """Check the configuration and read every input (inputs.py: the knowledge base, weights, device profile,
    `templates`, the `extra` files such as a baseline), then fork the keeper and worker that capture `options`
    (before any thread, such as a progress spinner, starts)."""
    from ..startup import imports_without_gc
    from .inputs import pin_inputs

    with imports_without_gc():  # torch's, in the command: frozen, and shared with the worker
        for name in PRELOAD:
            importlib.import_module(name)
    pinned = pin_inputs(options, templates, extra)  # a bad --weights, --kb, --target or --source fails here
    sandbox = contextlib.ExitStack()
    plan = sandbox.enter_context(prepared(options.sandbox))  # --sandbox require fails here, before any model code
    context: ForkContext | ForkServerContext = multiprocessing.get_context("fork")
    where = None
    if options.train and not _autograd_forks_cleanly():  # then a worker of a fresh forkserver runs the step
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(PRELOAD))
        where = (os.getcwd(), dict(os.environ), tuple(sys.path))
    start = process_age()  # the run so far: interpreter start, imports, checks (the report's seconds['start'])
    try:
        job = Job(context, capture_body, (options, WorkerSetup(where=where, debug=debug, sandbox=plan)),
                  name=f"opassess-{Path(options.target).stem}", timeout=timeout)
    except BaseException:
        sandbox.close()
        raise
    return Started(job=job, pinned=pinned, private=sandbox, start_up=start)


def _autograd_forks_cleanly() -> bool:
    """False when this process has started autograd's device threads: torch then refuses backward() in any fork of
    it ("Unable to handle autograd's threading in combination with fork-based multiprocessing"). The opassess
    command never runs backward() itself, so this is for a library caller (or a test process) that has."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            import torch

            torch.ones(1, requires_grad=True).sum().backward()
            code = 0
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def finish_assessment(started: Started, options: ScanOptions,
                      progress: Callable[[str], None] | None = None) -> Assessment:
    """Wait for the worker and assess its capture here: the Assessment, the worker's error re-raised, or
    WorkerFailed naming the target and what happened."""
    from .inputs import verify

    job = started.job
    job.on_progress = progress
    try:
        outcome = job.wait()
    finally:
        job.stop()  # interrupted or terminated: no worker left behind
        started.private.close()  # nor its private folder
    assessment = assess_outcome(outcome, options, options.target, progress, started.start_up, started.pinned)
    verify(started.pinned)  # what it rests on is what was read before the model ran, or there is no verdict
    return assessment
