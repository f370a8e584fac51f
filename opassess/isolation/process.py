"""One model's keeper and worker processes, seen from the parent: start, relay output, deadline, outcome, kill.

Why a keeper: a model that kills its parent (`os.kill(os.getppid(), 9)`) reaches only its own keeper, never the
opassess process or the forkserver the other models of a portfolio come from; the parent sees that keeper die and
reports that model as failed. A model that kills its process group (`os.killpg(0, 9)`) kills its own worker and
the worker's children only: the worker leads a session of its own. When a model ends, times out, or the run is
stopped, the parent kills the worker's whole process group (the model's child processes with it) and the keeper;
a worker whose keeper dies is killed by the kernel (PR_SET_PDEATHSIG on Linux).

The protocol on the result pipe: the keeper sends ('worker', pid) once it has forked the worker and ('ended',
exit code) when the worker has ended; the worker's body sends ('begun', None) when the model's own time starts
(the deadline counts from there), any number of ('progress', text), then one result message of its own choosing
('ok', ...), ('failed', cause) or ('error', exception). A worker that ends without one has failed, whatever its exit
status: `os._exit(0)` in a model's forward is an error, never a silent success.
"""
from __future__ import annotations

import codecs
import contextlib
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import connection as mp_connection
from typing import Any

from ..errors import OpassessError
from .signals import reset_in_child

KILL_GRACE = 5.0  # seconds a killed keeper gets to be reaped
# Seconds a worker may take to start (a forkserver imports torch once, 6-8 s on a loaded 2-core machine) before its
# timeout, which counts from the moment it reports that it has begun, starts to run.
START_GRACE = 120.0
POLL = 0.5  # seconds between deadline checks


class WorkerFailed(OpassessError):
    """A model's worker ended without a result: it crashed, exited, was killed, or ran out of time."""


@dataclass(frozen=True)
class Outcome:
    """How one model's worker ended: 'ok' with its result, or 'failed' with a cause (or 'error' with an exception
    the worker raised, for the caller to re-raise)."""

    status: str
    payload: Any
    seconds: float


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent ends (nothing elsewhere)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _keep(body: Callable[..., None], args: tuple, conn: Any, output: Any) -> None:
    """Keeper body: fork the worker into a session of its own, wait for it, report its exit status."""
    reset_in_child()
    _die_with_parent()
    keeper = os.getpid()
    pid = os.fork()
    if pid == 0:
        _worker(body, args, conn, output, keeper=keeper)
    output.close()
    conn.send(("worker", pid))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    conn.send(("ended", os.waitstatus_to_exitcode(status)))
    conn.close()


def _worker(body: Callable[..., None], args: tuple, conn: Any, output: Any, *, keeper: int) -> None:
    """Worker body (never returns): own session, fd 1 and 2 to the output pipe, run `body(*args, conn)`."""
    code = 1
    try:
        os.setsid()  # its own session and process group: killpg(0) reaches this worker and its children only
        _die_with_parent()
        if os.getppid() != keeper:  # the keeper died before the request above took hold
            os._exit(1)
        fd = output.fileno()
        os.dup2(fd, 1)  # fd 1 too, so the model's subprocesses cannot write into a report on stdout
        os.dup2(fd, 2)
        output.close()
        sys.stdout = sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1,  # noqa: SIM115
                                       closefd=False)
        body(*args, conn)
        code = 0
    except BaseException:  # noqa: BLE001 - reported on the relayed stderr; the missing result makes it a failure
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


def kill_group(pid: int | None, *, reaped: bool = False) -> None:
    """SIGKILL the process group led by `pid` (the worker and its children), and `pid` itself unless it has been
    reaped already (its number may then belong to another process; a group's number is not reused while the group
    has members)."""
    if pid:
        for kill in (os.killpg,) if reaped else (os.killpg, os.kill):
            with contextlib.suppress(OSError):
                kill(pid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_cause(code: int) -> str:
    """What a worker's exit code says: 'worker crashed: SIGSEGV (segmentation fault)', ..."""
    if code < 0:
        number = -code
        name = _signal_name(number)
        text = {signal.SIGABRT: "aborted", signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error",
                signal.SIGFPE: "floating-point exception", signal.SIGILL: "illegal instruction",
                signal.SIGKILL: "killed (out of memory, by its own process group, or from outside)"}.get(
            number, "killed by a signal")
        return f"worker crashed: {name} ({text})"
    return f"worker exited with status {code} without a result (the model ended its process, e.g. os._exit)"


class Job:
    """One model running in a keeper and worker started from `context` (a multiprocessing context)."""

    def __init__(self, context: Any, body: Callable[..., None], args: tuple, *, name: str, timeout: float,
                 on_progress: Callable[[str], None] | None = None) -> None:
        self.timeout = timeout
        self.on_progress = on_progress
        self.conn, sender = context.Pipe(duplex=False)
        self.output, output_sender = context.Pipe(duplex=False)
        self.keeper = context.Process(target=_keep, name=name, args=(body, args, sender, output_sender), daemon=True)
        self.started = time.monotonic()
        self.deadline = self.started + START_GRACE + timeout
        self.keeper.start()
        sender.close()  # the parent keeps only the reading ends: EOF once the keeper, worker and children are gone
        output_sender.close()
        self.worker: int | None = None
        self.ended: int | None = None
        self.result: tuple[str, Any] | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._open = True

    def handles(self) -> list[Any]:
        """What to wait on (multiprocessing.connection.wait) for this job's next event."""
        return [self.keeper.sentinel, *(end for end in (self.conn, self.output if self._open else None) if end)]

    def relay(self) -> None:
        """Copy what the worker wrote to fd 1 / 2 so far to this process's stderr (it is never stdout)."""
        for _ in range(16):  # at most 1 MiB a call: a model printing without pause must not starve the deadline
            if not self._open:
                return
            try:
                if not self.output.poll():
                    return
                data = os.read(self.output.fileno(), 65536)
            except OSError:
                data = b""
            if not data:
                self._open = False
                return
            with contextlib.suppress(Exception):
                sys.stderr.write(self._decoder.decode(data))
                sys.stderr.flush()

    def _drain(self) -> None:
        while self.conn is not None:
            try:
                if not self.conn.poll():
                    return
                message = self.conn.recv()
            except (EOFError, OSError):
                self.conn.close()
                self.conn = None
                return
            except Exception as exc:  # noqa: BLE001 - a result that cannot be unpickled is the model's failure
                message = ("failed", f"unreadable message from the worker: {type(exc).__name__}: {exc}")
            kind, payload = message if isinstance(message, tuple) and len(message) == 2 else ("failed", None)
            if payload is None and kind == "failed":
                payload = "unreadable message from the worker"
            if kind == "worker":
                self.worker = payload
            elif kind == "ended":
                self.ended = payload
            elif kind == "begun":  # set up and about to run model code: the model's own time starts now
                self.deadline = time.monotonic() + self.timeout
            elif kind == "progress":
                if self.on_progress is not None:
                    self.on_progress(str(payload))
            elif self.result is None:
                self.result = (kind, payload)

    def poll(self) -> Outcome | None:
        """The outcome once there is one (the processes are then gone); None while the model runs."""
        self.relay()
        self._drain()
        if self.result is not None:  # nothing of the model is wanted after its result (a thread it left running)
            return self._finish(*self.result)
        if not self.keeper.is_alive():
            self.keeper.join()
            self._drain()
            if self.result is not None:
                return self._finish(*self.result)
            if self.ended is not None:
                return self._finish("failed", exit_cause(self.ended))
            code = self.keeper.exitcode
            how = f"was killed by {_signal_name(-code)}" if code is not None and code < 0 else f"exited ({code})"
            return self._finish("failed", f"the worker's keeper process {how} before the worker ended: the model "
                                          "killed its parent process")
        if time.monotonic() >= self.deadline:
            return self._finish("failed", f"timed out after {self.timeout:g} s (worker killed)")
        return None

    def wait(self) -> Outcome:
        """Block until the outcome."""
        while True:
            mp_connection.wait(self.handles(), max(0.0, min(self.deadline - time.monotonic(), POLL)))
            outcome = self.poll()
            if outcome is not None:
                return outcome

    def _finish(self, status: str, payload: Any) -> Outcome:
        self.stop()
        return Outcome(status, payload, time.monotonic() - self.started)

    def stop(self) -> None:
        """Kill the worker's process group and the keeper, copy the last output, close the pipes (idempotent)."""
        kill_group(self.worker, reaped=self.ended is not None)
        if self.keeper.is_alive():
            self.keeper.kill()
        self.keeper.join(KILL_GRACE)
        if self.worker is None and self.conn is not None:  # killed before it said who its worker is
            self._drain()
            kill_group(self.worker)
        self.relay()
        for end in (self.conn, self.output):
            if end is not None:
                end.close()
        self.conn = None
        self._open = False


def stop_helpers() -> None:
    """Stop multiprocessing's forkserver and resource tracker (a stopped run leaves no process behind)."""
    with contextlib.suppress(Exception):
        from multiprocessing import forkserver

        forkserver._forkserver._stop()  # noqa: SLF001 - the one way to stop it before the interpreter exits
    with contextlib.suppress(Exception):
        from multiprocessing import resource_tracker

        tracker = resource_tracker._resource_tracker  # noqa: SLF001
        if tracker._fd is not None:  # noqa: SLF001 - closing our end asks it to stop; a stray holder must not hang us
            os.close(tracker._fd)  # noqa: SLF001
            tracker._fd = None  # noqa: SLF001
            end = time.monotonic() + 2.0
            while os.waitpid(tracker._pid, os.WNOHANG) == (0, 0):  # noqa: SLF001
                if time.monotonic() > end:
                    os.kill(tracker._pid, signal.SIGKILL)  # noqa: SLF001
                    os.waitpid(tracker._pid, 0)  # noqa: SLF001
                    break
                time.sleep(0.02)
            tracker._pid = None  # noqa: SLF001
