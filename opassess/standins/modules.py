"""Stand-in modules for kernel libraries that are not installed, and the import hook that hands them out.

The hook sits at the end of sys.meta_path: Python asks it only after every real finder failed, so a library that is
installed is always the one imported. It answers for the import names of source_facts.json's third-party kernel
table (a row's `modules`), nothing else: a typo in an unrelated import still fails as it would without opassess.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable
from types import FrameType, ModuleType
from typing import Any

from .calls import ACTIVE, LibrarySymbol, TritonLaunch
from .project import ExtensionSymbol, ProjectExtension, project_extension

STANDIN_FLAG = "__opassess_standin__"  # set on every stand-in module: what session.py removes from sys.modules


class StandInModule(ModuleType):
    """A module of a library that is not installed: every public attribute is a stand-in symbol."""

    def __init__(self, name: str, library: str) -> None:
        super().__init__(name, f"opassess stand-in for {library} (not installed)")
        self.__path__: list[str] = []  # a package: submodules import through the hook too
        setattr(self, STANDIN_FLAG, library)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        symbol = LibrarySymbol(f"{self.__name__}.{name}", getattr(self, STANDIN_FLAG))
        setattr(self, name, symbol)
        return symbol


class ProjectExtensionModule(StandInModule):
    """The project's own compiled extension, not built here (project.py): every public attribute is one of its
    functions, recorded as an operator of kind "extension"."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        symbol = ExtensionSymbol(f"{self.__name__}.{name}", getattr(self, STANDIN_FLAG))
        setattr(self, name, symbol)
        return symbol


# ---------------------------------------------------------------------- triton, when it is not installed


class StandInKernel:
    """What @triton.jit (and autotune / heuristics on top) gives back: launchable as kernel[grid](...) or
    kernel.run(..., grid=...); never compiled."""

    def __init__(self, fn: Callable) -> None:
        inner = getattr(fn, "fn", fn)
        self.fn = inner
        self.__name__ = getattr(inner, "__name__", "kernel")
        self.__doc__ = getattr(inner, "__doc__", None)

    def __getitem__(self, grid: Any) -> TritonLaunch:
        return TritonLaunch(self.__name__, self.fn, grid)

    def run(self, *args: Any, grid: Any = None, warmup: bool = False, **kwargs: Any) -> Any:
        return self[grid](*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{self.__name__}: a Triton kernel is launched as {self.__name__}[grid](...)")


def _decorator(*args: Any, **kwargs: Any) -> Any:
    """@triton.jit, @triton.jit(...), @triton.autotune(configs, key), @triton.heuristics({...})."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return StandInKernel(args[0])
    return StandInKernel


class Config:
    """triton.Config: kept as given (launch options are not evaluated)."""

    def __init__(self, kwargs: dict | None = None, num_warps: int = 4, num_stages: int = 2, **options: Any) -> None:
        self.kwargs = dict(kwargs or {})
        self.num_warps, self.num_stages, self.options = num_warps, num_stages, options


def _next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


class _Opaque:
    """A triton.language name (tl.constexpr, tl.float32, tl.load ...): kernel bodies are never run, so only their
    annotations and defaults evaluate these."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Opaque(f"{self._name}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Opaque(f"{self._name}(...)")

    def __getitem__(self, item: Any) -> Any:
        return self

    def __repr__(self) -> str:
        return f"<opassess stand-in {self._name}>"


class TritonModule(StandInModule):
    """`triton` and its submodules (triton.language, triton.runtime ...): jit, autotune, heuristics, Config, cdiv and
    next_power_of_2 as a model's Python code uses them; anything else an opaque name."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "triton")
        if name == "triton":
            self.jit = self.autotune = self.heuristics = _decorator
            self.Config = Config
            self.cdiv = lambda a, b: -(-a // b)
            self.next_power_of_2 = _next_power_of_2

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Opaque(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


# ---------------------------------------------------------------------- the import hook


class StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the import names of the kernel-library table, and of the extensions the project's setup.py builds
    (project.py), that no installed finder found."""

    def __init__(self, roots: dict[str, str], on_import: Callable[[str, str], None],
                 on_project: Callable[[ProjectExtension], None] | None = None) -> None:
        self.roots = roots  # import name ('flash_attn', 'megatron.core') -> the table's library name
        self.on_import = on_import
        self.on_project = on_project
        self.project: dict[str, ProjectExtension] = {}  # the project's own extensions stood in for, by module name

    def library_of(self, fullname: str) -> str | None:
        for name, library in self.roots.items():
            if fullname == name or fullname.startswith(name + "."):
                return library
        return None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if ACTIVE["session"] is None:
            return None
        importer = _project_importer()
        if importer is None:
            return None
        if self.library_of(fullname) is None:
            extension = project_extension(*importer, fullname=fullname)
            if extension is None:
                return None
            self.project[fullname] = extension
            return importlib.machinery.ModuleSpec(fullname, self, is_package=False)
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> ModuleType:
        extension = self.project.get(spec.name)
        if extension is not None:
            if self.on_project is not None:
                self.on_project(extension)
            return ProjectExtensionModule(spec.name, spec.name)
        library = self.library_of(spec.name) or spec.name
        self.on_import(library, spec.name)
        if spec.name.split(".")[0] == "triton":
            return TritonModule(spec.name)
        return StandInModule(spec.name, library)

    def exec_module(self, module: ModuleType) -> None:
        parent, _, child = module.__name__.rpartition(".")
        if parent and parent in sys.modules:
            setattr(sys.modules[parent], child, module)


def _project_importer() -> tuple[str, int] | None:
    """The file and line of the import statement being run when it is the project's (the model file or its own
    modules), else None. torch, transformers and other installed packages probe optional libraries (`try: import
    triton`) and must keep seeing them missing: a stand-in would send them down GPU paths."""
    import os

    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (filename.startswith("<frozen") or "importlib" in filename):
            break
        frame = frame.f_back
    if frame is None:
        return None
    filename = frame.f_code.co_filename
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the opassess package
    installed = ("site-packages" in filename or "dist-packages" in filename or filename.startswith(here)
                 or filename.startswith(sys.base_prefix) or filename.startswith(sys.prefix))
    return None if installed else (filename, frame.f_lineno)


def import_roots(libraries: Any) -> dict[str, str]:
    """Import name -> library name over the table's rows, leaving torch out (never stood in for)."""
    roots: dict[str, str] = {}
    for lib in libraries:
        for module in lib.modules:
            if module.split(".")[0] != "torch":
                roots.setdefault(module, lib.library)
    return roots


__all__ = ["STANDIN_FLAG", "ProjectExtensionModule", "StandInFinder", "StandInModule", "TritonModule",
           "import_roots"]
