"""One model's keeper and worker processes, seen from the parent: start, relay output, deadline, outcome, kill.

Why a keeper: a model that kills its parent (`os.kill(os.getppid(), 9)`) reaches only its own keeper, never the
opassess process or the forkserver the other models of a portfolio come from; the parent sees that keeper die and
reports that model as failed. A model that kills its process group (`os.killpg(0, 9)`) kills its own worker and
the worker's children only: the worker leads a session of its own. When a model ends, times out, or the run is
stopped, the parent kills the worker's whole session (the model's child processes with it) and the keeper;
a worker whose keeper dies is killed by the kernel (PR_SET_PDEATHSIG on Linux), and a keeper whose `opassess`
process dies (even by SIGKILL) kills its worker's session and exits (reap.py).

The protocol: no pickle on any channel a worker can write to. The keeper writes ('worker', pid) once it has forked
the worker and ('ended', exit code) when the worker has ended, as JSON lines on a pipe of its own that the worker
closes before model code runs. The worker writes JSON lines on the result pipe (moved to a random high fd), each
carrying the job's nonce: 'begun' when the model's own time starts (the deadline counts from there), any number of
'progress' texts, then exactly one result: 'ok' with the capture (wire.py), 'error' with an exception's type name
and message, or 'failed' with a cause. The outcome is decided once the worker has ended: a worker that ends without
a result has failed, whatever its exit status (`os._exit(0)` in a model's forward is an error, never a silent
success); a second result, a malformed line, an oversized one or a wrong nonce is the model's failure, named as
such, never a chosen winner. A model can still find the pipe and its nonce in its own process: what it can forge
that way is its capture, which it could fake anyway (docs/how-it-works.md, "Isolation").
"""
from __future__ import annotations

import codecs
import contextlib
import json
import os
import random
import secrets
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import connection as mp_connection
from multiprocessing.connection import Connection
from multiprocessing.context import ForkContext, ForkServerContext

from ..errors import OpassessError
from ..messages import N_, Text
from .reap import die_with_parent, kill_tree, release_helpers, wait_worker
from .signals import reset_in_child
from .wire import MAX_MESSAGE, MAX_TEXT, dumps

KILL_GRACE = 5.0  # seconds a killed keeper gets to be reaped
# Seconds a worker may take to start (a forkserver imports torch once, 6-8 s on a loaded 2-core machine) before its
# timeout, which counts from the moment it reports that it has begun, starts to run.
START_GRACE = 120.0
POLL = 0.5  # seconds between deadline checks
_WATCHDOG_ENDS: set[int] = set()  # the writing ends of the live jobs' watchdog pipes in this process


class WorkerFailed(OpassessError):
    """A model's worker ended without a result: it crashed, exited, was killed, or ran out of time."""


@dataclass(frozen=True)
class Outcome:
    """How one model's worker ended: 'ok' with its result, or 'failed' with a cause (or 'error' with an exception
    the worker raised, for the caller to re-raise)."""

    status: str
    payload: object  # "ok": the capture message (isolation/wire.py decodes it); "error": {type, message}; "failed": why
    seconds: float
    begun: float | None = None  # seconds from the start of the job to the worker's 'begun' (its start-up)
    sandbox: str | None = None  # what the worker's sandbox applied, as it said before any model code ran


class Channel:
    """The worker's end of the result pipe: JSON lines with the job's nonce (what `Job` reads)."""

    def __init__(self, fd: int, nonce: str) -> None:
        self._fd, self._nonce = fd, nonce

    def send(self, kind: str, payload: object = None) -> None:
        data = memoryview(dumps({"nonce": self._nonce, "kind": kind, "payload": payload}))
        while data:
            data = data[os.write(self._fd, data):]

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)


def _hidden(fd: int) -> int:
    """`fd` moved to a random free number above 100 (a model finds no result pipe at a well-known fd)."""
    for _ in range(64):
        target = random.randrange(100, 1000)  # noqa: S311 - not a secret, only not a fixed number
        try:
            os.fstat(target)
        except OSError:
            os.dup2(fd, target, inheritable=False)
            os.close(fd)
            return target
    return fd


def _keep(body: Callable[..., None], args: tuple, nonce: str, keeper_conn: Connection, conn: Connection,
          output: Connection, watchdog: Connection) -> None:
    """Keeper body: fork the worker into a session of its own, wait for it, report its exit status; kill the
    worker's session and exit when the `opassess` process is gone (the watchdog pipe's end of file) or when the
    keeper is told to stop by a signal."""
    reset_in_child()
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)  # a kill of opassess's process group leaves the keeper to clean up after its worker
    release_helpers()
    for fd in _WATCHDOG_ENDS:  # inherited from a parent that forked this keeper: only the parent may hold them
        with contextlib.suppress(OSError):
            os.close(fd)
    keeper = os.getpid()
    pid = os.fork()
    if pid == 0:
        keeper_conn.close()  # the worker (and the model) cannot write the keeper's messages
        watchdog.close()
        _worker(body, args, Channel(_hidden(os.dup(conn.fileno())), nonce), conn, output, keeper=keeper)
    output.close()
    conn.close()

    def orphaned(*_args: object) -> None:
        kill_tree(pid)
        os._exit(1)

    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, orphaned)
    fd = keeper_conn.fileno()
    with contextlib.suppress(OSError):
        os.write(fd, dumps({"kind": "worker", "payload": pid}))
    code = wait_worker(pid, watchdog.fileno())
    if code is None:
        orphaned()
    with contextlib.suppress(OSError):
        os.write(fd, dumps({"kind": "ended", "payload": code}))
    keeper_conn.close()


def _worker(body: Callable[..., None], args: tuple, channel: Channel, conn: Connection, output: Connection, *,
            keeper: int) -> None:
    """Worker body (never returns): own session, fd 1 and 2 to the output pipe, run `body(*args, channel)`."""
    code = 1
    try:
        conn.close()
        os.setsid()  # its own session and process group: killpg(0) reaches this worker and its children only
        die_with_parent()
        if os.getppid() != keeper:  # the keeper died before the request above took hold
            os._exit(1)
        fd = output.fileno()
        os.dup2(fd, 1)  # fd 1 too, so the model's subprocesses cannot write into a report on stdout
        os.dup2(fd, 2)
        output.close()
        _one_intra_op_thread()
        sys.stdout = sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", buffering=1,  # noqa: SIM115
                                       closefd=False)
        body(*args, channel)
        code = 0
    except BaseException:  # noqa: BLE001 - reported on the relayed stderr; the missing result makes it a failure
        with contextlib.suppress(BaseException):
            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stderr.flush()
        os._exit(code)


def _one_intra_op_thread() -> None:
    """Run the worker's torch on one intra-op thread: GNU OpenMP is not fork-safe.

    A parent that has run a parallel CPU kernel before forking (a test runner, an embedding program) leaves the
    child an OpenMP pool whose threads do not exist; the child's next parallel region (a Conv2d on the CPU in a CPU
    retry or an ONNX export) then waits for them forever. One thread takes no parallel region, as torch's own
    DataLoader workers do. Captures on meta compute nothing, so only the CPU paths are slower.
    """
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_cause(code: int) -> str:
    """What a worker's exit code says: 'worker crashed: SIGSEGV (segmentation fault)', ... (a Text: the reports say
    it in the reader's language)."""
    if code < 0:
        number = -code
        name = _signal_name(number)
        causes: dict[int, str] = {
            signal.SIGABRT: N_("aborted"), signal.SIGSEGV: N_("segmentation fault"), signal.SIGBUS: N_("bus error"),
            signal.SIGFPE: N_("floating-point exception"), signal.SIGILL: N_("illegal instruction"),
            signal.SIGKILL: N_("killed (out of memory, by its own process group, or from outside)")}
        text = causes.get(number, N_("killed by a signal"))
        return Text(N_("worker crashed: %(signal)s (%(what)s)"), {"signal": name, "what": Text(text)})
    return Text(N_("worker exited with status %(code)s without a result (the model ended its process, e.g. "
                   "os._exit)"), {"code": code})


def timeout_cause(seconds: float) -> str:
    """'timed out after 5 s (worker killed)', as a Text."""
    return Text(N_("timed out after %(seconds)s s (worker killed)"), {"seconds": f"{seconds:g}"})


FORGED = "the model wrote to opassess's result channel"


class _Lines:
    """JSON lines read from one pipe, with a cap on each line."""

    def __init__(self, conn: Connection) -> None:
        self.conn: Connection | None = conn
        self.buffer = bytearray()

    def read(self, budget: int = 64 * 2**20) -> list[object]:
        """The messages readable now (a line that is not JSON is the string 'malformed'); EOF closes the pipe."""
        messages: list[object] = []
        while self.conn is not None and budget > 0:
            try:
                if not self.conn.poll():
                    break
                data = os.read(self.conn.fileno(), 2**20)
            except OSError:
                data = b""
            if not data:
                self.conn.close()
                self.conn = None
                break
            budget -= len(data)
            start = len(self.buffer)
            self.buffer += data
            while (end := self.buffer.find(b"\n", start)) >= 0:
                line, self.buffer[:] = bytes(self.buffer[:end]), self.buffer[end + 1:]
                start = 0
                try:
                    messages.append(json.loads(line))
                except (ValueError, RecursionError):
                    messages.append("malformed")
            if len(self.buffer) > MAX_MESSAGE:
                messages.append("oversized")
                self.buffer.clear()
        return messages

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Job:
    """One model running in a keeper and worker started from `context` (a multiprocessing context)."""

    def __init__(self, context: ForkContext | ForkServerContext, body: Callable[..., None], args: tuple, *, name: str,
                 timeout: float, on_progress: Callable[[str], None] | None = None) -> None:
        self.timeout = timeout
        self.on_progress = on_progress
        self.nonce = secrets.token_hex(16)
        keeper_conn, keeper_sender = context.Pipe(duplex=False)
        conn, sender = context.Pipe(duplex=False)
        self.output, output_sender = context.Pipe(duplex=False)
        watchdog, self._watchdog = context.Pipe(duplex=False)  # never written: its end of file tells the keeper
        _WATCHDOG_ENDS.add(self._watchdog.fileno())
        self.keeper = context.Process(target=_keep, name=name, daemon=True,
                                      args=(body, args, self.nonce, keeper_sender, sender, output_sender, watchdog))
        self.started = time.monotonic()
        self.deadline = self.started + START_GRACE + timeout
        try:
            self.keeper.start()
        except BaseException:  # interrupted while starting: the keeper, if it began, kills what it started
            self._close_watchdog()
            if self.keeper.pid is not None:  # started: give it a moment to clean up, then kill
                self.keeper.join(1.0)
                self.keeper.kill()
            raise
        finally:
            for end in (keeper_sender, sender, output_sender, watchdog):  # the parent keeps only the reading ends
                end.close()
        self._keeper_lines, self._lines = _Lines(keeper_conn), _Lines(conn)
        self.worker: int | None = None
        self.begun: float | None = None
        self.sandbox: str | None = None  # what the worker's sandbox applied ('begun')
        self.ended: int | None = None
        self.result: tuple[str, object] | None = None
        self.violation: str | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._open = True

    def handles(self) -> list[Connection | int]:
        """What to wait on (multiprocessing.connection.wait) for this job's next event."""
        ends = (self._keeper_lines.conn, self._lines.conn, self.output if self._open else None)
        return [self.keeper.sentinel, *(end for end in ends if end)]

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
        for message in self._keeper_lines.read():
            kind, payload = (message.get("kind"), message.get("payload")) if isinstance(message, dict) else ("", 0)
            if kind == "worker" and type(payload) is int:
                self.worker = payload
            elif kind == "ended" and type(payload) is int:
                self.ended = payload
        for message in self._lines.read():
            if self.violation is None:
                self._take(message)

    def _take(self, message: object) -> None:
        """One message of the worker's: checked strictly; anything amiss is a violation naming what it was."""
        if message in ("malformed", "oversized"):
            self.violation = f"the worker sent {'an' if message == 'oversized' else 'a'} {message} message: {FORGED}"
            return
        if not isinstance(message, dict) or set(message) != {"nonce", "kind", "payload"}:
            self.violation = f"the worker sent a malformed message: {FORGED}"
            return
        if message["nonce"] != self.nonce:
            self.violation = f"the worker sent a message without its nonce: {FORGED}"
            return
        kind, payload = message["kind"], message["payload"]
        if kind == "begun" and self.begun is None and (payload is None or type(payload) is str and len(payload) < 200):
            # set up (its sandbox, which it names) and about to run model code: the model's time starts now
            self.deadline = time.monotonic() + self.timeout
            self.begun = self.deadline - self.timeout - self.started
            self.sandbox = payload
        elif kind == "progress" and type(payload) is str and len(payload) <= MAX_TEXT:
            if self.on_progress is not None:
                self.on_progress(payload)
        elif kind in ("ok", "error", "failed"):
            if self.result is not None:
                self.violation = f"the worker sent two results: {FORGED}"
            elif kind == "error" and not (isinstance(payload, dict) and set(payload) == {"type", "message"}
                                          and all(type(v) is str and len(v) <= MAX_TEXT for v in payload.values())):
                self.violation = f"the worker sent a malformed error: {FORGED}"
            elif kind == "failed" and not (type(payload) is str and len(payload) <= MAX_TEXT):
                self.violation = f"the worker sent a malformed failure: {FORGED}"
            else:
                self.result = (kind, payload)
        else:
            self.violation = f"the worker sent a malformed {str(kind)[:40]!r} message: {FORGED}"

    def poll(self) -> Outcome | None:
        """The outcome once there is one (the processes are then gone); None while the model runs. A result counts
        once the worker has ended (a second result sent before then is seen): a worker sends it and exits."""
        self.relay()
        self._drain()
        if self.violation is not None:
            return self._finish("failed", self.violation)
        if self.ended is not None or not self.keeper.is_alive():
            if self.ended is None:
                self.keeper.join()
            self._drain()
            if self.violation is not None:
                return self._finish("failed", self.violation)
            if self.result is not None:
                return self._finish(*self.result)
            if self.ended is not None:
                return self._finish("failed", exit_cause(self.ended))
            code = self.keeper.exitcode
            how = f"was killed by {_signal_name(-code)}" if code is not None and code < 0 else f"exited ({code})"
            return self._finish("failed", f"the worker's keeper process {how} before the worker ended: the model "
                                          "killed its parent process")
        if time.monotonic() >= self.deadline:
            return self._finish("failed", timeout_cause(self.timeout))
        return None

    def wait(self) -> Outcome:
        """Block until the outcome."""
        while True:
            mp_connection.wait(self.handles(), max(0.0, min(self.deadline - time.monotonic(), POLL)))
            outcome = self.poll()
            if outcome is not None:
                return outcome

    def _finish(self, status: str, payload: object) -> Outcome:
        self.stop()
        return Outcome(status, payload, time.monotonic() - self.started, self.begun, self.sandbox)

    def _close_watchdog(self) -> None:
        if not self._watchdog.closed:
            _WATCHDOG_ENDS.discard(self._watchdog.fileno())
            self._watchdog.close()

    def stop(self) -> None:
        """Kill the worker's session and the keeper, copy the last output, close the pipes (idempotent)."""
        self._close_watchdog()
        kill_tree(self.worker, reaped=self.ended is not None)
        if self.keeper.is_alive():
            self.keeper.kill()
        self.keeper.join(KILL_GRACE)
        if self.worker is None and self._keeper_lines.conn is not None:  # killed before it said who its worker is
            self._drain()
            kill_tree(self.worker)
        self.relay()
        self._keeper_lines.close()
        self._lines.close()
        self.output.close()
        self._open = False
