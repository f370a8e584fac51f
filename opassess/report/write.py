"""Write a rendered report: '-' is stdout; a file is replaced atomically, never left half-written."""
from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import ReportError


def write_output(text: str, destination: str | Path) -> None:
    """Write `text` to `destination` ('-' = stdout) via a temporary file in the same directory, fsync, os.replace."""
    if str(destination) == "-":
        try:
            sys.stdout.write(text)
            sys.stdout.flush()
        except OSError as exc:
            raise ReportError(f"cannot write the report to standard output: {exc}") from exc
        return
    path = Path(destination)
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise ReportError(f"cannot write the report to {path}: it is a directory")
    if not directory.is_dir():
        raise ReportError(f"cannot write the report to {path}: directory {directory} does not exist")
    temporary: str | None = None
    try:
        # Same directory as the target, so os.replace is a rename on one file system (atomic on POSIX).
        fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():  # keep the permissions of the report being replaced
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        else:  # mkstemp creates 0600; give a new report the usual umask-based mode
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
        temporary = None
        _sync_directory(directory)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or exc
        raise ReportError(f"cannot write the report to {path}: {reason}") from exc
    finally:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass


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
