"""The symbol walk: from the classes and functions that take the project's config, every class and function their
code names, through the project's imports; a branch or a table its defaults decide is followed one way only.

Example (state-spaces/mamba): MambaLMHeadModel takes a MambaConfig -> MixerModel -> create_block, where
`ssm_layer = ssm_cfg.pop("layer", "Mamba1")` picks `{"Mamba1": Mamba, "Mamba2": Mamba2, ...}[ssm_layer]`: Mamba is
reached, Mamba2 (and the Triton SSD kernels only it calls) is not.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .values import UNKNOWN, Config, Scope, evaluate, function_scope, init_attrs

Symbol = tuple[str, str]  # (file, top-level name)
MAX_HOPS = 8  # re-exports followed from module to module


@dataclass
class Module:
    """One parsed file of the project: its top-level definitions and what its imports bind."""

    file: str
    name: str  # dotted: "mamba_ssm.models.mixer_seq_simple"
    tree: ast.Module
    defs: dict[str, ast.AST] = field(default_factory=dict)  # top-level def/class/assignment by name
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # local name -> (module, attribute)


def module_name(file: str) -> str:
    parts = file.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def bindings(node: ast.AST, package: str) -> Iterator[tuple[str, tuple[str, str | None]]]:
    """The names an import statement binds: `import a.b as c` -> (c, (a.b, None)); `from .x import y` -> (y, (pkg.x,
    y)), resolved against `package`."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield (alias.asname or alias.name.split(".")[0]), (alias.name if alias.asname else alias.name.split(".")[0],
                                                               None)
    elif isinstance(node, ast.ImportFrom):
        base = package.split(".") if node.level else []
        if node.level:
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
        module = ".".join([*base, *([node.module] if node.module else [])])
        for alias in node.names:
            yield (alias.asname or alias.name), (module, alias.name)


def parse_module(file: str, tree: ast.Module) -> Module:
    name = module_name(file)
    package = name if file.endswith("__init__.py") else name.rpartition(".")[0]
    module = Module(file=file, name=name, tree=tree)
    for node in tree.body:
        for inner in _top_statements(node):
            if isinstance(inner, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                module.defs[inner.name] = inner
            elif isinstance(inner, ast.Assign):
                for target in inner.targets:
                    if isinstance(target, ast.Name):
                        module.defs.setdefault(target.id, inner)
            elif isinstance(inner, ast.Import | ast.ImportFrom):
                module.imports.update(bindings(inner, package))
    return module


def _top_statements(node: ast.stmt) -> Iterator[ast.stmt]:
    """A module-level statement, or those inside its try/if blocks (`try: from x import y except ImportError: y =
    None`)."""
    if isinstance(node, ast.Try | ast.If):
        for part in (node.body, node.orelse, getattr(node, "finalbody", []),
                     *(h.body for h in getattr(node, "handlers", []))):
            for inner in part:
                yield from _top_statements(inner)
    else:
        yield node


class Project:
    """Every module of the project by dotted name (and by each shorter dotted suffix, for a package under src/)."""

    def __init__(self, modules: list[Module]) -> None:
        self.by_name: dict[str, Module] = {}
        for module in sorted(modules, key=lambda m: m.name.count(".")):
            parts = module.name.split(".")
            for start in range(len(parts)):
                self.by_name.setdefault(".".join(parts[start:]), module)

    def resolve(self, module: str, attribute: str | None, hops: int = 0) -> tuple[Module | None, Symbol | None]:
        """What `from module import attribute` names in the project: (the module loaded, the symbol or None)."""
        if attribute is not None and f"{module}.{attribute}" in self.by_name:
            return self.by_name[f"{module}.{attribute}"], None
        found = self.by_name.get(module)
        if found is None or attribute is None:
            return found, None
        if attribute in found.defs:
            return found, (found.file, attribute)
        if attribute in found.imports and hops < MAX_HOPS:
            target, symbol = self.resolve(*found.imports[attribute], hops + 1)
            return (target or found), symbol
        return found, None

    def packages(self, module: Module) -> Iterator[Module]:
        """The packages whose __init__ runs before `module` does."""
        parts = module.name.split(".")
        for depth in range(1, len(parts)):
            package = self.by_name.get(".".join(parts[:depth]))
            if package is not None and package.file.endswith("__init__.py"):
                yield package


class Body(ast.NodeVisitor):
    """The symbols and modules one reached definition names, its defaults' dead branches left out."""

    def __init__(self, project: Project, module: Module, scope: Scope, keywords: frozenset[str],
                 configs: Mapping[str, Config]) -> None:
        self.project, self.module, self.scope = project, module, scope
        self.keywords, self.configs = keywords, configs
        self.symbols: set[Symbol] = set()
        self.loaded: set[str] = set()
        self.tables: dict[str, ast.Dict] = {}  # local name -> a dict literal of string keys (a class table)
        self.local: dict[str, tuple[str, str | None]] = {}

    def _name(self, name: str) -> None:
        if name in self.tables:
            self.visit(self.tables.pop(name))  # used whole: every entry
            return
        if name in self.module.defs:
            self.symbols.add((self.module.file, name))
            if not isinstance(self.module.defs[name], ast.Assign):
                return
        if name in self.local or name in self.module.imports:  # `try: from x import f except: f = None`: both
            target, symbol = self.project.resolve(*(self.local.get(name) or self.module.imports[name]))
            if target is not None:
                self.loaded.add(target.file)
            if symbol is not None:
                self.symbols.add(symbol)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self._name(node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain: list[str] = []
        inner: ast.AST = node
        while isinstance(inner, ast.Attribute):
            chain.insert(0, inner.attr)
            inner = inner.value
        if isinstance(inner, ast.Name) and (inner.id in self.module.imports or inner.id in self.local) \
                and inner.id not in self.module.defs:
            module, attribute = self.local.get(inner.id) or self.module.imports[inner.id]
            dotted = module if attribute is None else f"{module}.{attribute}"
            for step in chain:  # pkg.sub.func: the deepest module of the project, then the name in it
                target, symbol = self.project.resolve(dotted, step)
                if target is None:
                    break
                self.loaded.add(target.file)
                if symbol is not None:
                    self.symbols.add(symbol)
                    break
                dotted = f"{dotted}.{step}"
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self._bind(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._bind(node)

    def _bind(self, node: ast.Import | ast.ImportFrom) -> None:
        package = self.module.name if self.module.file.endswith("__init__.py") else self.module.name.rpartition(".")[0]
        for local, (module, attribute) in bindings(node, package):
            self.local[local] = (module, attribute)
            target, _ = self.project.resolve(module, attribute)
            if target is not None:
                self.loaded.add(target.file)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(value, ast.Dict) \
                and value.keys and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in value.keys):
            self.tables[node.targets[0].id] = value  # visited when used: one entry by a known key, else all
            return
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        table = node.value.id if isinstance(node.value, ast.Name) else None
        if table in self.tables:
            key = evaluate(node.slice, self.scope)
            entries = dict(zip((k.value for k in self.tables[table].keys if isinstance(k, ast.Constant)),
                               self.tables[table].values, strict=True))
            if key is not UNKNOWN and key in entries:
                self.visit(entries[key])
                self.visit(node.slice)
                return
        self.generic_visit(node)

    def visit_If(self, node: ast.If) -> None:
        self._branch(node.test, node.body, node.orelse)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._branch(node.test, [node.body], [node.orelse])

    def _branch(self, test: ast.expr, body: list, orelse: list) -> None:
        value = evaluate(test, self.scope)
        if value is UNKNOWN:
            self.visit(test)
        for part in ([body, orelse] if value is UNKNOWN else [body] if value else [orelse]):
            for statement in part:
                self.visit(statement)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self.scope  # a method or a nested function: its own defaults
        self.scope = function_scope(node, self.keywords, outer.attrs, self.configs, outer.lookups)
        self.scope.configs = {**outer.configs, **self.scope.configs}
        self.generic_visit(node)
        self.scope = outer

    visit_AsyncFunctionDef = visit_FunctionDef


def walk(project: Project, roots: list[Symbol], configs: Mapping[str, Config], keywords: frozenset[str]
         ) -> tuple[set[Symbol], set[str]]:
    """The symbols reached from `roots` and the files whose module-level code runs. `keywords`: every keyword a
    call in the project passes (a parameter of that name may not have its default)."""
    lookups = tuple(configs.values())
    files = {m.file: m for m in project.by_name.values()}
    reached: set[Symbol] = set()
    loaded: set[str] = set()
    queue = list(roots)
    while queue:
        symbol = queue.pop()
        if symbol in reached:
            continue
        reached.add(symbol)
        module = files[symbol[0]]
        node = module.defs[symbol[1]]
        attrs: dict[str, Any] = init_attrs(node, keywords, configs, lookups) if isinstance(node, ast.ClassDef) else {}
        body = Body(project, module, Scope(attrs=attrs, lookups=lookups), keywords, configs)
        body.visit(node.value if isinstance(node, ast.Assign) else node)  # a module-level table: all of it
        loaded |= {module.file, *body.loaded}
        queue += [s for s in body.symbols if s not in reached]
    return reached, _module_level(project, loaded)


def _module_level(project: Project, loaded: set[str]) -> set[str]:
    """`loaded` with the packages above each file and, transitively, what their module-level imports load."""
    files = {m.file: m for m in project.by_name.values()}
    out: set[str] = set()
    queue = list(loaded)
    while queue:
        file = queue.pop()
        if file in out or file not in files:
            continue
        out.add(file)
        module = files[file]
        queue += [p.file for p in project.packages(module)]
        for local in module.imports.values():
            target, _ = project.resolve(*local)
            if target is not None:
                queue.append(target.file)
    return out
