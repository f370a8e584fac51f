"""The package's shape: imports run one way (the layers below), no import cycle between its modules, no module over
450 lines, and the whole package type-checks clean with mypy (pyproject.toml's [tool.mypy]; make test runs mypy
too; the layout test runs it so that a type error is found wherever the package's shape is checked).

Imports under `if TYPE_CHECKING:` count too: they never run, but a type one module names from another is still a
dependency a reader follows, and a circle of them (the findings graph and its registry once were one) is a knot in
the design, not only in the import system.
"""
from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import opassess

ROOT = Path(opassess.__file__).parent
MAX_LINES = 450

# The package's layers, lowest first: a module may import from its own layer and the ones below, never above
# (records < kb/source < trace < classify < findings < score < pipeline < report < ci < isolation < portfolio < cli).
# Each entry is a top-level module or package of opassess; a new one must be placed here.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("opassess", "errors", "vocabulary", "messages", "reasons", "records", "dtypes", "datafile", "resources", "output",
     "options", "startup", "machine"),
    ("kb", "advice", "source"),  # advice: the replacement call a finding or a source site renders
    ("load", "standins", "huggingface"),  # loading a model file installs the stand-ins of GPU-only libraries
    ("trace", "inventory", "graphmode"),
    ("classify", "routes"),
    ("findings",),
    ("perf",),  # the time model reads the findings' graph; the scores read its times
    ("score",),
    ("pipeline", "assessment"),  # the hub record holds the records of every stage below
    ("report",),
    ("handoff",),  # files for other teams, written from the report's document
    ("profiler",),  # the hardware-loop documents reuse the report's text helpers
    ("ci",),
    ("isolation",),
    ("portfolio",),
    ("cli", "__main__"),
)
RANK = {name: index for index, layer in enumerate(LAYERS) for name in layer}


def module_name(path: Path) -> str:
    """opassess/score/estimate.py -> 'opassess.score.estimate'; opassess/score/__init__.py -> 'opassess.score'."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package modules `name` imports anywhere in its file (module level, inside functions and under
    `if TYPE_CHECKING:`), relative imports resolved; `from pkg import sub` counts as an import of pkg.sub when sub is
    a module, else of pkg's __init__."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target)
    return {m for m in found if m in known and m != name}


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imported(name, path, set(found)) for name, path in found.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (as a path that returns to its start) per strongly connected component with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:  # Tarjan; the package is small enough for recursion
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A shortest path from the component's first module back to itself, staying inside the component."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle through {start}")  # a strongly connected component always has one


def test_graph_sees_relative_function_level_and_package_imports():
    graph = import_graph()
    assert "opassess.records" in graph["opassess.inventory"]  # from .records import ... (module level)
    assert "opassess.score.estimate" in graph["opassess.portfolio.plan"]  # from ..score.estimate import (in a function)
    assert "opassess.vocabulary" in graph["opassess.records"]
    assert "opassess.findings.registry" in graph["opassess.findings.graph"]
    assert "opassess.findings.graph" in graph["opassess.findings.families"]  # only under TYPE_CHECKING: counted
    assert "opassess.findings.graph" not in graph["opassess.findings.registry"]
    assert {"opassess.findings.attention", "opassess.findings.graph"} <= graph["opassess.findings"]  # __init__


def test_cycles_are_found_and_printed():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_inside_the_package():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_no_module_over_the_line_limit():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def layer_of(module: str) -> str:
    """'opassess.score.estimate' -> 'score'; 'opassess.records' -> 'records'; 'opassess' -> 'opassess'."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import of a module from a higher layer, as 'importer -> imported (layer a < layer b)'."""
    found = []
    for name in sorted(graph):
        for target in sorted(graph[name]):
            low, high = layer_of(name), layer_of(target)
            if RANK[high] > RANK[low]:
                found.append(f"{name} -> {target} ({low} is below {high})")
    return found


# A module near the cap is split into a package of small modules (score/weights/{__init__,load,decisions}.py,
# report/display/{__init__,page,records}.py), never into `foo.py` + `foo_more.py` siblings (issue 44, move 7).
SUFFIX_SIBLINGS_PENDING: set[str] = set()  # none left: keep it empty


def suffix_siblings(root: Path) -> dict[str, list[str]]:
    """'folder/name' -> the modules beside it named name_<suffix> (display.py beside display_page.py)."""
    found = {}
    for folder in sorted({p.parent for p in root.rglob("*.py")}):
        names = {p.stem for p in folder.glob("*.py")} - {"__init__", "__main__"}
        for name in sorted(names):
            siblings = sorted(other for other in names if other.startswith(f"{name}_"))
            if siblings:
                found[f"{folder.relative_to(root.parent).as_posix()}/{name}"] = siblings
    return found


def test_no_module_beside_another_of_its_name_plus_a_suffix():
    found = suffix_siblings(ROOT)
    new = {name: siblings for name, siblings in found.items() if name not in SUFFIX_SIBLINGS_PENDING}
    assert not new, f"make a sub-package instead of suffix siblings: {new}"
    done = SUFFIX_SIBLINGS_PENDING - set(found)
    assert not done, f"remove from SUFFIX_SIBLINGS_PENDING (now a package): {sorted(done)}"


def test_suffix_siblings_are_found(tmp_path):
    package = tmp_path / "opassess" / "report"
    package.mkdir(parents=True)
    for name in ("display.py", "display_page.py", "time_doc.py", "time_view.py", "__init__.py"):
        (package / name).write_text("", encoding="utf-8")
    assert suffix_siblings(tmp_path / "opassess") == {"opassess/report/display": ["display_page"]}


def test_every_top_level_module_has_a_layer():
    unplaced = sorted({layer_of(name) for name in modules()} - set(RANK))
    assert not unplaced, f"place these in tests/test_layout.py LAYERS: {unplaced}"


def test_imports_run_one_way():
    found = upward_imports(import_graph())
    assert not found, "imports against the layers:\n" + "\n".join(found)


def test_an_upward_import_is_found():
    graph = {"opassess.records": {"opassess.cli.scan"}, "opassess.cli.scan": {"opassess.records"}}
    assert upward_imports(graph) == ["opassess.records -> opassess.cli.scan (records is below cli)"]


def test_no_private_name_is_imported_from_another_package():
    """A leading underscore means 'this package's own': another package that needs it gets a public name."""
    found = []
    for name, path in modules().items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            target = f"{base}.{node.module}" if node.module else base
            if layer_of(target) != layer_of(name):
                found += [f"{name}: from {target} import {alias.name}" for alias in node.names
                          if alias.name.startswith("_") and alias.name != "__version__"]
    assert not found, "\n".join(found)


def test_mypy_checks_the_whole_package():
    config = tomllib.loads((ROOT.parent / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config["files"] == ["opassess"] and "exclude" not in config, "[tool.mypy] must check all of opassess"
    loosened = [o for o in config.get("overrides", ()) for m in o["module"] if m.split(".")[0] == "opassess"]
    assert not loosened, f"per-module mypy overrides on the package: {loosened}"


@pytest.mark.slow  # `make test` runs mypy itself; this is for the lanes and runs that do not
def test_mypy_is_clean_on_the_checked_files():
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT.parent, capture_output=True,
                            text=True, timeout=600)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert result.returncode == 0 and not errors, "mypy (pyproject.toml [tool.mypy]; fix the type, or say why with " \
        "'# type: ignore[code]'):\n" + ("\n".join(errors) or result.stdout + result.stderr)


def test_the_type_gate_fails_on_a_type_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def half(n: int) -> int:\n    return n / 2\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--config-file",
                             str(ROOT.parent / "pyproject.toml"), str(bad)], cwd=ROOT.parent, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 1 and "Incompatible return value type" in result.stdout


# Fields that hold JSON-able values by design (an operator's attributes, a message's values, a reason's params):
# the only Any a record the Assessment holds may name.
JSON_VALUES = {"OpNode.attrs", "Signature.attrs", "Reason.params", "Message.values"}


def _hints(cls: type) -> dict[str, object]:
    """A record's field types, the names its module imports for type checking only resolved too."""
    import importlib
    import typing

    module = sys.modules[cls.__module__]
    names = dict(vars(module))
    package = module.__name__ if module.__file__.endswith("__init__.py") else module.__name__.rpartition(".")[0]
    for node in ast.walk(ast.parse(Path(module.__file__).read_text(encoding="utf-8"))):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for item in node.body:
                if isinstance(item, ast.ImportFrom):
                    base = package.rsplit(".", item.level - 1)[0] if item.level > 1 else package
                    held = importlib.import_module(f"{base}.{item.module}" if item.level else item.module or "")
                    names.update({alias.asname or alias.name: getattr(held, alias.name) for alias in item.names})
    return typing.get_type_hints(cls, globalns=names)


def untyped_fields(root: type) -> list[str]:
    """'Record.field' for each field typed Any in `root` or any record its fields hold (followed through
    tuples, unions and mappings)."""
    import dataclasses
    import typing

    seen: set[type] = set()
    found: list[str] = []

    def visit(cls: type) -> None:
        if cls in seen:
            return
        seen.add(cls)
        hints = _hints(cls)
        for field in dataclasses.fields(cls):
            stack = [hints[field.name]]
            while stack:
                kind = stack.pop()
                if kind is typing.Any:
                    found.append(f"{cls.__qualname__}.{field.name}")
                elif isinstance(kind, type) and dataclasses.is_dataclass(kind):
                    visit(kind)
                else:
                    stack.extend(typing.get_args(kind))

    visit(root)
    return sorted(set(found))


def test_the_hub_record_and_every_record_it_holds_name_their_types():
    """The Assessment sits at the pipeline's layer so that it, and each record below it, can name real types: no
    field is typed Any, except the JSON-able values of attributes, params and messages."""
    from opassess.assessment import Assessment

    assert untyped_fields(Assessment) == sorted(JSON_VALUES)


def test_an_any_field_in_a_held_record_is_found():
    import dataclasses
    import typing

    inner = dataclasses.make_dataclass("Inner", [("finding", typing.Any)], frozen=True)
    outer = dataclasses.make_dataclass("Outer", [("sites", tuple[inner, ...]), ("n", int)], frozen=True)
    assert untyped_fields(outer) == ["Inner.finding"]


def test_every_registered_reason_code_has_a_fixture_model():
    import importlib.util

    path = ROOT.parent / "tests" / "classify" / "test_reason_fixtures.py"
    spec = importlib.util.spec_from_file_location("reason_fixtures_for_layout", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.test_every_registered_reason_code_has_a_fixture_model()
