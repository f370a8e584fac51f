"""Ray executor: each model of a portfolio is one Ray task, on whichever machine of a Ray cluster has a free CPU.

Same isolation as the local executor: inside its task, a model is scanned in a child process of the Ray worker
(workers.scan_in_worker), with the address-space cap and the --timeout deadline; a hang is killed at its deadline, a
segfault, os._exit or an out-of-memory is that model's failure. The driver guards each task too: one that has not
answered `_GUARD` seconds past its deadline (a lost node, a stuck Ray worker) is cancelled with force.

No shared filesystem is assumed: the model folders are staged (shipping.py) into one directory that Ray carries to
every node as the tasks' `working_dir` (uploaded once, cached per node; Ray refuses one over 500 MiB), environment
variables named OPASSESS_* go along, and the reports come back as text to the driver, which writes them.
Every node needs opassess (and torch, and whatever the models import) installed; Ray ships model code, not packages.
"""
from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MissingExtra, OpassessError
from ..isolation import Outcome
from .records import ModelResult, PortfolioEvent, PortfolioOptions
from .shipping import relocate_options, restore, stage
from .targets import ModelTarget
from .workers import Finish, capture_in_worker, render_outcome, worker_setup

_GUARD = 60.0  # seconds past a model's --timeout before the driver cancels its task (its node enforces the timeout)
_POLL = 0.5  # seconds between checks while waiting on tasks


def import_ray() -> Any:
    """The ray module, or MissingExtra (exit 2) naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise MissingExtra("--executor ray needs Ray, which is not installed: pip install 'opassess[ray]'") from exc
    return ray


def scan_task(options: PortfolioOptions, target: str, driver_cwd: str,
              models: int) -> tuple[str, Any, float, str, float | None]:
    """The body of one Ray task, on its node: the worker's outcome as plain data (status, capture or cause, seconds)
    and the node's staging root, which the driver takes out of every path before it checks and assesses the capture
    (the node runs no opassess stage past the trace either)."""
    root = os.path.realpath(os.getcwd())  # Ray starts the task in the unpacked working_dir
    cwd = root + driver_cwd
    os.makedirs(cwd, exist_ok=True)
    setup = worker_setup(options, models, cwd=cwd, drop_path=root)  # the node's memory and cores, `models` of the run
    outcome = capture_in_worker(relocate_options(options, target, root), setup, options.timeout)
    return outcome.status, outcome.payload, outcome.seconds, root, outcome.begun


@dataclass
class _Task:
    model: ModelTarget
    ref: Any
    started: float
    deadline: float


class RayExecutor:
    """The Executor of Ray tasks: joins the cluster at `address` ('auto': RAY_ADDRESS or the local one), or starts
    a Ray instance on this machine without one; at most `jobs` tasks at once (default: the cluster's CPUs)."""

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        self.ray = import_ray()  # fails before anything is scanned
        self.address = address
        self.jobs = jobs

    def run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
            notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None:
        """Stage the model folders, submit the tasks, collect them; an interruption cancels what still runs."""
        ray = self.ray
        if ray.is_initialized():
            raise OpassessError("Ray is already initialised in this process: the Ray executor connects itself, to "
                                "ship the model folders as its job's working_dir")
        environ = {k: v for k, v in os.environ.items() if k.startswith("OPASSESS_")}
        with tempfile.TemporaryDirectory(prefix="opassess-ship-") as staging:
            stage(pending, options, Path(staging))
            context = ray.init(address=self.address or "local", logging_level=logging.ERROR, log_to_driver=False,
                               runtime_env={"working_dir": staging, "env_vars": environ})
            try:
                url = getattr(context, "dashboard_url", "") or ""
                if url:
                    notify(PortfolioEvent("dashboard", url if "://" in url else f"http://{url}", done, total))
                self._run(pending, options, finish, notify, done, total)
            finally:
                ray.shutdown()

    def _run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
             notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None:
        ray = self.ray
        remote = ray.remote(scan_task).options(num_cpus=1, max_retries=0)
        capacity = self.jobs or max(1, int(ray.cluster_resources().get("CPU", 1)))
        queue = list(pending)
        running: list[_Task] = []
        try:
            while queue or running:
                while queue and len(running) < capacity:
                    model = queue.pop(0)
                    started = time.monotonic()
                    ref = remote.remote(options, model.target, os.getcwd(), len(pending))
                    running.append(_Task(model, ref, started, started + options.timeout + _GUARD))
                    notify(PortfolioEvent("start", model.name, done, total))
                ready, _ = ray.wait([t.ref for t in running], num_returns=1, timeout=_POLL)
                for task in list(running):
                    if task.ref in ready:
                        status, payload, seconds = self._outcome(task, options)
                    elif time.monotonic() >= task.deadline:
                        ray.cancel(task.ref, force=True)
                        status, payload = "failed", f"timed out after {options.timeout:g} s (Ray task cancelled)"
                        seconds = time.monotonic() - task.started
                    else:
                        continue
                    running.remove(task)
                    result = ModelResult(task.model.target, task.model.name, status,
                                         None if status == "ok" else payload, (), seconds)
                    finish(task.model, result, payload if status == "ok" else None)
                    done += 1
        finally:
            for task in running:  # interrupted: leave no task behind
                ray.cancel(task.ref, force=True)

    def _outcome(self, task: _Task, options: PortfolioOptions) -> tuple[str, Any, float]:
        """The task's answer, checked and assessed here, or why Ray could not run it."""
        exceptions = self.ray.exceptions
        seconds = time.monotonic() - task.started
        try:
            status, payload, worked, root, begun = self.ray.get(task.ref)
            status, payload = render_outcome(Outcome(status, payload, worked, begun),
                                             task.model.scan_options(options.scan), options,
                                             lambda text: restore(text, root))
            return status, payload, worked
        except exceptions.OutOfMemoryError:
            return "failed", "out of memory: Ray's memory monitor killed the task", seconds
        except exceptions.RuntimeEnvSetupError as exc:
            return "failed", f"Ray could not set up the task's runtime environment: {_first_line(exc)}", seconds
        except exceptions.RayError as exc:
            return "failed", f"Ray task failed: {type(exc).__name__}: {_first_line(exc)}", seconds


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]
