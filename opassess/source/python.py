"""Static scan of one Python file with `ast` (never imported, never regex-matched): the GPU-specific sites in it.

Import aliases are resolved file-wide (`import flash_attn as fa`, `from torch.cuda.amp import GradScaler`,
imports inside functions too); a name that is rebound later is still read as the import. Sites are raw
`Site` records; classify.py decides what each one means on the NPU.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

from .distributed import scan_distributed
from .facts import SourceFacts
from .graph_sites import scan_graph
from .records import KernelSize, Site

DEVICE_KWARGS = ("device", "device_type", "map_location", "device_id", "device_ids")
IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")
TRITON_DECORATORS = ("triton.jit", "triton.autotune", "triton.heuristics")
TL = "triton.language."
# Triton dtype attributes (tl.int64 ...) in the table's normalised names.
TL_DTYPES = {"int1": "bool", "float8e4nv": "float8e4", "float8e5": "float8e5", "fp8e4nv": "float8e4",
             **{n: n for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                               "float16", "float32", "float64", "bfloat16")}}


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _is_cuda(text: str | None) -> bool:
    return text is not None and (text == "cuda" or text.startswith("cuda:"))


class _Constants:
    """Integer constants assigned once at any level of a file, and an evaluator of simple integer expressions."""

    def __init__(self, nodes: list[ast.AST], qual):
        self.qual = qual
        values: dict[str, ast.expr] = {}
        seen: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = node.targets[0].id
                if name in seen:
                    values.pop(name, None)  # assigned twice: not a constant
                else:
                    values[name] = node.value
                seen.add(name)
        self.values = values

    def evaluate(self, node: ast.AST, depth: int = 0) -> int | None:
        """The value of an int expression of literals, once-assigned names, + - * // ** << and triton.cdiv."""
        if depth > 20:
            return None
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name) and node.id in self.values:
            return self.evaluate(self.values[node.id], depth + 1)
        if isinstance(node, ast.BinOp):
            left, right = self.evaluate(node.left, depth + 1), self.evaluate(node.right, depth + 1)
            if left is None or right is None:
                return None
            ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
                   ast.FloorDiv: lambda a, b: a // b if b else None, ast.Pow: lambda a, b: a ** b if b < 64 else None,
                   ast.LShift: lambda a, b: a << b if 0 <= b < 64 else None}
            op = ops.get(type(node.op))
            return op(left, right) if op else None
        if isinstance(node, ast.Call) and self.qual(node.func) in ("triton.cdiv", "triton.language.cdiv"):
            if len(node.args) == 2:
                a, b = (self.evaluate(arg, depth + 1) for arg in node.args)
                return -(-a // b) if a is not None and b else None
        return None

    def programs(self, grid: ast.AST) -> int | None:
        """Programs a launch grid asks for, when every dimension is visible: (a, b, c) -> a * b * c."""
        if isinstance(grid, ast.Name) and grid.id in self.values:
            grid = self.values[grid.id]
        dims = grid.elts if isinstance(grid, ast.Tuple | ast.List) else [grid]
        total = 1
        for dim in dims:
            value = self.evaluate(dim)
            if value is None:
                return None
            total *= value
        return total


class PythonScanner(ast.NodeVisitor):
    """Collects the sites of one parsed file; use scan_python()."""

    def __init__(self, tree: ast.Module, lines: list[str], file: str, facts: SourceFacts):
        self.lines, self.file, self.facts = lines, file, facts
        self.aliases: dict[str, str] = {}
        self.guarded: set[int] = set()  # ids of Import nodes inside try/except ImportError
        nodes = list(ast.walk(tree))  # one walk, reused by every pre-pass below
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Try) and any(self._catches_import_error(h) for h in node.handlers):
                self.guarded.update(id(n) for stmt in node.body for n in ast.walk(stmt)
                                    if isinstance(n, ast.Import | ast.ImportFrom))
        self.constants = _Constants(nodes, self.qual)
        # an autotune list ([triton.Config(...), ...] or a comprehension of them) is one site: config call -> list
        self.config_lists: dict[int, ast.AST] = {}
        for node in nodes:
            configs = [e for e in node.elts if isinstance(e, ast.Call) and self.qual(e.func) == "triton.Config"] \
                if isinstance(node, ast.List | ast.Tuple) else [node.elt] if isinstance(
                    node, ast.ListComp) and isinstance(node.elt, ast.Call) and self.qual(node.elt.func) == \
                "triton.Config" else []
            self.config_lists.update((id(call), node) for call in configs)
        self.lists_seen: set[int] = set()
        self.kernels = {n.name: n for n in nodes if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                        and any(self._decorator_name(d) == "triton.jit" for d in n.decorator_list)}
        self.launches: dict[str, list[tuple[int, int | None]]] = {}
        self.sites: list[Site] = []
        self.imports: list[tuple[str, int]] = []  # (module, line) of every absolute import, for package.link_own

    # ------------------------------------------------------------------ helpers

    def qual(self, node: ast.AST) -> str | None:
        """The dotted import path an expression names (`fa.flash_attn_func` -> flash_attn.flash_attn_func)."""
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def _catches_import_error(self, handler: ast.ExceptHandler) -> bool:
        if handler.type is None:
            return True
        types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
        return any(isinstance(t, ast.Name) and t.id in IMPORT_ERRORS for t in types)

    def _decorator_name(self, node: ast.expr) -> str | None:
        return self.qual(node.func if isinstance(node, ast.Call) else node)

    def code(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def add(self, node: ast.AST, kind: str, subject: str, detail=(), size: KernelSize | None = None) -> None:
        line = getattr(node, "lineno", 1)
        self.sites.append(Site(self.file, line, self.code(line), kind, subject, tuple(detail), size))

    @staticmethod
    def kwargs(node: ast.Call) -> dict[str, str]:
        """Keyword arguments of a call: name -> its string value, or '?' when not a string literal."""
        return {k.arg: (_literal(k.value) or "?") for k in node.keywords if k.arg}

    # ------------------------------------------------------------------ imports

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._import(node, alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and not node.level:
            self._import(node, node.module, [a.name for a in node.names])

    def _import(self, node: ast.AST, module: str, names: list[str] = ()) -> None:
        self.imports.append((module, getattr(node, "lineno", 1)))
        if self.facts.library_for_module(module) or self.facts.migration_for_import(module.split(".")[0]):
            guarded = ("guarded", "yes" if id(node) in self.guarded else "no")
            self.add(node, "import", module, [guarded, *(("name", n) for n in names)])

    # ------------------------------------------------------------------ uses

    def visit_Call(self, node: ast.Call) -> None:
        q = self.qual(node.func)
        kwargs = self.kwargs(node)
        detail = [("kwarg", f"{k}={v}") for k, v in kwargs.items()]
        if isinstance(node.func, ast.Subscript) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id in self.kernels:
            programs = self.constants.programs(node.func.slice)
            self.launches.setdefault(node.func.value.id, []).append((node.lineno, programs))
        if q:
            self._call(node, q, kwargs, detail)
        elif isinstance(node.func, ast.Attribute):
            self._method(node, node.func.attr, kwargs)
        elif isinstance(node.func, ast.Name) and any(_is_cuda(v) for k, v in kwargs.items() if k in DEVICE_KWARGS):
            self.add(node, "device", f"?.{node.func.id}", [("literal", "cuda")])
        if q is None or not isinstance(node.func, ast.Name | ast.Attribute):
            self.visit(node.func)
        for child in [*node.args, *(k.value for k in node.keywords)]:
            self.visit(child)

    def _call(self, node: ast.Call, q: str, kwargs: dict[str, str], detail: list) -> None:
        positional = [_literal(a) for a in node.args]
        if q in ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.CUDAExtension"):
            name = kwargs.get("name") or (positional[0] if positional else None) or "?"
            sources = self._sources(node)
            self.add(node, "extension", q, [("name", name), *(("source", s) for s in sources)])
            return
        if q == "triton.Config" and id(node) in self.config_lists:
            owner = self.config_lists[id(node)]
            if id(owner) not in self.lists_seen:
                self.lists_seen.add(id(owner))
                calls = [c for c in ast.walk(owner) if isinstance(c, ast.Call) and id(c) in self.config_lists]
                names = dict.fromkeys(k for c in calls for k in self.kwargs(c))
                self.add(owner, "triton-config", q, [("configs", str(len(calls))),
                                                     *(("kwarg", f"{k}=?") for k in names)])
            return
        if q == "triton.Config" or q == "triton.autotune":
            self.add(node, "triton-config", q, detail)
            return
        if q in self.kernels or q.startswith(TL):
            return
        device = [v for k, v in kwargs.items() if k in DEVICE_KWARGS and _is_cuda(v)]
        device += [p for p in positional if _is_cuda(p)]
        backend = kwargs.get("backend") or (positional[0] if positional else None)
        if backend is not None and "nccl" in backend.split(":"):
            self.add(node, "backend", q, [("literal", backend), *detail])
        elif device:
            self.add(node, "device", q, [("literal", device[0]), *detail])
        elif self.facts.is_relevant(q):
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

    def _sources(self, node: ast.Call) -> list[str]:
        value = next((k.value for k in node.keywords if k.arg == "sources"), None)
        if value is None and len(node.args) > 1:
            value = node.args[1]
        elts = value.elts if isinstance(value, ast.List | ast.Tuple) else []
        return [s for s in (_literal(e) for e in elts) if s]

    def visit_Attribute(self, node: ast.Attribute) -> None:
        q = self.qual(node)
        if q and self.facts.is_relevant(q):
            self.add(node, "api", q, [("use", "attribute")])
        elif q is None and node.attr == "is_cuda":
            self.add(node, "device", "tensor.is_cuda", [("literal", "cuda")])
            self.visit(node.value)
        elif q is None:
            self.visit(node.value)

    def visit_Name(self, node: ast.Name) -> None:
        q = self.aliases.get(node.id)
        if q and q != node.id and self.facts.is_relevant(q):
            self.add(node, "api", q, [("use", "name")])

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._assign(target, node.value, node)
        self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._assign(node.target, node.value, node)
        self.visit(node.value)

    def _assign(self, target: ast.expr, value: ast.expr, node: ast.AST) -> None:
        q = self.qual(target) if isinstance(target, ast.Attribute) else None
        if q and self.facts.is_relevant(q):
            shown = ast.unparse(value) if len(ast.unparse(value)) < 40 else "..."
            self.add(node, "assign", q, [("value", shown)])
        elif not isinstance(target, ast.Name):
            self.visit(target)

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        literals = []
        for side in sides:
            items = side.elts if isinstance(side, ast.List | ast.Tuple | ast.Set) else [side]
            literals += [s for s in (_literal(i) for i in items) if s in ("nccl", "NCCL", "cuda")]
        others = [ast.unparse(s) for s in sides if _literal(s) is None and not isinstance(s, ast.List | ast.Tuple)]
        for literal in dict.fromkeys(literals):
            self.add(node, "compare", literal, [("against", " ".join(others)[:60])])
        self.generic_visit(node)

    # ------------------------------------------------------------------ triton kernels

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            if self._decorator_name(decorator) in TRITON_DECORATORS:
                if isinstance(decorator, ast.Call):
                    for child in [*decorator.args, *(k.value for k in decorator.keywords)]:
                        self.visit(child)
            else:
                self.visit(decorator)
        for child in [*node.body, node.args]:
            self.visit(child)

    visit_AsyncFunctionDef = visit_FunctionDef

    def kernel_sites(self) -> Iterator[Site]:
        """One site per @triton.jit kernel: size, tl APIs used, and what triton-ascend lacks where visible."""
        for name, node in self.kernels.items():
            apis: set[str] = set()
            flags: list[tuple[str, str]] = []
            dtypes_of = self._local_dtypes(node)
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                q = self.qual(call.func)
                if q is None and isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cast"):
                    q = TL + "cast"  # x.to(tl.float64) is a cast
                if not q or not q.startswith(TL):
                    continue
                short = q[len(TL):]
                apis.add(short)
                flags += self._triton_flags(call, q, short, dtypes_of)
            for line, programs in self.launches.get(name, ()):
                if programs is not None and programs > 65535:
                    flags.append(("grid", f"{programs} programs (launch line {line})"))
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = (node.end_lineno or node.lineno) - start + 1
            detail = [("name", name), *flags]
            size = KernelSize(lines=lines, kernels=1, apis=tuple(sorted(apis)))
            yield Site(self.file, node.lineno, self.code(node.lineno), "triton-kernel", name, tuple(detail), size)

    def _local_dtypes(self, kernel: ast.AST) -> dict[str, set[str]]:
        """Name -> Triton dtypes visible in its assignments inside the kernel (one level of data flow)."""
        found: dict[str, set[str]] = {}
        for node in ast.walk(kernel):
            if isinstance(node, ast.Assign):
                dtypes = self._dtypes(node.value, {})
                for target in node.targets:
                    if isinstance(target, ast.Name) and dtypes:
                        found.setdefault(target.id, set()).update(dtypes)
        return found

    def _dtypes(self, node: ast.AST, names: dict[str, set[str]]) -> set[str]:
        found = set()
        for sub in ast.walk(node):
            q = self.qual(sub) if isinstance(sub, ast.Attribute) else None
            if q and q.startswith(TL) and q[len(TL):] in TL_DTYPES:
                found.add(TL_DTYPES[q[len(TL):]])
            elif isinstance(sub, ast.Name) and sub.id in names:
                found |= names[sub.id]
        return found

    def _triton_flags(self, call: ast.Call, q: str, short: str, names) -> list[tuple[str, str]]:
        api = self.facts.triton_api(q)
        if api is None:
            return [("unknown-api", f"{short} (line {call.lineno})")]
        flags = []
        args = call.args[1:] if short.startswith("atomic_") else call.args  # the pointer's dtype is not visible
        if short == "cast" and isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cast"):
            args = call.args
        visible = set().union(*(self._dtypes(a, names) for a in [*args, *(k.value for k in call.keywords)]))
        for dtype in sorted(visible & set(api.unsupported_dtypes)):
            flags.append(("dtype", f"{short}:{dtype} (line {call.lineno})"))
        kwargs = self.kwargs(call)
        for arg, op, value in api.unsupported_args:
            if op == "!=" and arg in kwargs and kwargs[arg] not in ("?", value):
                flags.append(("arg", f"{short}:{arg}={kwargs[arg]} (line {call.lineno})"))
            elif op == "set" and arg in kwargs:
                flags.append(("arg", f"{short}:{arg} (line {call.lineno})"))
        return flags


def scan_python(text: str, file: str, facts: SourceFacts, known_distributed=None,
                imports: list[tuple[str, str, int]] | None = None) -> list[Site]:
    """The sites of one Python source; raises SyntaxError (with its line) when the text does not parse.

    `known_distributed(api)`: whether the HCCL facts name a torch.distributed API; given, the distributed sites
    (distributed.py) are collected too. `imports`, when given, receives (file, module, line) of every absolute
    import (an extension module the tree builds is linked to them)."""
    tree = ast.parse(text, filename=file)
    scanner = PythonScanner(tree, text.splitlines(), file, facts)
    scanner.visit(tree)
    if imports is not None:
        imports += [(file, module, line) for module, line in scanner.imports]
    wanted = known_distributed is not None and ("distributed" in text or "NCCL_" in text)  # most files: no pass
    extra = scan_distributed(tree, scanner, known_distributed) if wanted else []
    return [*scanner.sites, *scanner.kernel_sites(), *extra, *scan_graph(tree, scanner)]
