"""project_files: the model file and the project files it imports, found from the syntax tree (nothing is run).

An import resolves to a file under the project directory (the model file's folder) or to nothing: installed
packages (site-packages), the standard library and anything outside the folder are left alone. Imports are followed
from file to file, so a helper module's own project imports count too.
"""
from __future__ import annotations

import ast
from pathlib import Path

from ..datafile import read_bytes
from ..errors import OpassessError
from .scan import PYTHON_LIMIT, SKIP_DIRS

MAX_FILES = 500  # a model file's import closure larger than this is a whole code base: --source DIR says so


def _candidates(base: Path, dotted: str) -> list[Path]:
    """'a.b' under base: a/b.py, a/b/__init__.py."""
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        return [base / "__init__.py"]
    stem = base.joinpath(*parts)
    return [stem.with_suffix(".py"), stem / "__init__.py"]


def _imported(tree: ast.AST, file: Path, project: Path) -> list[Path]:
    """Files under `project` that the imports of one parsed file name (absolute from the project, or relative)."""
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                for depth in range(1, len(parts) + 1):  # import a.b.c also runs a/__init__.py and a/b/__init__.py
                    found += _candidates(project, ".".join(parts[:depth]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = file.parent
                for _ in range(node.level - 1):
                    base = base.parent
            else:
                base = project
            module = node.module or ""
            found += _candidates(base, module)
            for alias in node.names:  # from pkg import mod: mod may be a module of its own
                found += _candidates(base, f"{module}.{alias.name}" if module else alias.name)
    return found


def _inside(path: Path, project: Path) -> bool:
    try:
        relative = path.relative_to(project)
    except ValueError:
        return False
    return not any(part in SKIP_DIRS or part.startswith(".") for part in relative.parts[:-1])


def project_files(model_file: str | Path) -> list[Path]:
    """The model file, then every file under its folder that it imports, directly or through another such file.

    A file that cannot be read or parsed is still returned (the source scan reports it as skipped) but not followed.
    """
    start = Path(model_file).resolve()
    project = start.parent
    order = [start]
    seen = {start}
    queue = [start]
    while queue and len(order) < MAX_FILES:
        file = queue.pop(0)
        try:
            tree = ast.parse(read_bytes(file, "source file", limit=PYTHON_LIMIT), filename=str(file))
        except (OpassessError, SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for path in _imported(tree, file, project):
            path = path.resolve() if path.is_file() else path
            if path in seen or not path.is_file() or not _inside(path, project):
                continue
            seen.add(path)
            order.append(path)
            queue.append(path)
    return order
