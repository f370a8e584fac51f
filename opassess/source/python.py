"""Static scan of one Python file with `ast` (never imported, never regex-matched): the GPU-specific sites in it.

Import aliases are resolved file-wide (`import flash_attn as fa`, `from torch.cuda.amp import GradScaler`,
imports inside functions too); a name that is rebound later is still read as the import. The file's tree is walked
once (walk.py); the sites are read from what that walk kept, once the aliases are known. Sites are raw `Site`
records; classify.py decides what each one means on the NPU.
"""
from __future__ import annotations

import ast
import dataclasses
import sys
from collections.abc import Callable
from functools import cached_property

from ..advice import FLASH_CALLS
from .distributed import scan_distributed
from .facts import SourceFacts
from .graph_sites import scan_graph
from .kernels import TL, Constants, kernel_sites, keyword_values
from .records import Site
from .walk import CHAIN, DECORATOR, FileNodes, walk_file

DEVICE_KWARGS = ("device", "device_type", "map_location", "device_id", "device_ids")
CUDA_EXTENSION = "torch.utils.cpp_extension.CUDAExtension"
EXTENSION_BUILDERS = ("torch.utils.cpp_extension.load", CUDA_EXTENSION)
CPP_EXTENSION = "torch.utils.cpp_extension.CppExtension"
COMPUTED = "computed"  # Site.detail ("sources", COMPUTED): an extension whose sources are computed when setup.py runs
TRITON_DECORATORS = ("triton.jit", "triton.autotune", "triton.heuristics")


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_cuda(text: str | None) -> bool:
    return text is not None and (text == "cuda" or text.startswith("cuda:"))


class PythonScanner:
    """Collects the sites of one walked file; use scan_python()."""

    def __init__(self, nodes: FileNodes, lines: list[str], file: str, facts: SourceFacts):
        self.nodes, self.lines, self.file, self.facts = nodes, lines, file, facts
        self.aliases: dict[str, str] = {}
        self._quals: dict[ast.AST, str | None] = {}  # qual's answers (the aliases are complete before it is asked)
        # outer imports first, then inner ones (the breadth-first order the aliases were always read in: of two
        # imports binding one name, the innermost, else the last, wins)
        for node, _, _, _ in sorted(nodes.imports, key=lambda item: (item[2] >> 2, item[3])):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
            elif node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.guarded = {id(node) for node, guarded, _, _ in nodes.imports if guarded}  # in try/except ImportError
        triton = any(q == "triton" or q.startswith("triton.") for q in self.aliases.values())
        # an autotune list ([triton.Config(...), ...] or a comprehension of them) is one site: config call -> list
        self.config_lists: dict[int, ast.AST] = {}
        for sequence in nodes.sequences if triton else ():
            configs = [e for e in sequence.elts if isinstance(e, ast.Call) and self.qual(e.func) == "triton.Config"] \
                if isinstance(sequence, ast.List | ast.Tuple) else [sequence.elt] if isinstance(
                    sequence.elt, ast.Call) and self.qual(sequence.elt.func) == "triton.Config" else []
            self.config_lists.update((id(call), sequence) for call in configs)
        self.lists_seen: set[int] = set()
        functions = sorted(nodes.functions, key=lambda item: (item[1] >> 2, item[2])) if triton else ()
        self.kernels = {n.name: n for n, _, _ in functions
                        if any(self._decorator_name(d) == "triton.jit" for d in n.decorator_list)}
        self.launches: dict[str, list[tuple[int, int | None]]] = {}
        self.sites: list[Site] = []
        # (module, line) of every import (a relative one resolved from the file's path) and (qualified, line) of every
        # call through an imported name outside torch and the standard library: what package.link_own links a built
        # extension to
        self.imports: list[tuple[str, int]] = []
        self.builders, self.builder_values = self._builder_names()

    def _builder_names(self) -> tuple[dict[str, str], set[int]]:
        """Local names bound to an extension builder (`extension = CUDAExtension`, often after `extension =
        CppExtension` under an `if` that finds CUDA): name -> the builder, CUDAExtension when any binding is; and the
        ids of the bound values (the builder's own name there is part of the extension's site, not a site)."""
        bound: dict[str, set[str]] = {}
        values: dict[str, list[int]] = {}
        for node, _, _, _ in self.nodes.assigns:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                q = self.qual(node.value)
                if q in (*EXTENSION_BUILDERS, CPP_EXTENSION):
                    bound.setdefault(node.targets[0].id, set()).add(q)
                    values.setdefault(node.targets[0].id, []).append(id(node.value))
        builders = {name: CUDA_EXTENSION if CUDA_EXTENSION in qs else min(qs) for name, qs in bound.items()
                    if qs & set(EXTENSION_BUILDERS)}
        return builders, {v for name in builders for v in values[name]}

    @cached_property
    def constants(self) -> Constants:
        """The file's once-assigned integer names (read only when a kernel is launched)."""
        return Constants((node for node, _, _, _ in self.nodes.assigns), self.qual)

    def scan(self) -> list[Site]:
        """The sites of the file's nodes, in the order the walk met them."""
        # dispatch on the node's exact class; each handler takes that class
        handlers: dict[type[ast.AST], Callable[..., None]] = {
            ast.Import: self._on_import, ast.ImportFrom: self._on_import, ast.Call: self._on_call,
            ast.Attribute: self._on_attribute, ast.Name: self._on_name, ast.Assign: self._on_assign,
            ast.AugAssign: self._on_assign, ast.Compare: self._on_compare}
        for node, role in self.nodes.events:
            handlers[type(node)](node, role)
        return self.sites

    # ------------------------------------------------------------------ helpers

    def qual(self, node: ast.AST) -> str | None:
        """The dotted import path an expression names (`fa.flash_attn_func` -> flash_attn.flash_attn_func)."""
        known = self._quals  # each node resolved once: the site and distributed scans read the same calls
        if node in known:
            return known[node]
        start, attrs = node, []
        while isinstance(node, ast.Attribute):
            attrs.append(node.attr)
            node = node.value
        base = self.aliases.get(node.id) if isinstance(node, ast.Name) else None
        known[start] = q = base if base is None or not attrs else ".".join([base, *reversed(attrs)])
        return q

    def _decorator_name(self, node: ast.expr) -> str | None:
        return self.qual(node.func if isinstance(node, ast.Call) else node)

    def code(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def add(self, node: ast.AST, kind: str, subject: str, detail=(), size=None) -> None:
        line = getattr(node, "lineno", 1)
        self.sites.append(Site(self.file, line, self.code(line), kind, subject, tuple(detail), size))

    # ------------------------------------------------------------------ imports

    def _on_import(self, node: ast.Import | ast.ImportFrom, role: int) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self._import(node, alias.name)
        elif node.module and not node.level:
            self._import(node, node.module, [a.name for a in node.names])
        elif node.level:  # `from . import _C`: the module it names, read from the file's place in the tree
            parts = self.file.split("/")[:-1]
            if node.level - 1 <= len(parts):
                base = [*parts[:len(parts) - node.level + 1], *(node.module.split(".") if node.module else ())]
                self.imports += [(".".join([*base, a.name]), node.lineno) for a in node.names if a.name != "*"]

    def _import(self, node: ast.AST, module: str, names: list[str] | tuple[str, ...] = ()) -> None:
        line = getattr(node, "lineno", 1)
        self.imports.append((module, line))
        self.imports += [(f"{module}.{name}", line) for name in names if name != "*"]
        if self.facts.library_for_module(module) or self.facts.migration_for_import(module.split(".")[0]):
            guarded = ("guarded", "yes" if id(node) in self.guarded else "no")
            self.add(node, "import", module, [guarded, *(("name", n) for n in names)])

    # ------------------------------------------------------------------ uses

    def _on_call(self, node: ast.Call, role: int) -> None:
        q = self.qual(node.func)
        if role == DECORATOR and q in TRITON_DECORATORS:
            return  # @triton.autotune(...): the kernel's own site; its arguments are read as any expression
        kwargs = keyword_values(node) if node.keywords else {}
        if isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in self.kernels:
            programs = self.constants.programs(node.func.slice)
            self.launches.setdefault(node.func.value.id, []).append((node.lineno, programs))
        if q:
            self._call(node, q, kwargs)
        elif isinstance(node.func, ast.Name) and node.func.id in self.builders:
            self._call(node, self.builders[node.func.id], kwargs)
        elif isinstance(node.func, ast.Attribute):
            self._method(node, node.func.attr, kwargs)
        elif isinstance(node.func, ast.Name) and any(_is_cuda(v) for k, v in kwargs.items() if k in DEVICE_KWARGS):
            self.add(node, "device", f"?.{node.func.id}", [("literal", "cuda")])

    def _call(self, node: ast.Call, q: str, kwargs: dict[str, str]) -> None:
        positional = [_literal(a) for a in node.args]
        detail = [("kwarg", f"{k}={v}") for k, v in kwargs.items()]
        if q in EXTENSION_BUILDERS:
            name = kwargs.get("name") or (positional[0] if positional else None) or "?"
            sources = self._sources(node)
            detail = [("name", name), *(("source", s) for s in sources)] if sources is not None else \
                [("name", name), ("sources", COMPUTED)]
            self.add(node, "extension", q, detail)
            return
        top = q.split(".")[0]
        if top not in sys.stdlib_module_names and top != "torch":
            self.imports.append((q, node.lineno))  # a call of a module the tree may build (package.link_own)
        elif q == "importlib.import_module" and len(positional) == 1 and positional[0]:
            self.imports.append((positional[0], node.lineno))  # apex: importlib.import_module("amp_C")
        if q == "triton.Config" and id(node) in self.config_lists:
            owner = self.config_lists[id(node)]
            if id(owner) not in self.lists_seen:
                self.lists_seen.add(id(owner))
                calls = [c for c in ast.walk(owner) if isinstance(c, ast.Call) and id(c) in self.config_lists]
                names = dict.fromkeys(k for c in calls for k in keyword_values(c))
                self.add(owner, "triton-config", q, [("configs", str(len(calls))),
                                                     *(("kwarg", f"{k}=?") for k in names)])
            return
        if q == "triton.Config" or q == "triton.autotune":
            self.add(node, "triton-config", q, detail)
            return
        if q in self.kernels or q.startswith(TL):
            return
        device = [v for k, v in kwargs.items() if k in DEVICE_KWARGS and _is_cuda(v)]
        if top not in sys.stdlib_module_names:  # os.path.join(src, "cuda", "*.cu") names a folder, not a device
            device += [p for p in positional if p is not None and _is_cuda(p)]
        backend = kwargs.get("backend") or (positional[0] if positional else None)
        if backend is not None and "nccl" in backend.split(":"):
            self.add(node, "backend", q, [("literal", backend), *detail])
        elif device:
            self.add(node, "device", q, [("literal", device[0]), *detail])
        elif self.facts.is_relevant(q):
            if q in FLASH_CALLS:  # its replacement call is rendered from its own arguments (opassess/advice)
                detail += [("argument", ast.unparse(a)) for a in node.args]
                detail += [("keyword", f"{k.arg}={ast.unparse(k.value)}") for k in node.keywords if k.arg]
            self.add(node, "api", q, [("use", "call"), *detail])

    def _method(self, node: ast.Call, attr: str, kwargs: dict[str, str]) -> None:
        """Calls on a receiver the scan cannot type: `.cuda()`, `.to("cuda")`, `f(device="cuda")`."""
        positional = [_literal(a) for a in node.args]
        if attr == "cuda":
            self.add(node, "device", "tensor.cuda", [("literal", "cuda")])
        elif attr == "to" and (any(_is_cuda(p) for p in positional) or _is_cuda(kwargs.get("device"))):
            self.add(node, "device", "torch.Tensor.to", [("literal", "cuda")])
        elif any(_is_cuda(v) for k, v in kwargs.items() if k in DEVICE_KWARGS):
            self.add(node, "device", f"?.{attr}", [("literal", "cuda")])

    def _sources(self, node: ast.Call) -> list[str] | None:
        """The sources an extension lists, as paths or glob patterns relative to the file's folder ('csrc/*.cu';
        `os.path.join(root, "csrc", "rope.cu")` -> '*/csrc/rope.cu'); None when they are computed (a name, a
        glob.glob call, a comprehension): package.extension_sources then takes the native files under the folder."""
        value = next((k.value for k in node.keywords if k.arg == "sources"), None)
        if value is None and len(node.args) > 1:
            value = node.args[1]
        if not isinstance(value, ast.List | ast.Tuple):
            return None
        sources = []
        for element in value.elts:
            literal = _literal(element)
            if literal is None and isinstance(element, ast.Call) and self.qual(element.func) == "os.path.join":
                tail: list[str] = []
                for arg in reversed(element.args):
                    part = _literal(arg)
                    if part is None:
                        break
                    tail.insert(0, part)
                literal = "*/" + "/".join(tail) if tail and len(tail) < len(element.args) else \
                    "/".join(tail) if tail else None
            if literal is None:
                return None
            sources.append(literal)
        return sources

    def _on_attribute(self, node: ast.Attribute, role: int) -> None:
        q = self.qual(node)
        if role >= CHAIN:  # its parent speaks for it when it resolves; `x.is_cuda` only when it does not
            if q is None and node.attr == "is_cuda":
                self.add(node, "device", "tensor.is_cuda", [("literal", "cuda")])
        elif role == DECORATOR and q in TRITON_DECORATORS:
            return
        elif q and self.facts.is_relevant(q):
            self.add(node, "api", q, [("use", "attribute")])
        elif q is None and node.attr == "is_cuda":
            self.add(node, "device", "tensor.is_cuda", [("literal", "cuda")])

    def _on_name(self, node: ast.Name, role: int) -> None:
        q = self.aliases.get(node.id)
        if id(node) in self.builder_values:
            return
        if q and q != node.id and (role != DECORATOR or q not in TRITON_DECORATORS) and self.facts.is_relevant(q):
            self.add(node, "api", q, [("use", "name")])

    def _on_assign(self, node: ast.Assign | ast.AugAssign, role: int) -> None:
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            q = self.qual(target) if isinstance(target, ast.Attribute) else None
            if q and self.facts.is_relevant(q):
                shown = ast.unparse(node.value) if len(ast.unparse(node.value)) < 40 else "..."
                self.add(node, "assign", q, [("value", shown)])

    def _on_compare(self, node: ast.Compare, role: int) -> None:
        sides = [node.left, *node.comparators]
        literals = []
        for side in sides:
            items = side.elts if isinstance(side, ast.List | ast.Tuple | ast.Set) else [side]
            literals += [s for s in (_literal(i) for i in items) if s in ("nccl", "NCCL", "cuda")]
        if not literals:
            return
        others = [ast.unparse(s) for s in sides if _literal(s) is None and not isinstance(s, ast.List | ast.Tuple)]
        for literal in dict.fromkeys(literals):
            self.add(node, "compare", literal, [("against", " ".join(others)[:60])])


def join_imports(sites: list[Site]) -> list[Site]:
    """An unguarded import whose names this file calls through a rendered replacement (a flash-attn call) is one item
    with its first call: the call's finding says the whole edit (the import goes with it), and names the import's
    line. A guarded import stays its own item (the except branch is what runs on the NPU)."""
    calls = [i for i, s in enumerate(sites) if s.kind == "api" and s.subject in FLASH_CALLS and s.get("use") == "call"]
    if not calls:
        return sites
    joined: dict[int, list[str]] = {}
    dropped = set()
    for i, site in enumerate(sites):
        if site.kind != "import" or site.get("guarded") != "no":
            continue
        names = site.all("name")
        wanted = {f"{site.subject}.{n}" for n in names} if names else None
        mine = [c for c in calls if (sites[c].subject in wanted if wanted is not None
                                     else sites[c].subject.startswith(site.subject + "."))]
        if mine and (wanted is None or wanted <= {sites[c].subject for c in mine}):
            dropped.add(i)
            joined.setdefault(mine[0], []).append(str(site.line))
    return [dataclasses.replace(s, detail=(*s.detail, *(("imported", line) for line in joined[i])))
            if i in joined else s for i, s in enumerate(sites) if i not in dropped]


def one_site_per_call(sites: list[Site]) -> list[Site]:
    """A reference to an API that is not a call (`if flash_attn_func is not None:`, `... if apex.optimizers.FusedAdam
    else None`) where the file also calls that API is part of that call's edit, not a site of its own: the guard
    goes with the call. A reference the file never calls (a callback handed on, a dtype) stays a site."""
    called = {s.subject for s in sites if s.kind == "api" and s.get("use") == "call"}
    return [s for s in sites if not (s.kind == "api" and s.get("use") in ("name", "attribute") and s.subject in called)]


def mark_bf16_scalers(sites: list[Site], text: str) -> list[Site]:
    """A GradScaler in a file that autocasts to bfloat16: noted on the site (classify says it is not needed: bf16 has
    float32's exponent range, so nothing underflows the way float16 gradients do)."""
    if "bfloat16" not in text or "autocast" not in text:
        return sites
    return [dataclasses.replace(s, detail=(*s.detail, ("autocast", "bfloat16")))
            if s.kind == "api" and s.subject.endswith("GradScaler") else s for s in sites]


def scan_python(text: str, file: str, facts: SourceFacts, known_distributed=None,
                imports: list[tuple[str, str, int]] | None = None) -> list[Site]:
    """The sites of one Python source; raises SyntaxError (with its line) when the text does not parse.

    `known_distributed(api)`: whether the HCCL facts name a torch.distributed API; given, the distributed sites
    (distributed.py) are collected too. `imports`, when given, receives (file, module, line) of every absolute
    import (an extension module the tree builds is linked to them)."""
    tree = ast.parse(text, filename=file)
    wanted = known_distributed is not None and ("distributed" in text or "NCCL_" in text)  # most files: no pass
    nodes = walk_file(tree, references=wanted)
    scanner = PythonScanner(nodes, text.splitlines(), file, facts)
    sites = mark_bf16_scalers(one_site_per_call(join_imports(scanner.scan())), text)
    if imports is not None:
        imports += [(file, module, line) for module, line in scanner.imports]
    kernels = kernel_sites(scanner.kernels, scanner.launches, scanner.qual, facts, file, scanner.code)
    extra = scan_distributed(nodes, scanner, known_distributed) if wanted else []
    graph = scan_graph(nodes, scanner) if "compile" in text or "_dynamo" in text else []
    return [*sites, *kernels, *extra, *graph]
