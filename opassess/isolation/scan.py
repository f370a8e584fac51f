"""One model's assessment in a worker (process.py), for `opassess scan FILE`: the parent gets the View and writes.

The keeper is forked from the CLI process itself, which has imported torch and what a scan needs (PRELOAD) but run
no model code and started no thread: a worker costs a fork, not a torch import, so a scan stays within its speed
goal (benchmarks/bench_scan.py measures the isolated scan against its floor).
OPASSESS_IN_PROCESS=1 runs the model in the CLI process instead, for a debugger (no isolation, no --timeout).
"""
from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import pickle
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import InternalError
from .process import Job, WorkerFailed

IN_PROCESS_ENV = "OPASSESS_IN_PROCESS"
DEFAULT_TIMEOUT = 600.0  # seconds a single scan's model may take


def in_process() -> bool:
    """True when OPASSESS_IN_PROCESS=1 asks for the model to run in this process, or the platform cannot fork."""
    return os.environ.get(IN_PROCESS_ENV) == "1" or "fork" not in multiprocessing.get_all_start_methods()


def _portable(exc: Exception) -> Exception:
    """`exc` if it survives pickling (so the parent re-raises it as it is), else an InternalError saying what it
    was."""
    try:
        copy = pickle.loads(pickle.dumps(exc))
        if isinstance(copy, Exception):
            return copy
    except Exception:  # noqa: BLE001, S110 - anything unpicklable is described instead
        pass
    return InternalError(f"{type(exc).__name__}: {exc}")


def _assess(options: Any, debug: bool, where: tuple | None, conn: Any) -> None:
    """Worker body: assess, build the view, send ('ok', view) or the error. `where` is the parent's (cwd,
    environment, sys.path) for a worker that comes from the forkserver rather than from the parent itself."""
    if where is not None:
        cwd, environ, sys_path = where
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        sys.path[:] = list(sys_path)
    from ..pipeline import assess
    from ..report import build_view

    conn.send(("begun", None))
    message: tuple[str, Any]
    try:
        assessment = assess(options, lambda text: conn.send(("progress", text)))
        message = ("ok", build_view(assessment, options.language))
    except Exception as exc:  # noqa: BLE001 - the parent turns it into the line and exit code it always was
        if debug:
            traceback.print_exc()
        message = ("error", _portable(exc))
    except BaseException as exc:  # noqa: BLE001 - sys.exit(0) or a stray KeyboardInterrupt in model code
        message = ("failed", f"the model raised {type(exc).__name__}({exc}) instead of returning")
    conn.send(message)
    conn.close()


# What every scan imports, imported here before the fork so each worker inherits it instead of importing it again;
# none of it runs model code. torch's tracing machinery (torch._dynamo, torch.export, sympy: seconds to import) is
# left to the worker: a dispatch capture (large models) never needs it, and a long-lived caller that has traced
# before (a test process) has it already.
PRELOAD = ("torch", "torch.fx", "opassess.pipeline", "opassess.load", "opassess.trace", "opassess.trace.decompose",
           "opassess.inventory", "opassess.classify", "opassess.findings", "opassess.kb", "opassess.score.criteria",
           "opassess.score.estimate", "opassess.score.signals", "opassess.score.weights_load", "opassess.report",
           "opassess.report.view", "opassess.report.templates")


def _preload(options: Any) -> None:
    """Import what a scan needs and read the weights and knowledge base once in this process (their caches are
    inherited by the fork); an error here is raised again, with the same message, by the worker's assess()."""
    for name in PRELOAD:
        importlib.import_module(name)
    with contextlib.suppress(Exception):
        from ..kb import format_version, load_kb
        from ..score.weights_load import load_weights

        load_weights(options.weights, options.profile)
        kb = load_kb(options.kb_dir)
        kb.resolve_product(options.product)
        format_version(kb.resolve_version(options.torch_npu))


def start_assessment(options: Any, *, timeout: float, debug: bool) -> Job:
    """Fork the keeper and worker that assess `options` (before any thread, such as a progress spinner, starts)."""
    _preload(options)
    context, where = multiprocessing.get_context("fork"), None
    if options.train and not _autograd_forks_cleanly():  # then a worker of a fresh forkserver runs the step
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(list(PRELOAD))
        where = (os.getcwd(), dict(os.environ), tuple(sys.path))
    return Job(context, _assess, (options, debug, where), name=f"opassess-{Path(options.target).stem}",
               timeout=timeout)


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


def finish_assessment(job: Job, target: str, progress: Callable[[str], None] | None = None) -> Any:
    """Wait for the worker: its View, its error re-raised, or WorkerFailed naming the target and what happened."""
    job.on_progress = progress
    try:
        outcome = job.wait()
    finally:
        job.stop()  # interrupted or terminated: no worker left behind
    if outcome.status == "ok":
        return outcome.payload
    if outcome.status == "error" and isinstance(outcome.payload, Exception):
        raise outcome.payload
    raise WorkerFailed(f"{target}: {outcome.payload}")
