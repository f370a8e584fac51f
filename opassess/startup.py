"""The garbage collector of an opassess command: paused while it imports, then tuned for what the command allocates.

A command's imports (typer, and for a model scan torch: about a million objects: modules, functions, types) are all
long-lived, none of them garbage, yet the collector walks them again every few hundred allocations: 0.07 s of
`import torch` and 0.19 s of a 50,000-line `opassess source` went to collections that found nothing. So:
- `imports_without_gc()`: the collector is paused while the block imports, and what was imported is then moved out of
  its sight (`gc.freeze`; forked workers share those pages untouched too, as the gc documentation advises);
- `tune_for_command()`: a young generation of 50,000 objects instead of 700 (a syntax tree or a report allocates
  hundreds of thousands of objects that reference counting frees); collections still run, so a cycle that model code
  or a portfolio leaves behind is still collected.
Both act only in the command's process (`enter_command()`, which opassess/__main__.py calls first): a library
caller's collector is its own, and freezing its heap would keep its garbage cycles for good.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG = 50_000  # objects allocated between two collections of the youngest generation (Python's default: 700)
_COMMAND = {"running": False}


def enter_command() -> None:
    """Mark this process as the opassess command's (the console script, `python -m opassess`)."""
    _COMMAND["running"] = True


def in_command() -> bool:
    """Whether this process is the opassess command's (not a library caller's, not a test's)."""
    return _COMMAND["running"]


@contextlib.contextmanager
def imports_without_gc() -> Iterator[None]:
    """In the command's process: the collector paused while the block runs (imports), what exists afterwards frozen,
    the collector as it was (again and again: freezing what is frozen costs nothing). Elsewhere: the block alone."""
    if not in_command():
        yield
        return
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def tune_for_command() -> None:
    """The command's thresholds: collections every YOUNG allocations (older generations as Python has them); nothing
    outside the command's process."""
    if not in_command():
        return
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, old)
