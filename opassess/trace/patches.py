"""Interception where torch offers no hook: autograd.Function.apply, compiled-extension functions, and
torch.compiler.is_compiling. Each patch is a context manager that restores what it replaced, even on error.

torch has module hooks (used by the dispatch capture) and torch-function / dispatch modes, but none of them sees
a custom autograd.Function as one call (the modes see only the ops inside its forward) nor a pybind11 function of
a C++ extension (it takes no tensor subclass protocol); the only way to name them as the user wrote them is to
replace the attribute the model's code looks up, for the duration of one capture."""
from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

from ..load import display_module, is_library_file
from .blame import call_out

# ------------------------------------------------------- autograd Functions


class AutogradFunctionCall:
    """A callable standing for `SomeFunction.apply` so that the Function appears as one operator: the project's own
    (kind "custom", its hand-written backward to port), or torch's own (kind "function": DTensor's Redistribute,
    torch.distributed.nn's collectives, checkpointing), judged by the ATen ops it runs like any torch function."""

    def __init__(self, cls: type) -> None:
        self.cls: Any = cls  # an autograd.Function subclass
        self.key = f"{display_module(cls.__module__)}.{cls.__qualname__}"
        module = cls.__module__ or ""
        self.kind = "function" if module == "torch" or module.startswith("torch.") else "custom"
        self.__name__ = cls.__name__
        self.__qualname__ = cls.__qualname__
        self.__module__ = __name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_out(self.cls.apply, *args, **kwargs)


@functools.cache
def autograd_call(cls: type) -> AutogradFunctionCall:
    """The one AutogradFunctionCall standing for cls (cached: FX graphs and caches compare targets by identity)."""
    return AutogradFunctionCall(cls)


@contextlib.contextmanager
def patched_function_apply(on_apply: Callable[[type, Callable, tuple, dict], Any]) -> Iterator[None]:
    """Route every autograd.Function.apply through on_apply(cls, original_apply, args, kwargs)."""
    import torch

    # A classmethod on torch 2.13, a C classmethod_descriptor on 2.14: both bind to a class through the descriptor
    # protocol's __get__(None, cls), which neither version's own attribute (__func__) offers to both.
    original = torch.autograd.Function.__dict__["apply"]

    def apply(cls, *args, **kwargs):
        return on_apply(cls, original.__get__(None, cls), args, kwargs)

    torch.autograd.Function.apply = classmethod(apply)
    try:
        yield
    finally:
        torch.autograd.Function.apply = original


# ------------------------------------------------------ compiled extensions


class ExtensionCall:
    """A callable standing for a function of a compiled extension module (a C++/CUDA extension built with
    torch.utils.cpp_extension or pybind11), so that the call appears as one operator of kind 'extension'."""

    def __init__(self, fn: Callable, module_name: str) -> None:
        self.fn = fn
        self.key = f"{module_name}.{fn.__name__}"
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__name__
        self.__module__ = __name__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return call_out(self.fn, *args, **kwargs)


def _is_extension_module(module: Any) -> bool:
    """A compiled module that is neither torch's nor the standard library's (where user C++ code lives)."""
    import sysconfig
    import types

    filename = getattr(module, "__file__", None) or ""
    if not isinstance(module, types.ModuleType) or not filename.endswith((".so", ".pyd")):
        return False
    stdlib = tuple(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib"))
    return not filename.startswith(stdlib) and not is_library_file(filename) and \
        module.__name__.split(".")[0] not in ("torch", "numpy", "_operator")


def _extension_functions(model: Any) -> list[tuple[Any, str, ExtensionCall]]:
    """(owner, attribute, call) for every compiled-extension function the model's code can reach: extension
    modules and functions bound in the globals of the modules that define the model's classes."""
    found: dict[tuple[int, str], tuple[Any, str, ExtensionCall]] = {}
    code_modules = {sys.modules.get(type(m).__module__) for m in model.modules()}
    for code in code_modules:
        if code is None or code.__name__.startswith("torch"):
            continue
        for name, value in list(vars(code).items()):
            if _is_extension_module(value):
                for fname, fn in list(vars(value).items()):
                    if not fname.startswith("_") and type(fn).__name__ == "builtin_function_or_method":
                        found[(id(value), fname)] = (value, fname, ExtensionCall(fn, value.__name__))
            elif type(value).__name__ == "builtin_function_or_method" and \
                    _is_extension_module(sys.modules.get(getattr(value, "__module__", None) or "")):
                found[(id(code), name)] = (code, name, ExtensionCall(value, value.__module__))
    return list(found.values())


@contextlib.contextmanager
def patched_extensions(model: Any, on_call: Callable[[ExtensionCall, tuple, dict], Any]) -> Iterator[None]:
    """Route every reachable compiled-extension function through on_call(call, args, kwargs) while capturing."""
    patches = _extension_functions(model)
    for owner, name, call in patches:
        setattr(owner, name, functools.partial(on_call, call))
    try:
        yield
    finally:
        for owner, name, call in patches:
            setattr(owner, name, call.fn)


# ------------------------------------------------------ compiling, as seen by the model


@contextlib.contextmanager
def compiling() -> Iterator[None]:
    """torch.compiler.is_compiling() answers True inside the block. torch sets its own flag only from inside
    torch.compile and torch.export (private context managers, which also change how ops dispatch); libraries look
    the public function up at call time, so replacing it is what makes them take their graph-safe path."""
    import torch

    original = torch.compiler.is_compiling
    torch.compiler.is_compiling = lambda: True
    try:
        yield
    finally:
        torch.compiler.is_compiling = original


# ------------------------------------------------------ stand-ins (opassess/standins)


@contextlib.contextmanager
def routed_stand_ins(on_call: Callable[[Any, tuple, dict], Any]) -> Iterator[None]:
    """Route every stand-in call (a library that is not installed, a Triton launch) through on_call(call, args,
    kwargs) while capturing; outside this block a stand-in call stops with a one-line error."""
    from ..standins.calls import ACTIVE

    previous, ACTIVE["handler"] = ACTIVE["handler"], on_call
    try:
        yield
    finally:
        ACTIVE["handler"] = previous

