"""Leaving nothing behind: kill a worker's whole session, notice a dead parent, stop multiprocessing's helpers.

A worker leads a session of its own (setsid), so everything a model starts stays in that session unless it starts a
new one: a child that moves itself to another process group (`setpgid`) is still a member, and `kill_tree` finds it
through /proc and kills its group too. A child that calls `setsid` itself leaves the session and is not tracked (the
README says so; only a container or a cgroup holds such a process).

Who ends whom when the `opassess` process itself dies (SIGKILL gives it no chance to clean up):
- each keeper holds the reading end of a *watchdog pipe* whose only writing end is in the `opassess` process; its
  end of file means the parent is gone, and the keeper kills its worker's session and exits (`wait_worker`);
- a keeper closes the forkserver's "alive" pipe it inherits (`release_helpers`), so the forkserver sees its end of
  file once the `opassess` process is gone and exits; the resource tracker sees its own once the keepers and
  workers holding it are gone too;
- a worker dies with its keeper (PR_SET_PDEATHSIG), its session with it when the keeper was the one to go.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time
from typing import Protocol

REAP_ROUNDS = 8  # passes over /proc: a model may fork while its session is being killed


class _ForkServerState(Protocol):
    """The private state of multiprocessing's ForkServer that stopping it touches (CPython's forkserver.py; typeshed
    leaves it out)."""

    _lock: threading.Lock
    _forkserver_pid: int | None
    _forkserver_alive_fd: int | None
    _forkserver_address: str | None


class _TrackerState(Protocol):
    """The private state of multiprocessing's ResourceTracker that stopping it touches (resource_tracker.py)."""

    _fd: int | None
    _pid: int | None


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Ask Linux to send `signum` to this process when its parent ends (nothing elsewhere)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signum)  # PR_SET_PDEATHSIG


def session_groups(sid: int) -> set[int]:
    """The process groups of the live (not zombie) members of session `sid`, read from /proc (empty elsewhere)."""
    groups = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if len(fields) > 3 and fields[0] != b"Z" and int(fields[3]) == sid:  # state, ppid, pgrp, session
                groups.add(int(fields[2]))
    return groups


def kill_tree(pid: int | None, *, reaped: bool = False) -> None:
    """SIGKILL the session and process group led by worker `pid`: the worker, its children, and children that moved
    to a process group of their own within the session; `pid` itself too unless it has been reaped already (its
    number may then belong to another process). Group and session numbers are not reused while they have members,
    so nothing outside the worker's session is hit."""
    if not pid:
        return
    for kill in (os.killpg,) if reaped else (os.killpg, os.kill):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)
    for _ in range(REAP_ROUNDS):
        groups = session_groups(pid)
        if not groups:
            return
        for group in groups:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
        time.sleep(0.01)


def release_helpers() -> None:
    """In a keeper: close the forkserver's "alive" pipe it inherited, so that the forkserver ends with the `opassess`
    process and not with the last keeper (stop_helpers would otherwise wait on keepers still starting). The resource
    tracker's pipe is kept: the workers share the run's one tracker (a worker with a tracker of its own would leave
    it to warn about the semaphores torch creates), and it ends once the keepers and workers are gone."""
    with contextlib.suppress(Exception):
        from multiprocessing import forkserver

        # set by the forkserver in the process it forked; typeshed declares none of the private state
        server: _ForkServerState = forkserver._forkserver  # type: ignore[assignment]  # noqa: SLF001
        if server._forkserver_alive_fd is not None:  # noqa: SLF001
            with contextlib.suppress(OSError):
                os.close(server._forkserver_alive_fd)  # noqa: SLF001
            server._forkserver_alive_fd = server._forkserver_pid = None  # noqa: SLF001


def wait_worker(pid: int, watchdog: int) -> int | None:
    """In a keeper: wait for worker `pid` to end and return its exit code, or None as soon as the watchdog pipe
    reaches its end of file (the `opassess` process is gone; nothing is ever written to it)."""
    try:
        pidfd = os.pidfd_open(pid)  # readable once the worker has ended
    except (AttributeError, OSError):
        pidfd = None
    poller = select.poll()
    poller.register(watchdog, select.POLLIN | select.POLLHUP)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    try:
        while True:
            ready = {fd for fd, _ in poller.poll(None if pidfd is not None else 200)}
            if watchdog in ready:
                return None
            with contextlib.suppress(InterruptedError):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    return os.waitstatus_to_exitcode(status)
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _reap(pid: int, seconds: float) -> None:
    """Wait up to `seconds` for child `pid` to end, then SIGKILL and reap it."""
    end = time.monotonic() + seconds
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > end:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return
            time.sleep(0.02)


def stop_helpers() -> None:
    """Stop multiprocessing's forkserver and resource tracker (a stopped run leaves no process behind): each is told
    to stop by the end of its pipe and killed if it has not within two seconds (a forkserver still importing torch)."""
    with contextlib.suppress(Exception):
        from multiprocessing import forkserver, util

        # the one way to stop it before the interpreter exits; typeshed declares none of the private state
        server: _ForkServerState = forkserver._forkserver  # type: ignore[assignment]  # noqa: SLF001
        with server._lock:  # noqa: SLF001
            # CPython sets and clears the pid and the alive pipe together
            if server._forkserver_pid is not None and server._forkserver_alive_fd is not None:  # noqa: SLF001
                os.close(server._forkserver_alive_fd)  # noqa: SLF001
                _reap(server._forkserver_pid, 2.0)  # noqa: SLF001
                address = server._forkserver_address  # noqa: SLF001
                if address and not util.is_abstract_socket_namespace(address):
                    with contextlib.suppress(OSError):
                        os.unlink(address)
                server._forkserver_alive_fd = server._forkserver_pid = None  # noqa: SLF001
                server._forkserver_address = None  # noqa: SLF001
    with contextlib.suppress(Exception):
        from multiprocessing import resource_tracker

        tracker: _TrackerState = resource_tracker._resource_tracker  # type: ignore[assignment]  # noqa: SLF001 - as above
        # the tracker sets and clears its pipe and pid together
        if tracker._fd is not None and tracker._pid is not None:  # noqa: SLF001 - closing our end asks it to stop; a stray holder must not hang us
            os.close(tracker._fd)  # noqa: SLF001
            tracker._fd = None  # noqa: SLF001
            _reap(tracker._pid, 2.0)  # noqa: SLF001
            tracker._pid = None  # noqa: SLF001
