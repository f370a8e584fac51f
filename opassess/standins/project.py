"""Stand-ins for the project's own compiled extensions when they are not built here.

A project that builds a CUDA extension (`CUDAExtension("rope_cuda", ["csrc/rope.cpp", "csrc/rope.cu"])` in its
setup.py, as torch.utils.cpp_extension documents) imports the built module (`import rope_cuda`); on a machine where
it was never built (no nvcc, no GPU) that import fails and the model file cannot even be loaded. The import hook
(modules.py) asks here, for a name no installed finder knows and that the project's own code imports, whether a
setup.py in the importing file's folder or one of its parents builds a module of that name. If one does, the module is
a stand-in whose functions are recorded as operators of kind "extension" (the project's compiled code, judged
custom-dev by classify/project.py) and not run.

An import the project guards (`try: import selective_scan_cuda` / `except ImportError:` a pure-PyTorch fallback, as
mamba does) is left to fail: the fallback is what runs where the extension is not built, the NPU included.

What such a function returns is not known without building it: the stand-in returns an uninitialised tensor shaped
like its first tensor argument (a rotary, activation or normalisation kernel's output), and says so; a call with no
tensor argument stops the capture with one line.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .calls import StandInCall, StandInError

BUILD_FILE = "setup.py"
PARENTS = 4  # folders above the importing file's own searched for a setup.py (models/ops/functions -> models/ops)
BUILD_LIMIT = 1024 * 1024  # bytes of a setup.py read: a larger one is not a build script written by hand


@dataclass(frozen=True)
class ProjectExtension:
    """A module the project's setup.py builds: its name, where it is built ('setup.py:6', relative to the setup.py's
    folder's parent) and the sources listed there."""

    name: str
    built_by: str
    sources: tuple[str, ...]

    @property
    def why(self) -> str:
        listed = f" from {', '.join(self.sources)}" if self.sources else ""
        return (f"{self.name} is the project's own extension ({self.built_by} builds it{listed}) and is not built "
                "here: a stand-in records each call as an operator, not run, its output shaped like its first tensor "
                "argument")


@lru_cache(maxsize=64)
def _built_in(setup: str) -> tuple[ProjectExtension, ...]:
    """The extensions one setup.py builds, read from its syntax tree (nothing is run); () when it cannot be read."""
    from ..datafile import read_text
    from ..errors import OpassessError
    from ..source.facts import load_source_facts
    from ..source.python import scan_python

    try:
        text = read_text(setup, "build file", limit=BUILD_LIMIT, errors="replace")
        sites = scan_python(text, BUILD_FILE, load_source_facts())
    except (OpassessError, SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    where = os.path.basename(os.path.dirname(setup))
    return tuple(ProjectExtension(site.get("name") or "", f"{where}/{BUILD_FILE}:{site.line}", site.all("source"))
                 for site in sites if site.kind == "extension" and site.get("name") not in (None, "?"))


@lru_cache(maxsize=64)
def _guarded_lines(file: str) -> frozenset[int]:
    """The lines of `file`'s import statements inside a try whose except catches a failed import."""
    import ast

    from ..datafile import read_text
    from ..errors import OpassessError
    from ..source.walk import catches_import_error

    try:
        tree = ast.parse(read_text(file, "source file", limit=BUILD_LIMIT * 4, errors="replace"))
    except (OpassessError, SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(catches_import_error(h) for h in node.handlers):
            lines.update(n.lineno for stmt in node.body for n in ast.walk(stmt)
                         if isinstance(n, ast.Import | ast.ImportFrom))
    return frozenset(lines)


def project_extension(importer: str, line: int, fullname: str) -> ProjectExtension | None:
    """The extension named `fullname` ('rope_cuda', 'groundingdino._C') that a setup.py in `importer`'s folder or one
    of its PARENTS parents builds, or None (also when the import at `line` is guarded: its fallback runs)."""
    if line in _guarded_lines(importer):
        return None
    folder = os.path.dirname(os.path.abspath(importer))
    for _ in range(PARENTS + 1):
        setup = os.path.join(folder, BUILD_FILE)
        if os.path.isfile(setup):
            for extension in _built_in(setup):
                if extension.name == fullname:
                    return extension
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return None


class ExtensionSymbol(StandInCall):
    """A function of the project's own extension that is not built: `rope_cuda.forward`."""

    kind = "extension"

    def __init__(self, qualified: str, library: str) -> None:
        self.key = qualified
        self.library = library
        self.__name__ = self.__qualname__ = qualified.rsplit(".", 1)[-1]
        self.__module__ = qualified.rpartition(".")[0]

    def __repr__(self) -> str:
        return f"<opassess stand-in {self.key} (the project's extension, not built)>"

    def run(self, args: tuple, kwargs: dict) -> Any:
        import torch

        first = next((a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)), None)
        if first is None:
            raise StandInError(f"{self.key}: the project's extension {self.library} is not built and this call has "
                               "no tensor argument to shape its result on; the capture cannot continue (build the "
                               "extension, or scan a configuration that does not call it)")
        return torch.empty_like(first)


__all__ = ["ExtensionSymbol", "ProjectExtension", "project_extension"]
