"""The one walk of a parsed Python file: every node seen once, the ones the scanners read filed by kind.

The walk is iterative (a stack, no recursion) and goes in the order the site scanner reads a file (pre-order, a
function's decorators before its body and its arguments). Import aliases are only known once the whole file has been
walked (an import inside a function applies to uses above it), so what a node means is decided afterwards, from the
lists kept here: the scanners (python.py, distributed.py, graph_sites.py) read these lists, never the tree again.

Each node the site scanner reads is kept with its role, which says how the scanner treats it:
- PLAIN: an expression read for itself (`torch.cuda.synchronize` as an argument is an API use);
- CHAIN: an Attribute or Name that is the value of an Attribute or the callee of a call, or an assignment target:
  the enclosing node speaks for it, so only an unresolved `x.is_cuda` is a site of its own;
- DECORATOR: a function's decorator (a Triton decorator is the kernel, not a use).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

PLAIN, DECORATOR, CHAIN, VALUE = 0, 1, 2, 3  # VALUE: a CHAIN node that is the value of an Attribute
HIDDEN, GUARDED, DEPTH = 1, 2, 4  # flag bits (a return annotation, inside `try: ... except ImportError`); depth * 4
IMPORT_ERRORS = ("ImportError", "ModuleNotFoundError", "Exception", "BaseException")
# fields never holding a node the scanners read (expression contexts, operators)
_SKIP_FIELDS = frozenset({"ctx", "op", "ops"})
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _fields(cls: type[ast.AST]) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes, last first (the order they go onto the walk's stack)."""
    fields = _CHILD_FIELDS.get(cls)
    if fields is None:
        fields = _CHILD_FIELDS[cls] = tuple(reversed([f for f in cls._fields if f not in _SKIP_FIELDS]))
    return fields


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    """Whether an except clause catches a failed import (bare, ImportError, ModuleNotFoundError, Exception ...)."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(t, ast.Name) and t.id in IMPORT_ERRORS for t in types)


@dataclass
class FileNodes:
    """What one walk of a file keeps, each list in walk order.

    - `events`: (node, role) of the nodes the site scanner reads (imports, calls, attributes, names, assignments,
      comparisons); return annotations are left out;
    - `calls`: (call, scope, flags, index) of every call, return annotations included;
    - `imports`: (node, guarded, flags, index); `functions`: (def, flags, index);
    - `assigns`: (node, scope, flags, index) of every Assign, AugAssign and AnnAssign;
    - `sequences`: List, Tuple and ListComp nodes (autotune lists);
    - only when asked for (the distributed scan): `references`, (node, scope, index) of the outermost Attribute or
      Name of each chain (`a.b.c`: its `a.b` is index + 1, `a` index + 2), and `nccl`, (constant, index) of each
      string starting 'NCCL_' or 'TORCH_NCCL_'.
    A scope is the id of the innermost function or lambda (0: the module); flags are the HIDDEN and GUARDED bits plus
    DEPTH times the node's depth; index is the node's place in the walk.
    """

    events: list[tuple[ast.AST, int]] = field(default_factory=list)
    calls: list[tuple[ast.Call, int, int, int]] = field(default_factory=list)
    imports: list[tuple[ast.Import | ast.ImportFrom, bool, int, int]] = field(default_factory=list)
    assigns: list[tuple[ast.Assign | ast.AugAssign | ast.AnnAssign, int, int, int]] = field(default_factory=list)
    functions: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, int, int]] = field(default_factory=list)
    sequences: list[ast.List | ast.Tuple | ast.ListComp] = field(default_factory=list)
    references: list[tuple[ast.Attribute | ast.Name, int, int]] = field(default_factory=list)
    nccl: list[tuple[ast.Constant, int]] = field(default_factory=list)


class Resolver(Protocol):
    """What the distributed and graph-mode scanners read of a file's PythonScanner (python.py)."""

    file: str
    aliases: dict[str, str]  # local name -> the module or object it imports

    def qual(self, node: ast.AST) -> str | None: ...  # `np.cuda.x` -> 'cupy.cuda.x' through the aliases

    def code(self, line: int) -> str: ...  # the source line, stripped and capped


def walk_file(tree: ast.Module, references: bool = False) -> FileNodes:
    """Walk `tree` once; `references`: keep every Attribute, Name and 'NCCL_*' constant too (the distributed scan)."""
    out = FileNodes()
    events, calls, assigns = out.events, out.calls, out.assigns
    refs, nccl = out.references, out.nccl
    Name, Attribute, Call, Constant = ast.Name, ast.Attribute, ast.Call, ast.Constant  # noqa: N806 - locals: speed
    Assign, AugAssign, AnnAssign = ast.Assign, ast.AugAssign, ast.AnnAssign  # noqa: N806
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    sequences = (ast.List, ast.Tuple, ast.ListComp)
    AST = ast.AST  # noqa: N806
    stack: list[tuple[ast.AST, int, int, int]] = [(tree, PLAIN, 0, 0)]
    pop, push = stack.pop, stack.append
    index = 0
    while stack:
        node, role, flags, scope = pop()
        index += 1
        cls = type(node)
        # Each branch below knows `node`'s class from `cls`; the TYPE_CHECKING asserts tell mypy, at no run-time cost.
        if cls is Name:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.Name)
            if references and role != VALUE:
                refs.append((node, scope, index))
            if role < CHAIN and not flags & HIDDEN:
                events.append((node, role))
            continue
        if cls is Constant:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.Constant)
            if references and type(node.value) is str and node.value.startswith(("NCCL_", "TORCH_NCCL_")):
                nccl.append((node, index))
            continue
        inner = flags + DEPTH
        if cls is Attribute:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.Attribute)
            if references and role != VALUE:  # the outermost node of a chain: a.b.c, not a.b or a
                refs.append((node, scope, index))
            if not flags & HIDDEN and (role < CHAIN or node.attr == "is_cuda"):
                events.append((node, role))
            push((node.value, VALUE, inner, scope))
            continue
        if cls is Call:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.Call)
            calls.append((node, scope, flags, index))
            if not flags & HIDDEN:
                events.append((node, role))
            for keyword in reversed(node.keywords):
                push((keyword.value, PLAIN, inner, scope))
            for arg in reversed(node.args):
                push((arg, PLAIN, inner, scope))
            func = node.func
            push((func, CHAIN if type(func) is Attribute or type(func) is Name else PLAIN, inner, scope))
            continue
        if cls is Assign or cls is AugAssign or cls is AnnAssign:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
            assigns.append((node, scope, flags, index))
            if node.value is not None:
                push((node.value, PLAIN, inner, scope))
            if cls is AnnAssign:  # read as any expression: its target is an ordinary use
                if TYPE_CHECKING:  # `cls` decided it: no check at run time
                    assert isinstance(node, ast.AnnAssign)
                push((node.annotation, PLAIN, inner, scope))
                push((node.target, PLAIN, inner, scope))
                continue
            events.append((node, role))
            for target in reversed(node.targets) if isinstance(node, Assign) else (node.target,):
                # a target the assignment speaks for (a Name target is not a use of what the name held)
                push((target, CHAIN if type(target) is Attribute or type(target) is Name else PLAIN, inner, scope))
            continue
        if cls in functions:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            out.functions.append((node, flags, index))
            body = id(node)
            if node.returns is not None:
                push((node.returns, PLAIN, inner | HIDDEN, body))
            push((node.args, PLAIN, inner, body))
            for stmt in reversed(node.body):
                push((stmt, PLAIN, inner, body))
            for deco in reversed(node.decorator_list):
                push((deco, DECORATOR, inner, body))
            continue
        if cls is ast.Import or cls is ast.ImportFrom:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.Import | ast.ImportFrom)
            out.imports.append((node, bool(flags & GUARDED), flags, index))
            events.append((node, role))
            continue
        if cls is ast.Compare:
            events.append((node, role))
        elif cls in sequences:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.List | ast.Tuple | ast.ListComp)
            out.sequences.append(node)
        elif cls is ast.Lambda:
            scope = id(node)
        elif cls is ast.Try:
            if TYPE_CHECKING:  # `cls` decided it: no check at run time
                assert isinstance(node, ast.Try)
            if any(catches_import_error(h) for h in node.handlers):
                for name in _fields(cls):  # finalbody, orelse, handlers, body: the body is guarded
                    child_flags = inner | GUARDED if name == "body" else inner
                    for child in reversed(getattr(node, name)):
                        push((child, PLAIN, child_flags, scope))
                continue
        for name in _CHILD_FIELDS.get(cls) or _fields(cls):
            value = getattr(node, name)
            if type(value) is list:
                for child in reversed(value):
                    if isinstance(child, AST):
                        push((child, PLAIN, inner, scope))
            elif isinstance(value, AST):
                push((value, PLAIN, inner, scope))
    return out
