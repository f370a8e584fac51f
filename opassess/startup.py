"""The garbage collector of an opassess command: paused while it imports, then tuned for what the command allocates.

A command's imports (typer, and for a model scan torch: about a million objects: modules, functions, types) are all
long-lived, none of them garbage, yet the collector walks them again every few hundred allocations: 0.07 s of
`import torch` and 0.19 s of a 50,000-line `opassess source` went to collections that found nothing. So:
- `imports_without_gc()`: the collector is paused while the block imports, and what was imported is then moved out of
  its sight (`gc.freeze`; forked workers share those pages untouched too, as the gc documentation advises);
- `tune_for_command()`: a young generation of 50,000 objects instead of 700 (a syntax tree or a report allocates
  hundreds of thousands of objects that reference counting frees); collections still run, so a cycle that model code
  or a portfolio leaves behind is still collected.
Only the command line calls these (opassess/__main__.py and the worker start-up); a library caller's collector is its
own.
"""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

YOUNG = 50_000  # objects allocated between two collections of the youngest generation (Python's default: 700)


@contextlib.contextmanager
def imports_without_gc() -> Iterator[None]:
    """The collector paused while the block runs (imports), what exists afterwards frozen, the collector as it was."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def tune_for_command() -> None:
    """The command's thresholds: collections every YOUNG allocations (older generations as Python has them)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG, middle, old)
