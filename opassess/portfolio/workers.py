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

import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any, Protocol

from ..ci.policy import evaluate
from ..errors import OpassessError
from ..isolation import Job, Outcome, WorkerFailed, stop_helpers
from ..isolation.process import POLL
from ..isolation.sandbox import prepared
from ..isolation.worker import PRELOAD, WorkerSetup, assess_outcome, capture_body
from ..options import ScanOptions
from .records import ModelResult, PortfolioEvent, PortfolioOptions
from .targets import ModelTarget

Finish = Callable[[ModelTarget, ModelResult, Mapping[str, str] | None], None]


class Executor(Protocol):
    """Runs the scans of `pending` models and calls `finish(model, result, {format: text} or None)` for each as it
    ends, `notify` with a 'start' event as each begins; `done` of `total` models had finished before."""

    def run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
            notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None: ...


def worker_setup(options: PortfolioOptions, models: int, *, cwd: str | None = None,
                 drop_path: str | None = None) -> WorkerSetup:
    """What a worker started from this process needs: its current directory (this one unless given), environment
    and sys.path (less `drop_path`) and the memory cap for one of `models` scanned here (the one rule,
    PortfolioOptions.memory_cap, with this machine's memory and cores: a Ray node's own on a node)."""
    sys_path = tuple(p for p in sys.path if drop_path is None or p != drop_path)
    return WorkerSetup(where=(cwd or os.getcwd(), dict(os.environ), sys_path), memory_cap=options.memory_cap(models))


def warm_assessor(options: PortfolioOptions) -> None:
    """Import and load here what assessing a capture takes (torch, whose dispatcher the classifier asks about ATen
    ops; the stages; the knowledge base, which load_kb keeps), once the first models have been sent off: it then runs
    beside their start (a forkserver importing torch, a Ray node scanner starting) instead of after the first capture
    arrives (1 s of a 40-model portfolio). A broken KB is left for the assessment to report."""
    from ..kb import load_kb
    from ..startup import imports_without_gc

    with imports_without_gc():
        import torch  # noqa: F401

        from ..pipeline.assess import assess_capture  # noqa: F401 - the assessing side, all its stages
    with contextlib.suppress(OpassessError):
        load_kb(options.scan.kb_dir)


def render_outcome(outcome: Outcome, options: ScanOptions, portfolio: PortfolioOptions,
                   restore: Callable[[str], str] = str) -> tuple[str, Any]:
    """In the parent: ('ok', {format: text}) from the worker's checked capture (classified, scored and rendered
    here), or ('failed', cause). `restore` maps a Ray node's paths in the capture back to the driver's."""
    from ..ci.snapshot import read_snapshot
    from ..report import RenderContext, build_view, render_view

    if outcome.status == "ok":
        outcome = replace(outcome, payload=json.loads(restore(json.dumps(outcome.payload))))
    try:
        view = build_view(assess_outcome(outcome, options, options.target), options.language)
        context = RenderContext(breaches=evaluate(read_snapshot(view.document), portfolio.policy))
        formats = ("json", *(f for f in portfolio.formats if f != "json"))
        return "ok", {fmt: render_view(view, fmt, context) for fmt in formats}
    except WorkerFailed as exc:
        return "failed", restore(str(exc).removeprefix(f"{options.target}: "))
    except OpassessError as exc:
        return "failed", restore(str(exc))


# What a portfolio's forkserver imports besides PRELOAD: torch's symbolic-shape helpers (and sympy), which the meta
# kernels of nearly every model import on first use (torch.randn, a convolution: 0.2 s), once rather than per worker.
FORKSERVER_EXTRA = ("torch.fx.experimental.symbolic_shapes",)
FROZEN = "opassess.isolation.preloaded"  # imported last: freezes what the forkserver imported (see its docstring)

# Libraries a model file may import that take seconds to import: when the models of a run import one, the forkserver
# imports it once (it runs no model code) and every worker inherits it, instead of each worker importing it again.
WARM = ("torchvision", "transformers", "timm")


def preload_for(targets: Sequence[str]) -> tuple[str, ...]:
    """PRELOAD and FORKSERVER_EXTRA, plus the WARM libraries that the model files import and that are installed (found
    statically, from the files' import statements: nothing is run; a file that cannot be read or parsed adds nothing),
    then FROZEN."""
    import ast
    import importlib.util

    from ..datafile import read_text

    wanted: set[str] = set()
    for target in targets:
        if not target.endswith(".py"):
            continue
        try:
            tree = ast.parse(read_text(target, "model file"))
        except (OpassessError, OSError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                wanted.add(node.module.split(".")[0])
    warm = tuple(name for name in WARM if name in wanted and importlib.util.find_spec(name) is not None)
    return (*PRELOAD, *FORKSERVER_EXTRA, *warm, FROZEN)


# Workers are killed once their result has arrived (their group with them), so a semaphore that a library they
# imported registered is never unregistered: multiprocessing's resource tracker unlinks it when the run ends and
# warns "There appear to be N leaked semaphore objects" on stderr, a line about no fault of the user's. The
# helpers (forkserver, tracker) start with this -W option (multiprocessing passes sys.warnoptions to them).
_QUIET_TRACKER = "ignore:resource_tracker:UserWarning"


def _context(preload: Sequence[str] = PRELOAD):
    import multiprocessing

    if _QUIET_TRACKER not in sys.warnoptions:
        sys.warnoptions.append(_QUIET_TRACKER)

    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        # Workers fork from a server that has torch and opassess imported already (nothing run yet, so no threads
        # to lose in the fork): a worker starts in ~0.1 s instead of the ~2 s that importing torch takes. The
        # preload takes effect when the server starts (once per process: a Ray worker keeps its server warm).
        context.set_forkserver_preload(list(preload))
        return context
    return multiprocessing.get_context("spawn")


class LocalWorkers:
    """The Executor of local worker processes, at most options.jobs at a time."""

    def run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
            notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None:
        """Start, watch and collect the workers; an interruption leaves no worker behind."""
        context = _context(preload_for([m.target for m in pending]))
        sandbox = contextlib.ExitStack()
        plan = sandbox.enter_context(prepared(options.scan.sandbox))  # the workers' private folders, removed at end
        setup = replace(worker_setup(options, len(pending)), sandbox=plan)
        queue = list(pending)
        running: list[tuple[ModelTarget, Job]] = []
        warm = False
        try:
            while queue or running:
                while queue and len(running) < max(1, options.jobs):
                    model = queue.pop(0)
                    running.append((model, Job(context, capture_body, (model.scan_options(options.scan), setup),
                                               name=f"opassess-{model.name}", timeout=options.timeout)))
                    notify(PortfolioEvent("start", model.name, done, total))
                if not warm:  # the first workers are starting: what assessing them takes is loaded meanwhile
                    warm_assessor(options)
                    warm = True
                wait_for = min(max(0.0, min(job.deadline for _, job in running) - time.monotonic()), POLL)
                mp_connection.wait([handle for _, job in running for handle in job.handles()], wait_for)
                for model, job in list(running):
                    outcome = job.poll()
                    if outcome is None:
                        continue
                    running.remove((model, job))
                    status, payload = render_outcome(outcome, model.scan_options(options.scan), options)
                    ok = status == "ok"
                    finish(model, ModelResult(model.target, model.name, status, None if ok else payload, (),
                                              outcome.seconds), payload if ok else None)
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
            sandbox.close()


def warm_context(preload: Sequence[str]):
    """The worker context with its forkserver started now: it imports `preload` (torch, the capture methods, the
    WARM libraries the models import) in the background, before the first model asks for a worker (a Ray node's
    scanner starts it as it starts)."""
    context = _context(preload)
    if context.get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()
    return context


def capture_in_worker(options: ScanOptions, setup: WorkerSetup, timeout: float, context=None,
                      starting: Any = None) -> Outcome:
    """Capture one model in a fresh worker process of this one and wait for it (what a Ray node runs): the worker's
    outcome, its crash or its timeout included, for the driver to check and assess. `context`: the worker context
    (default: one preloading what the model file imports); `starting`: a lock held while the worker is started (a
    node's scanner starts workers from several threads)."""
    context = context or _context(preload_for([options.target]))
    with prepared(options.sandbox) as plan:  # the worker's private folder, removed once it has ended
        with starting or contextlib.nullcontext():
            job = Job(context, capture_body, (options, replace(setup, sandbox=plan)),
                      name=f"opassess-{Path(options.target).stem}", timeout=timeout)
        try:
            return job.wait()
        finally:
            job.stop()  # cancelled or interrupted: leave no worker behind
