"""Write a rendered report: '-' is stdout; a file is replaced atomically, never left half-written.

What `-o` may overwrite: a new name, or an existing regular file (a symbolic link to a regular file is written
through: its target is replaced and the link kept). Anything else at the path is refused with one line naming it:
a directory, a device node (/dev/null, /dev/full), a FIFO, a socket, a symbolic link to one of those or to nothing.
The check runs before the temporary file is written and again right before the rename, so a path swapped for a
device in between is still refused.
"""
from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from .errors import ReportError

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"))
REFUSAL = "opassess replaces only a regular file or creates a new one ('-' writes to standard output)"


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def writable_target(path: Path, what: str = "the report") -> tuple[Path, os.stat_result | None]:
    """The file to replace for `path` and its current status (None for a new file); a ReportError naming `path`
    unless it is a new name, a regular file, or a symbolic link to a regular file (written through)."""
    try:
        link = os.lstat(path)
    except FileNotFoundError:
        return path, None
    except OSError as exc:
        raise ReportError(f"cannot write {what} to {path}: {exc.strerror or exc}") from exc
    if stat.S_ISREG(link.st_mode):
        return path, link
    if not stat.S_ISLNK(link.st_mode):
        raise ReportError(f"cannot write {what} to {path}: it is {_kind(link.st_mode)}; {REFUSAL}")
    real = Path(os.path.realpath(path))
    try:
        status = os.stat(real)
    except OSError as exc:
        raise ReportError(f"cannot write {what} to {path}: it is a symbolic link to nothing ({real}); "
                          f"{REFUSAL}") from exc
    if not stat.S_ISREG(status.st_mode):
        raise ReportError(f"cannot write {what} to {path}: it is a symbolic link to {_kind(status.st_mode)} "
                          f"({real}); {REFUSAL}")
    return real, status


def write_output(text: str, destination: str | Path, what: str = "the report") -> None:
    """Write `text` to `destination` ('-' = stdout) via a temporary file in the same directory, fsync, os.replace;
    only a new name or a regular file is replaced (see the module docstring)."""
    if str(destination) == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except BrokenPipeError as exc:
            release_stdout()
            raise ReportError(f"cannot write {what} to standard output: it was closed (the reading end of the pipe "
                              f"exited)") from exc
        except OSError as exc:
            raise ReportError(f"cannot write {what} to standard output: {exc}") from exc
        return
    given = Path(destination)
    path, status = writable_target(given, what)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise ReportError(f"cannot write {what} to {given}: directory {directory} does not exist")
    temporary: str | None = None
    try:
        # Same directory as the target, so os.replace is a rename on one file system (atomic on POSIX).
        # A short name: a legal 250-byte report name plus a prefix and suffix would pass the 255-byte limit.
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name[:24]}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if status is not None:  # keep the permissions of the report being replaced
            os.chmod(temporary, status.st_mode & 0o7777)
        else:  # mkstemp creates 0600; give a new report the usual umask-based mode
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        _still_replaceable(path, given, what)
        os.replace(temporary, path)
        temporary = None
        _sync_directory(directory)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ReportError(f"cannot write {what} to {given}: {reason}") from exc
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


def release_stdout() -> None:
    """Point standard output at /dev/null once its reader has gone, so the interpreter's flush at exit does not print
    a BrokenPipeError traceback of its own."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a descriptor
        pass


def _still_replaceable(path: Path, given: Path, what: str) -> None:
    """Right before the rename: `path` is still absent or a regular file (lstat: a link put there meanwhile is
    refused too, since the rename would replace the link itself)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise ReportError(f"cannot write {what} to {given}: it became {_kind(mode)} while the report was written; "
                          f"{REFUSAL}")


def _sync_directory(directory: Path) -> None:
    """fsync the directory so the rename itself survives a crash (best effort: not every file system allows it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def append_text(text: str, destination: str | Path, what: str) -> Path:
    """Append `text` to a regular file (created when missing; a link to a regular file is followed), never to a
    device, FIFO or socket: checked before opening and on the open descriptor, opened without blocking."""
    given = Path(destination)
    path, _ = writable_target(given, what)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        raise ReportError(f"cannot append {what} to {given}: {exc.strerror or exc}") from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ReportError(f"cannot append {what} to {given}: it is {_kind(mode)}; {REFUSAL}")
        os.set_blocking(fd, True)
        _append_whole(fd, text.encode("utf-8"), os.fstat(fd).st_size)
    except OSError as exc:
        raise ReportError(f"cannot append {what} to {given}: {exc.strerror or exc}; nothing was appended") from exc
    finally:
        os.close(fd)
    return given


def _append_whole(fd: int, data: bytes, size: int) -> None:
    """Write all of `data` at the end, or (a full disk, a quota) cut the file back to `size` and raise: never a torn
    part of a summary that a later step would append after."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)
        raise


def write_files(files: Mapping[str, str], directory: str | Path) -> list[Path]:
    """Write several files (name -> text) into `directory`, created when missing, each with write_output."""
    folder = Path(directory)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create {folder}: {exc.strerror or exc}") from exc
    written = []
    for name, text in files.items():
        write_output(text, folder / name)
        written.append(folder / name)
    return written
