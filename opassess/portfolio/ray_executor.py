"""Ray executor: the models of a portfolio are scanned on the machines of a Ray cluster, each node's scans by one
warm scanner process of that node.

One `NodeScanner` Ray actor runs on each node the run uses, holding (and reserving) as many CPUs there as it runs
scans at once. As it starts it starts its forkserver, which imports torch, the capture methods and the libraries the
models import (workers.preload_for) once, in the background; every model sent to that node is then scanned in a fresh
worker forked from it (workers.capture_in_worker): the same isolation as the local executor, with the address-space
cap and the --timeout deadline, a hang killed at its deadline, a segfault, os._exit or an out-of-memory that model's
failure; model code never runs in the scanner or the driver, and the worker sends back only plain data, which the
driver checks and assesses. Without a warm scanner, each of Ray's task workers imported torch again in a forkserver
of its own. The driver guards each call too: one that has not answered `_GUARD` seconds past its deadline (a lost
node, a stuck scanner) is reported as failed and its slot given back.

No shared filesystem is assumed: the model folders are staged (shipping.py) into one directory that Ray carries to
every node as the job's `working_dir` (uploaded once, cached per node; Ray refuses one over 500 MiB), environment
variables named OPASSESS_* go along, and the reports come back as text to the driver, which writes them.
Every node needs opassess (and torch, and whatever the models import) installed; Ray ships model code, not packages.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import MissingExtra, OpassessError
from ..isolation import Outcome
from ..messages import N_, Text
from .records import ModelResult, PortfolioEvent, PortfolioOptions
from .shipping import relocate_options, restore, stage
from .targets import ModelTarget
from .workers import (
    Finish,
    capture_in_worker,
    preload_for,
    render_outcome,
    warm_assessor,
    warm_context,
    worker_setup,
)

_GUARD = 60.0  # seconds past a model's --timeout before the driver cancels its task (its node enforces the timeout)
_POLL = 0.5  # seconds between checks while waiting on tasks


def import_ray() -> Any:
    """The ray module, or MissingExtra (exit 2) naming the extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise MissingExtra("--executor ray needs Ray, which is not installed: pip install 'opassess[ray]'") from exc
    return ray


class NodeScanner:
    """The Ray actor scanning one node's share of a portfolio: a warm forkserver started as it starts (the preload of
    the run), then `scan` per model, from as many threads at once as the driver gives it slots."""

    def __init__(self, preload: Sequence[str]) -> None:
        import threading

        _workers_skip_main()
        self.context = warm_context(preload)
        self.starting = threading.Lock()  # one worker started at a time (multiprocessing's process list)

    def scan(self, options: PortfolioOptions, target: str, driver_cwd: str,
             models: int) -> tuple[str, Any, float, str, float | None, tuple[int, int], str | None]:
        """One model, in a fresh worker forked from the warm forkserver: the worker's outcome as plain data (status,
        capture or cause, seconds, start-up), the node's staging root, which the driver takes out of every path
        before it checks and assesses the capture (no opassess stage past the trace runs here), and (this process,
        its forkserver) as process ids."""
        root = os.path.realpath(os.getcwd())  # Ray starts the actor in the unpacked working_dir
        cwd = root + driver_cwd
        os.makedirs(cwd, exist_ok=True)
        setup = worker_setup(options, models, cwd=cwd, drop_path=root)  # the node's memory and cores
        outcome = capture_in_worker(relocate_options(options, target, root), setup, options.timeout,
                                    self.context, self.starting)
        return (outcome.status, outcome.payload, outcome.seconds, root, outcome.begun, self.processes(),
                outcome.sandbox)

    def processes(self) -> tuple[int, int]:
        """(this scanner's pid, its forkserver's pid; 0 without one)."""
        from multiprocessing import forkserver

        return os.getpid(), getattr(forkserver._forkserver, "_forkserver_pid", None) or 0


def _workers_skip_main() -> None:
    """Tell multiprocessing that this process's main module is none a worker needs. A Ray worker process runs Ray's
    default_worker.py as a script, and a process started from a forkserver first runs its parent's main script again
    (as __mp_main__, for what the parent defined there): importing Ray anew, 0.3 s in every model's worker. Nothing
    of that script is sent to a worker, so its main module is named '__main__', which multiprocessing passes over."""
    import importlib.machinery

    main = sys.modules.get("__main__")
    if main is not None and getattr(main, "__spec__", None) is None:
        main.__spec__ = importlib.machinery.ModuleSpec("__main__", None)


@dataclass
class _Task:
    model: ModelTarget
    ref: Any
    scanner: int  # index of the node scanner running it
    started: float
    deadline: float


def _start_failure(exc: BaseException, address: str | None) -> str:
    """The one line for Ray failing to start (a process of Ray's killed or crashing during start-up, a cluster that
    is not there): it names Ray, not the models, and says what to do."""
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    where = f"the Ray cluster at {address}" if address else "a local Ray instance"
    return (f"Ray failed to start ({where}): {type(exc).__name__}" + (f": {first}" if first else "")
            + "; no model was scanned: run again, or scan with --executor local (the default)")


class RayExecutor:
    """The Executor of Ray node scanners: joins the cluster at `address` ('auto': RAY_ADDRESS or the local one), or
    starts a Ray instance on this machine without one; at most `jobs` models at once (default: the cluster's CPUs),
    spread over the nodes by their CPUs. `processes` maps each model scanned to (scanner pid, forkserver pid)."""

    def __init__(self, address: str | None = None, jobs: int | None = None) -> None:
        self.ray = import_ray()  # fails before anything is scanned
        self.address = address
        self.jobs = jobs
        self.processes: dict[str, tuple[int, int]] = {}
        self._lost: set[int] = set()  # scanners whose process died

    def run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
            notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None:
        """Stage the model folders, start the node scanners, send them the models, collect the results; an
        interruption stops what still runs."""
        ray = self.ray
        if ray.is_initialized():
            raise OpassessError("Ray is already initialised in this process: the Ray executor connects itself, to "
                                "ship the model folders as its job's working_dir")
        environ = {k: v for k, v in os.environ.items() if k.startswith("OPASSESS_")}
        with tempfile.TemporaryDirectory(prefix="opassess-ship-") as staging:
            stage(pending, options, Path(staging))
            try:
                context = ray.init(address=self.address or "local", logging_level=logging.ERROR,
                                   log_to_driver=False, runtime_env={"working_dir": staging, "env_vars": environ})
            except Exception as exc:  # noqa: BLE001 - whatever Ray raises while it starts: one line naming Ray
                with contextlib.suppress(Exception):
                    ray.shutdown()
                raise OpassessError(_start_failure(exc, self.address)) from exc
            try:
                url = getattr(context, "dashboard_url", "") or ""
                if url:
                    notify(PortfolioEvent("dashboard", url if "://" in url else f"http://{url}", done, total))
                try:
                    scanners, slots = self._scanners(preload_for([m.target for m in pending]))
                except OpassessError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a node or the head gone while the scanners start
                    raise OpassessError(_start_failure(exc, self.address)) from exc
                try:
                    self._run(pending, options, finish, notify, done, total, scanners, slots)
                finally:
                    for scanner in scanners:  # its forkserver, and any worker still running, end with it
                        ray.kill(scanner)
            finally:
                ray.shutdown()

    def _scanners(self, preload: Sequence[str]) -> tuple[list[Any], list[int]]:
        """One scanner per node with CPUs, each given a share of the run's slots by its CPUs (and holding them)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        ray = self.ray
        nodes = [(n["NodeID"], int(n.get("Resources", {}).get("CPU", 0))) for n in ray.nodes() if n.get("Alive")]
        nodes = [(node, cpus) for node, cpus in nodes if cpus >= 1]
        left = self.jobs or sum(cpus for _, cpus in nodes) or 1
        remote = ray.remote(NodeScanner)
        scanners, slots = [], []
        for node, cpus in nodes:
            share = min(cpus, left)
            if share < 1:
                break
            left -= share
            strategy = NodeAffinitySchedulingStrategy(node, soft=False)
            scanners.append(remote.options(num_cpus=share, max_concurrency=share, max_restarts=0,
                                           scheduling_strategy=strategy).remote(tuple(preload)))
            slots.append(share)
        if not scanners:
            raise OpassessError("the Ray cluster has no node with a CPU to scan on")
        return scanners, slots

    def _run(self, pending: Sequence[ModelTarget], options: PortfolioOptions, finish: Finish,
             notify: Callable[[PortfolioEvent], None], done: int, total: int, scanners: list[Any],
             slots: list[int]) -> None:
        ray = self.ray
        free = list(slots)
        queue = list(pending)
        running: list[_Task] = []

        def submit() -> None:  # a model to every free slot, the node with the most free slots first
            while queue and any(n > 0 for n in free):
                index = max(range(len(free)), key=lambda i: free[i])
                model = queue.pop(0)
                free[index] -= 1
                started = time.monotonic()
                ref = scanners[index].scan.remote(options, model.target, os.getcwd(), len(pending))
                running.append(_Task(model, ref, index, started, started + options.timeout + _GUARD))
                notify(PortfolioEvent("start", model.name, done, total))

        try:
            submit()
            warm_assessor(options)  # while the node scanners start: what assessing their results takes
            while queue or running:
                submit()
                if not running:  # every scanner is gone (its node lost): the rest cannot be scanned
                    for model in queue:
                        finish(model, ModelResult(model.target, model.name, "failed", "no Ray node scanner left "
                                                  "(each one's process died)", (), 0.0), None)
                    return
                ready, _ = ray.wait([t.ref for t in running], num_returns=1, timeout=_POLL)
                ended: list[tuple[_Task, str | None]] = []
                for task in list(running):
                    if task.ref in ready:
                        ended.append((task, None))
                    elif time.monotonic() >= task.deadline:
                        ray.cancel(task.ref)  # a running actor call cannot be forced: its node's deadline kills it
                        ended.append((task, Text(N_("timed out after %(seconds)s s (Ray call abandoned)"),
                                                 {"seconds": f"{options.timeout:g}"})))
                    else:
                        continue
                    running.remove(task)
                    free[task.scanner] += 1
                submit()  # the freed slots get their next model before the driver assesses what ended
                for task, cause in ended:
                    if cause is None:
                        status, payload, seconds = self._outcome(task, options)
                        if task.scanner in self._lost:  # its process died: it gets no more models
                            free[task.scanner] = -len(pending)
                    else:
                        status, payload, seconds = "failed", cause, time.monotonic() - task.started
                    result = ModelResult(task.model.target, task.model.name, status,
                                         None if status == "ok" else payload, (), seconds)
                    finish(task.model, result, payload if status == "ok" else None)
                    done += 1
        finally:
            for task in running:  # interrupted: leave no call behind (the scanners are killed after)
                ray.cancel(task.ref)

    def _outcome(self, task: _Task, options: PortfolioOptions) -> tuple[str, Any, float]:
        """The call's answer, checked and assessed here, or why Ray could not run it."""
        exceptions = self.ray.exceptions
        seconds = time.monotonic() - task.started
        try:
            status, payload, worked, root, begun, processes, *sandbox = self.ray.get(task.ref)
            self.processes[task.model.name] = tuple(processes)
            status, payload = render_outcome(Outcome(status, payload, worked, begun, (sandbox or [None])[0]),
                                             task.model.scan_options(options.scan), options,
                                             lambda text: restore(text, root))
            return status, payload, worked
        except exceptions.OutOfMemoryError:
            return "failed", "out of memory: Ray's memory monitor killed the task", seconds
        except exceptions.RayActorError as exc:
            self._lost.add(task.scanner)
            return "failed", f"Ray node scanner lost: {type(exc).__name__}: {_first_line(exc)}", seconds
        except exceptions.RuntimeEnvSetupError as exc:
            return "failed", f"Ray could not set up the task's runtime environment: {_first_line(exc)}", seconds
        except exceptions.RayError as exc:
            return "failed", f"Ray task failed: {type(exc).__name__}: {_first_line(exc)}", seconds


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]
