"""The Python files of a big tree scanned on two cores: about half of them in a forked child, the rest here.

Parsing is most of a source scan (`ast.parse` is 0.27 s of its 0.6 s on 50,000 lines) and it holds the GIL: a second
core helps only through a second process. Above FORK_BYTES of Python source, where the platform forks and this
process may run on two cores, `scan_files` forks one child before it scans: the child scans its share (the files are
dealt to the two sides by size, largest first), sends back each file's result as plain JSON (sites, imports, the
reason it was skipped, its line count) through a pipe and exits; this process scans the rest meanwhile, then reads
the child's results and puts every file back in its place, so the scan is the one a single process makes, byte for
byte. Nothing a file holds is imported or run, in either process. A child that fails (killed, out of memory, an
answer that does not read back, no answer in time) is stopped and its files are scanned here: the same result, only
later.
"""
from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..options import IN_PROCESS_ENV
from .records import KernelSize, Site

FORK_BYTES = 512 * 1024  # Python source below this is scanned here alone (a fork and the JSON cost ~0.05 s)
CHILD_GRACE = 30.0  # seconds the child may take beyond this side's share before its files are scanned here
# the reason a file was not scanned when parsing it ran out of memory: from the child, its files are scanned here
# again (two syntax trees at once were the pressure), so the scan is the one-process scan
OUT_OF_MEMORY = "not parsed: out of memory while parsing it"

# one file's scan: its sites, its absolute imports (file, module, line), why it was skipped (None: scanned), its lines
FileResult = tuple[list[Site], list[tuple[str, str, int]], str | None, int]
ScanOne = Callable[[Path, str], FileResult]


def _two_cores() -> bool:
    """Whether a child may be forked to scan beside this process: Linux, two usable cores, children this process
    reaps itself (SIGCHLD not ignored), and no OPASSESS_IN_PROCESS=1 (a debugger: everything in one process, as
    isolation/scan.py does for a model)."""
    if not hasattr(os, "fork") or not sys.platform.startswith("linux") or os.environ.get(IN_PROCESS_ENV) == "1":
        return False
    try:
        return len(os.sched_getaffinity(0)) > 1 and signal.getsignal(signal.SIGCHLD) != signal.SIG_IGN
    except (OSError, ValueError):
        return False


def scan_files(jobs: Sequence[tuple[Path, str]], sizes: Sequence[int], scan_one: ScanOne) -> list[FileResult]:
    """`scan_one(path, relative)` of every job, in the jobs' order; a share of them in a forked child when the files
    total FORK_BYTES or more and this process may use two cores."""
    if len(jobs) < 2 or sum(sizes) < FORK_BYTES or not _two_cores():
        return [scan_one(path, rel) for path, rel in jobs]
    sides: tuple[list[int], list[int]] = ([], [])  # (this process's, the child's) job indices
    load = [0, 0]
    for index in sorted(range(len(jobs)), key=lambda i: -sizes[i]):
        side = 0 if load[0] <= load[1] else 1
        sides[side].append(index)
        load[side] += sizes[index] + 1
    mine, theirs = sorted(sides[0]), sorted(sides[1])
    try:
        read_end, write_end = os.pipe()
    except OSError:  # no file descriptor left: one process
        return [scan_one(path, rel) for path, rel in jobs]
    try:
        pid = os.fork()
    except BaseException as exc:  # no process left (EAGAIN, ENOMEM, a sandbox), or interrupted: one process
        os.close(read_end)
        os.close(write_end)
        if not isinstance(exc, OSError):
            raise
        return [scan_one(path, rel) for path, rel in jobs]
    if pid == 0:  # the child: its share, as JSON, then gone (no cleanup of the parent's state runs here)
        code = 1
        try:
            os.close(read_end)
            gc.disable()  # a short life: what it allocates is freed when it exits
            # it writes nowhere but the pipe: not even a SyntaxWarning about a scanned file to a stderr whose lock
            # another thread of the parent (a progress spinner) may have held when it forked
            warnings.simplefilter("ignore")
            share = [scan_one(*jobs[index]) for index in theirs]
            if any(reason == OUT_OF_MEMORY for _, _, reason, _ in share):
                raise MemoryError("a file of the child's share")  # exit 1: scanned again on the other side
            sent = json.dumps([_encoded(result) for result in share]).encode()
            with os.fdopen(write_end, "wb") as out:
                out.write(sent)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    results: dict[int, FileResult] = {}
    answer: bytes | None = None
    started = time.monotonic()
    try:
        for index in mine:
            results[index] = scan_one(*jobs[index])
        mine_took = time.monotonic() - started
        # the child has as much to do: it gets that again four times over (at least CHILD_GRACE s) before this side
        # stops waiting and scans its files too; a child that hangs costs time, never the scan
        answer = _read_all(read_end, time.monotonic() + max(CHILD_GRACE, 4 * mine_took))
    finally:
        os.close(read_end)
        if answer is None:  # interrupted, this side failed, or the child is too late: its work is not wanted
            os.kill(pid, signal.SIGKILL)
        try:
            ended = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
        except ChildProcessError:  # reaped by someone else (a host process's waitpid(-1)): the answer speaks
            ended = True
    decoded = _decoded(answer, len(theirs)) if answer is not None and ended else None
    if decoded is None:  # the child failed: its files scanned here
        decoded = [scan_one(*jobs[index]) for index in theirs]
    results.update(zip(theirs, decoded, strict=True))
    return [results[index] for index in range(len(jobs))]


def _read_all(fd: int, deadline: float) -> bytes | None:
    """What the child writes until it closes the pipe, or None when that has not happened by `deadline`."""
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not selector.select(left):
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def _encoded(result: FileResult) -> list[Any]:
    sites, imports, reason, lines = result
    out = []
    for site in sites:
        size = site.size
        if size is not None and type(size) is not KernelSize:
            raise TypeError(f"a size the child cannot send: {type(size).__name__}")  # the parent scans it instead
        out.append([site.file, site.line, site.code, site.kind, site.subject, site.detail,
                    None if size is None else [size.lines, size.kernels, size.apis]])
    return [out, imports, reason, lines]


def _decoded(answer: bytes, count: int) -> list[FileResult] | None:
    """The child's results read back into records, or None when they do not read as what it sends."""
    try:
        items = json.loads(answer)
        if not isinstance(items, list) or len(items) != count:
            return None
        decoded: list[FileResult] = []
        for sites, imports, reason, lines in items:
            if not (isinstance(reason, str | None) and type(lines) is int):
                return None
            decoded.append((
                [Site(_text(file), _number(line), _text(code), _text(kind), _text(subject),
                      tuple((_text(key), _text(value)) for key, value in detail),
                      None if size is None else KernelSize(_number(size[0]), _number(size[1]),
                                                           tuple(_text(api) for api in size[2])))
                 for file, line, code, kind, subject, detail, size in sites],
                [(_text(file), _text(module), _number(line)) for file, module, line in imports], reason, lines))
        return decoded
    except (ValueError, TypeError, IndexError, KeyError):
        return None


def _text(value: Any) -> str:
    if type(value) is not str:
        raise TypeError("not a string")
    return value


def _number(value: Any) -> int:
    if type(value) is not int:
        raise TypeError("not an integer")
    return value
