"""configured_reach: which of a project's code its default configuration runs, read from the syntax tree (nothing is
imported or run), so a source-only scan prices what the default model uses and lists the rest as present.

The project's config is a class named *Config that is a dataclass (or derives from a *Config class) with defaults,
outside its tests. The roots are the classes and functions that name it; walk.py follows what they name, a branch
or a class table its defaults decide one way only (values.py). No config class, or nothing naming it: None (every
site counts, as before).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from ..records import ConfigReach
from .values import Config, config_fields
from .variants import config_dtype
from .walk import Module, Project, parse_module, walk

TEST_FOLDERS = frozenset({"tests", "test", "testing"})
CONFIG_CLASS = re.compile(r"^\s*class\s+\w+Config\b", re.M)  # a quick look before any file is parsed


def is_test(file: str) -> bool:
    """A test of the project (tests/..., test_x.py, x_test.py, conftest.py): never a root, never a config."""
    path = PurePosixPath(file)
    return bool(TEST_FOLDERS & set(path.parts[:-1])) or path.name.startswith("test_") \
        or path.name.endswith("_test.py") or path.name == "conftest.py"


def _is_config(node: ast.ClassDef) -> bool:
    def named(expr: ast.expr) -> str:
        target = expr.func if isinstance(expr, ast.Call) else expr
        return target.id if isinstance(target, ast.Name) else target.attr if isinstance(target, ast.Attribute) else ""
    return node.name.endswith("Config") and node.name != "Config" and (
        any(named(d) == "dataclass" for d in node.decorator_list) or any(named(b).endswith("Config")
                                                                         for b in node.bases))


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _spans(module: Module, reached: set[tuple[str, str]]) -> tuple[tuple[int, int, bool], ...]:
    """Each top-level function and class of a module: (first line with its decorators, last line, reached)."""
    out = []
    for name, node in module.defs.items():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out.append((first, node.end_lineno or node.lineno, (module.file, name) in reached))
    return tuple(sorted(out))


def configured_reach(sources: Iterable[tuple[str, str]]) -> ConfigReach | None:
    """`sources`: (file relative to the scan root, its text) for every Python file scanned. The reach of the default
    configuration, or None when the project has no config class or nothing names it."""
    texts = list(sources)
    if not any(CONFIG_CLASS.search(text) for file, text in texts if not is_test(file)):
        return None  # most trees: no config class, nothing more to parse
    modules = []
    for file, text in texts:
        try:
            modules.append(parse_module(file, ast.parse(text, filename=file)))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue  # the scan lists it as skipped
    own = [m for m in modules if not is_test(m.file)]
    configs: dict[str, Config] = {}
    for module in own:
        for name, node in module.defs.items():
            if isinstance(node, ast.ClassDef) and _is_config(node) and config_fields(node):
                configs.setdefault(name, Config(module.file, name, config_fields(node)))
    if not configs:
        return None
    roots = sorted((m.file, name) for m in own for name, node in m.defs.items()
                   if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                   and name not in configs and _names(node) & set(configs))
    if not roots:
        return None
    keywords = frozenset(k.arg for m in own for n in ast.walk(m.tree) if isinstance(n, ast.Call)
                         for k in n.keywords if k.arg)
    project = Project(modules)
    try:
        reached, loaded = walk(project, roots, configs, keywords)
    except RecursionError:  # an expression nested past Python's limit: the reach cannot be told, every site counts
        return None
    config = next(iter(configs.values()))
    return ConfigReach(config=f"{config.file}: {config.name}", roots=tuple(f"{f}: {n}" for f, n in roots),
                       loaded=frozenset(loaded), defs={m.file: _spans(m, reached) for m in modules},
                       dtype=config_dtype(config.fields))
