"""One scan's stand-ins: what is installed while a stage runs (import hook, Triton launch patch, CUDA-device
mapping, no-op torch.cuda calls), what is removed when it ends, and the record of what was used."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

from ..records import StandIn
from .calls import ACTIVE, StandInCall, TritonLaunch, pass_on
from .modules import STANDIN_FLAG, StandInFinder, import_roots
from .project import ProjectExtension

MISSING_WHY = "{library} is not installed: a stand-in module records each call as an operator"
TRITON_WHY = ("triton is installed, but a kernel cannot launch without a GPU: each launch is recorded with its "
              "tensor arguments and not run")
CUDA_WHY = "no CUDA device here: cuda devices map to the capture's device ({device}); synchronize/set_device do nothing"
NO_OPS = ("synchronize", "set_device")


class StandIns:
    """Stand-ins for one scan. `active(device)` installs them for the duration of a stage (re-entrant);
    `records()` says which were used."""

    def __init__(self, facts: Any = None) -> None:
        if facts is None:
            from ..source.facts import load_source_facts

            facts = load_source_facts()
        self.finder = StandInFinder(import_roots(facts.libraries), self._imported, self._project)
        self.device = "meta"
        self.modules: dict[str, ModuleType] = {}  # stand-in modules handed out, by name
        self._used: dict[str, tuple[dict[str, None], str]] = {}  # library -> (symbols in order, why)
        self._built_by: dict[str, str] = {}  # the project's own extension -> the setup.py line that builds it
        self._depth = 0
        self._stack: contextlib.ExitStack | None = None

    # ------------------------------------------------------------------ record

    def note(self, library: str, symbol: str | None, why: str) -> None:
        """`library` was stood in for (and `symbol` used, when given): `why` is kept from the first note."""
        symbols, _ = self._used.setdefault(library, ({}, why))
        if symbol:
            symbols.setdefault(symbol, None)

    def _imported(self, library: str, name: str) -> None:
        self.note(library, None, MISSING_WHY.format(library=library))

    def _project(self, extension: ProjectExtension) -> None:
        self._built_by[extension.name] = extension.built_by
        self.note(extension.name, None, extension.why)

    def note_call(self, call: StandInCall) -> None:
        """A stand-in was called (calls.py)."""
        if call.library in self._built_by:
            self.note(call.library, call.key, "")
        elif isinstance(call, TritonLaunch) and "triton" not in self._used and "triton" not in self.modules:
            self.note("triton", call.key, TRITON_WHY)
        else:
            self.note(call.library, call.key, MISSING_WHY.format(library=call.library))

    def records(self) -> tuple[StandIn, ...]:
        """The stand-ins used so far, in order of first use."""
        return tuple(StandIn(library, tuple(symbols), why, self._built_by.get(library))
                     for library, (symbols, why) in self._used.items())

    # ------------------------------------------------------------------ install / remove

    @contextlib.contextmanager
    def active(self, device: str | None = None) -> Iterator[StandIns]:
        """Install the stand-ins while the block runs (nested blocks share one installation)."""
        previous = self.device
        if device is not None:
            self.device = device
        if self._depth == 0:
            self._install()
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1
            self.device = previous
            if self._depth == 0:
                self._remove()

    def _install(self) -> None:
        stack = contextlib.ExitStack()
        try:
            ACTIVE["session"] = self
            stack.callback(ACTIVE.__setitem__, "session", None)
            sys.meta_path.append(self.finder)
            stack.callback(_remove_finder, self.finder)
            # Stand-in modules leave sys.modules when the stage ends and are not put back for the next one: torch
            # and other libraries probe for triton in sys.modules (and cache the answer); the model's code holds
            # the names it imported.
            stack.callback(self._take_modules)
            stack.enter_context(_patched_triton_launches())
            stack.enter_context(_patched_cuda_calls(self))
            stack.enter_context(_device_mode(self))
        except BaseException:
            stack.close()
            raise
        self._stack = stack

    def _remove(self) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()

    def _take_modules(self) -> None:
        """Move every stand-in module out of sys.modules (kept here for the next stage)."""
        for name, module in list(sys.modules.items()):
            if isinstance(module, ModuleType) and getattr(module, STANDIN_FLAG, None) is not None \
                    and type(module).__module__ == "opassess.standins.modules":
                self.modules[name] = module
                del sys.modules[name]


def _remove_finder(finder: Any) -> None:
    with contextlib.suppress(ValueError):
        sys.meta_path.remove(finder)


@contextlib.contextmanager
def _patched_triton_launches() -> Iterator[None]:
    """An installed triton: kernel[grid] gives a recording launch instead of compiling for a GPU (JITFunction,
    autotune and heuristics all launch through KernelInterface.__getitem__)."""
    jit = sys.modules.get("triton.runtime.jit")
    interface = getattr(jit, "KernelInterface", None)
    if interface is None or "__getitem__" not in vars(interface):
        yield
        return
    original = vars(interface)["__getitem__"]

    def launch(self: Any, grid: Any) -> TritonLaunch:
        fn = self
        while hasattr(fn, "fn"):  # Autotuner / Heuristics -> JITFunction -> the Python function
            fn = fn.fn
        return TritonLaunch(getattr(fn, "__name__", type(self).__name__), fn, grid)

    interface.__getitem__ = launch
    try:
        yield
    finally:
        interface.__getitem__ = original


@contextlib.contextmanager
def _patched_cuda_calls(session: StandIns) -> Iterator[None]:
    """torch.cuda.synchronize and torch.cuda.set_device do nothing (there is no device to wait for or pick)."""
    import torch

    originals = {name: getattr(torch.cuda, name) for name in NO_OPS}

    def no_op(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> None:
            session.note("torch.cuda", f"torch.cuda.{name}", CUDA_WHY.format(device=session.device))

        call.__name__ = name
        return call

    for name in NO_OPS:
        setattr(torch.cuda, name, no_op(name))
    try:
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch.cuda, name, fn)


def _device_mode(session: StandIns) -> Any:
    """A torch-function mode giving the capture's device wherever code asks for a CUDA one."""
    import torch
    from torch.overrides import TorchFunctionMode

    cuda_method = torch.Tensor.cuda

    def is_cuda(value: Any) -> bool:
        return (isinstance(value, str) and value.split(":")[0] == "cuda") or \
            (isinstance(value, torch.device) and value.type == "cuda")

    class CudaToDevice(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            if func is cuda_method:
                session.note("torch.cuda", ".cuda()", CUDA_WHY.format(device=session.device))
                return pass_on(args[0].to, session.device)
            if any(is_cuda(v) for v in args) or any(is_cuda(v) for v in kwargs.values()):
                session.note("torch.cuda", "device='cuda'", CUDA_WHY.format(device=session.device))
                args = tuple(session.device if is_cuda(v) else v for v in args)
                kwargs = {k: session.device if is_cuda(v) else v for k, v in kwargs.items()}
            return pass_on(func, *args, **kwargs)

    return CudaToDevice()
