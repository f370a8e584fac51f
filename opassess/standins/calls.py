"""The callables stand-ins hand to the model: library symbols and Triton launches, routed to the running capture."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import OpassessError

# The session whose stand-ins are active (set by session.StandIns while a stage runs), and the capture's hook that
# records a stand-in call as an operator: handler(call, args, kwargs) -> result. None outside a dispatch capture.
ACTIVE: dict[str, Any] = {"session": None, "handler": None}


def pass_on(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call the model's or torch's fn from a stand-in hook: what it raises is theirs (trace/blame.py's call_out)."""
    return fn(*args, **kwargs)


class StandInError(OpassessError):
    """A stand-in cannot go on: a call whose result it does not know, or a call outside the dispatch capture."""


class StandInCall:
    """Something the model calls that opassess stands in for; `key` is the operator key of its calls."""

    key: str
    library: str
    kind = "library"  # the operator kind its calls are recorded as ("extension": the project's own, project.py)
    kernel: Callable | None = None  # the Python function behind a Triton kernel, for naming its arguments

    def run(self, args: tuple, kwargs: dict) -> Any:
        """The stand-in result of one call (raises StandInError when it is not known)."""
        raise NotImplementedError

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        session, handler = ACTIVE["session"], ACTIVE["handler"]
        if session is None:
            raise StandInError(f"{self.key}: a stand-in of opassess called after the scan ended")
        session.note_call(self)
        if handler is None:
            raise StandInError(f"{self.key}: {self.library} is not usable here (no GPU) and its stand-in records "
                               "only calls made by forward() under the dispatch capture, not calls while the model "
                               "is built or under fx/export; the capture cannot continue")
        return handler(self, args, kwargs)


class LibrarySymbol(StandInCall):
    """A function or class of a library that is not installed: `flash_attn.flash_attn_func`. Attribute access gives
    deeper symbols (`flash_attn.bert_padding.pad_input`), so `from pkg import sub` then `sub.fn(...)` works."""

    def __init__(self, qualified: str, library: str) -> None:
        self.key = qualified
        self.library = library
        self.__name__ = self.__qualname__ = qualified.rsplit(".", 1)[-1]
        self.__module__ = qualified.rpartition(".")[0] or qualified

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        symbol = LibrarySymbol(f"{self.key}.{name}", self.library)
        setattr(self, name, symbol)
        return symbol

    def __repr__(self) -> str:
        return f"<opassess stand-in {self.key}>"

    def run(self, args: tuple, kwargs: dict) -> Any:
        from .outputs import NotModelled, output_rule

        rule = output_rule(self.key)
        if rule is None:
            raise StandInError(f"{self.key}: {self.library} is not installed and opassess does not know what this "
                               f"call returns; the capture cannot continue (install {self.library} or scan "
                               "a configuration that does not call it)")
        try:
            return rule(*args, **kwargs)
        except NotModelled as exc:
            raise StandInError(str(exc)) from None
        except (AttributeError, IndexError, TypeError) as exc:  # not the arguments the library documents
            raise StandInError(f"{self.key}: the arguments do not match the documented signature the stand-in "
                               f"follows ({type(exc).__name__}: {exc}); the capture cannot continue") from exc


class TritonLaunch(StandInCall):
    """One `kernel[grid]`: its call records the launch and runs nothing (the kernel writes into tensors the model
    allocated; no result is returned, as a Triton launch returns none the model uses)."""

    library = "triton"

    def __init__(self, name: str, kernel: Callable | None, grid: Any) -> None:
        self.key = f"triton:{name}"
        self.kernel = kernel
        self.grid = grid
        self.__name__ = self.__qualname__ = name

    def run(self, args: tuple, kwargs: dict) -> Any:
        return None

    def grid_text(self) -> str | None:
        """The launch grid as written: a tuple of ints, or 'callable' when it is computed from the launch meta."""
        grid = self.grid
        if isinstance(grid, int):
            grid = (grid,)
        if isinstance(grid, tuple) and all(isinstance(g, int) for g in grid):
            return "x".join(str(g) for g in grid)
        return "callable" if callable(grid) else None
