"""torch._dynamo imported only by what uses it: a capture that compiles nothing does not pay its seconds of start-up.

Running a model on meta runs torch's Python reference kernels, and torch wraps many of them (its elementwise
type-promotion wrapper, dispatch modes' `__torch_dispatch__`) in `torch._disable_dynamo`: on a function's first call
that wrapper imports torch._dynamo (2-12 s on a loaded 2-core machine) only to ask `torch._dynamo.disable(fn)` for
a version of `fn` that dynamo will not compile. While torch._dynamo has not been imported nothing is being compiled,
so that version is `fn` itself. `dynamo_on_demand()` puts a stand-in module under the name `torch._dynamo` for the
block: its `disable(fn)` is `fn`; any other use of it (a model calling torch._dynamo.*, `from torch._dynamo import
x`, a submodule import, a capture method that compiles) imports the real torch._dynamo at once and carries on with it.
On leaving the block, or as soon as the real module is imported, the stand-in is gone and every function it answered
forgets the answer (torch caches it on the function as `__dynamo_disable`), so the real `disable` decides from then on.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

NAME = "torch._dynamo"


class _OnDemand(types.ModuleType):
    """The stand-in: `disable` answers without compiling anything; any other attribute brings in the real module."""

    def __init__(self) -> None:
        super().__init__(NAME, "torch._dynamo, imported on first real use (opassess.trace.lazy_dynamo)")
        self.answered: list[Any] = []

    def disable(self, fn: Any = None, recursive: bool = True, *, reason: str | None = None,
                wrapping: bool = True) -> Any:
        if fn is None or not callable(fn) or sys.modules.get(NAME) is not self:  # decorator forms, or too late
            return real().disable(fn, recursive, reason=reason, wrapping=wrapping)
        self.answered.append(fn)
        return fn

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name != "__path__":  # inspect's walks over sys.modules
            raise AttributeError(name)
        return getattr(real(), name)


def _forget(stand_in: _OnDemand) -> None:
    """Undo the stand-in: out of sys.modules, and every cached answer of its dropped."""
    if sys.modules.get(NAME) is stand_in:
        del sys.modules[NAME]
    for fn in stand_in.answered:
        with contextlib.suppress(AttributeError, TypeError):
            if getattr(fn, "__dynamo_disable", None) is fn:
                delattr(fn, "__dynamo_disable")
    stand_in.answered.clear()


def real() -> types.ModuleType:
    """The real torch._dynamo, imported now if the stand-in held its place."""
    stand_in = sys.modules.get(NAME)
    if isinstance(stand_in, _OnDemand):
        _forget(stand_in)
    return importlib.import_module(NAME)


@contextlib.contextmanager
def dynamo_on_demand() -> Iterator[None]:
    """While the block runs, torch._dynamo is imported only when something other than `disable(fn)` needs it."""
    import torch  # noqa: F401 - the stand-in is a submodule of the real torch

    if NAME in sys.modules:
        yield
        return
    stand_in = _OnDemand()
    sys.modules[NAME] = stand_in
    try:
        yield
    finally:
        _forget(stand_in)
