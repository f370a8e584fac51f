"""The Triton side of a file's scan: a file's integer constants (launch grids), and one site per @triton.jit kernel
with its size, the tl APIs it uses and what triton-ascend lacks where it is visible."""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator

from .facts import SourceFacts
from .records import KernelSize, Site

TL = "triton.language."
# Triton dtype attributes (tl.int64 ...) in the table's normalised names.
TL_DTYPES = {"int1": "bool", "float8e4nv": "float8e4", "float8e5": "float8e5", "fp8e4nv": "float8e4",
             **{n: n for n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                               "float16", "float32", "float64", "bfloat16")}}
GRID_LIMIT = 65535  # programs per launch dimension the facts' coreDim rule allows

Qual = Callable[[ast.AST], "str | None"]


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def keyword_values(node: ast.Call) -> dict[str, str]:
    """Keyword arguments of a call: name -> its string value, or '?' when not a string literal."""
    return {k.arg: (_literal(k.value) or "?") for k in node.keywords if k.arg}


class Constants:
    """Integer constants assigned once at any level of a file, and an evaluator of simple integer expressions."""

    def __init__(self, assigns: Iterable[ast.AST], qual: Qual):
        self.qual = qual
        values: dict[str, ast.expr] = {}
        seen: set[str] = set()
        for node in assigns:
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


def kernel_sites(kernels: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
                 launches: dict[str, list[tuple[int, int | None]]], qual: Qual, facts: SourceFacts,
                 file: str, code: Callable[[int], str]) -> Iterator[Site]:
    """One site per @triton.jit kernel: size, tl APIs used, and what triton-ascend lacks where visible (`launches`:
    kernel name -> (line, programs) of each launch the file makes)."""
    for name, node in kernels.items():
        apis: set[str] = set()
        flags: list[tuple[str, str]] = []
        inside = list(ast.walk(node))  # the kernel's own nodes (a kernel is small), in the order flags are listed
        dtypes_of = _local_dtypes(inside, qual)
        for call in (n for n in inside if isinstance(n, ast.Call)):
            q = qual(call.func)
            if q is None and isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cast"):
                q = TL + "cast"  # x.to(tl.float64) is a cast
            if not q or not q.startswith(TL):
                continue
            short = q[len(TL):]
            apis.add(short)
            flags += _triton_flags(call, q, short, dtypes_of, qual, facts)
        for line, programs in launches.get(name, ()):
            if programs is not None and programs > GRID_LIMIT:
                flags.append(("grid", f"{programs} programs (launch line {line})"))
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        lines = (node.end_lineno or node.lineno) - start + 1
        detail = [("name", name), *flags]
        size = KernelSize(lines=lines, kernels=1, apis=tuple(sorted(apis)))
        yield Site(file, node.lineno, code(node.lineno), "triton-kernel", name, tuple(detail), size)


def _local_dtypes(inside: list[ast.AST], qual: Qual) -> dict[str, set[str]]:
    """Name -> Triton dtypes visible in its assignments inside the kernel (one level of data flow)."""
    found: dict[str, set[str]] = {}
    for node in inside:
        if isinstance(node, ast.Assign):
            dtypes = _dtypes(node.value, {}, qual)
            for target in node.targets:
                if isinstance(target, ast.Name) and dtypes:
                    found.setdefault(target.id, set()).update(dtypes)
    return found


def _dtypes(node: ast.AST, names: dict[str, set[str]], qual: Qual) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        q = qual(sub) if isinstance(sub, ast.Attribute) else None
        if q and q.startswith(TL) and q[len(TL):] in TL_DTYPES:
            found.add(TL_DTYPES[q[len(TL):]])
        elif isinstance(sub, ast.Name) and sub.id in names:
            found |= names[sub.id]
    return found


def _triton_flags(call: ast.Call, q: str, short: str, names: dict[str, set[str]], qual: Qual,
                  facts: SourceFacts) -> list[tuple[str, str]]:
    api = facts.triton_api(q)
    if api is None:
        return [("unknown-api", f"{short} (line {call.lineno})")]
    flags = []
    args = call.args[1:] if short.startswith("atomic_") else call.args  # the pointer's dtype is not visible
    if short == "cast" and isinstance(call.func, ast.Attribute) and call.func.attr in ("to", "cast"):
        args = call.args
    visible = set().union(*(_dtypes(a, names, qual) for a in [*args, *(k.value for k in call.keywords)]))
    for dtype in sorted(visible & set(api.unsupported_dtypes)):
        flags.append(("dtype", f"{short}:{dtype} (line {call.lineno})"))
    kwargs = keyword_values(call)
    for arg, op, value in api.unsupported_args:
        if op == "!=" and arg in kwargs and kwargs[arg] not in ("?", value):
            flags.append(("arg", f"{short}:{arg}={kwargs[arg]} (line {call.lineno})"))
        elif op == "set" and arg in kwargs:
            flags.append(("arg", f"{short}:{arg} (line {call.lineno})"))
    return flags
