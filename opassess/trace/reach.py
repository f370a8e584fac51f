"""Which lines of the functions the captured forward entered ran, and which did not: the reach record.

A capture reports what one run with example inputs executed. The functions that run (the model's own and the
libraries' it calls, never torch's or opassess's own, nor the standard library's) are traced with sys.settrace while
the capture runs: a 'call' event for every function (answered from a per-file cache, so a torch function costs one
dictionary look-up), and 'line' events only inside the functions kept: those of modules that import torch (an import
hook or a logging helper that runs meanwhile is not the model's code). Threads the forward starts are traced too
(threading.settrace). After the run each entered function's lines are split into ran and missed (its code object's
line table less those seen); what the missed lines call is judged by the parent (classify/reach.py).

Another tracer already holding sys.settrace (a debugger, coverage) is left alone: no record is kept then (None).
"""
from __future__ import annotations

import sys
import sysconfig
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

from ..records import FunctionReach


def _skipped_roots() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the folders whose functions are never recorded: torch's and opassess's; the standard library's, which a
    virtual environment's site-packages may lie beneath)."""
    import torch

    own = (str(Path(torch.__file__).parent) + "/", str(Path(__file__).resolve().parents[1]) + "/")
    paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    stdlib = tuple(sorted({paths[key].rstrip("/") + "/" for key in ("stdlib", "platstdlib") if paths.get(key)}))
    return own, stdlib


def _uses_torch(names: dict[str, Any]) -> bool:
    """The module imports torch (a name bound to torch or one of its modules): model code, not an import hook's or a
    logging helper's that happened to run during the forward."""
    return any(isinstance(value, ModuleType) and (value.__name__ == "torch" or value.__name__.startswith("torch."))
               for value in list(names.values()))


class ReachRecorder:
    """The trace functions and what they saw; use `record_reach`."""

    def __init__(self, threads: dict[str, str]) -> None:
        self.skipped, self.stdlib = _skipped_roots()
        self.home = threading.get_ident()
        self.threads = threads
        self.files: dict[str, bool] = {}
        self.lines: dict[CodeType, set[int]] = {}
        self.tracers: dict[CodeType, Any] = {}

    def _wanted(self, filename: str) -> bool:
        if not filename.endswith(".py") or filename.startswith(self.skipped):
            return False
        installed = "/site-packages/" in filename or "/dist-packages/" in filename
        return (installed or not filename.startswith(self.stdlib)) and Path(filename).is_file()

    def call(self, frame: FrameType, event: str, arg: Any) -> Any:
        code = frame.f_code
        tracer = self.tracers.get(code)
        if tracer is not None:
            if threading.get_ident() != self.home:
                self._other_thread(code)
            return tracer
        wanted = self.files.get(code.co_filename)
        if wanted is None:
            wanted = self.files[code.co_filename] = self._wanted(code.co_filename) and _uses_torch(frame.f_globals)
        if not wanted:
            return None
        add = self.lines.setdefault(code, set()).add

        def line(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "line":
                add(frame.f_lineno)
            return line

        self.tracers[code] = line
        if threading.get_ident() != self.home:
            self._other_thread(code)
        return line

    def _other_thread(self, code: CodeType) -> None:
        name = threading.current_thread().name
        if name not in self.threads:
            self.threads[name] = f"{code.co_qualname} at {Path(code.co_filename).name}:{code.co_firstlineno}"

    def functions(self) -> tuple[FunctionReach, ...]:
        """Each entered function (merged by file, name and def line), its lines split into ran and missed."""
        merged: dict[tuple[str, str, int], tuple[set[int], set[int]]] = {}
        for code, ran in self.lines.items():
            own = {line for _, _, line in code.co_lines() if line is not None} - {code.co_firstlineno}
            key = (code.co_filename, code.co_qualname, code.co_firstlineno)
            lines, seen = merged.setdefault(key, (set(), set()))
            lines |= own
            seen |= ran
        return tuple(FunctionReach(file, name, first, tuple(sorted(seen & lines)), tuple(sorted(lines - seen)))
                     for (file, name, first), (lines, seen) in sorted(merged.items()))


class ReachRecord:
    """What `record_reach` gives: the record once the block ended (None when another tracer held sys.settrace), and
    the threads other than the recording one that ran model code (name -> 'function at file:line')."""

    def __init__(self) -> None:
        self.functions: tuple[FunctionReach, ...] | None = None
        self.threads: dict[str, str] = {}


@contextmanager
def record_reach() -> Iterator[ReachRecord]:
    """Record the reach of what runs inside, in this thread and the threads started meanwhile."""
    out = ReachRecord()
    if sys.gettrace() is not None:
        yield out
        return
    recorder = ReachRecorder(out.threads)
    previous_thread = threading._trace_hook  # type: ignore[attr-defined]
    threading.settrace(recorder.call)
    sys.settrace(recorder.call)
    try:
        yield out
    finally:
        sys.settrace(None)
        threading.settrace(previous_thread)  # type: ignore[arg-type]
        out.functions = recorder.functions()
