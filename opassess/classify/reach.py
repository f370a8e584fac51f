"""What the example run did not reach: calls on lines that did not run, inside functions that did, judged as operators.

The capture's reach record (trace/reach.py) says which lines of each entered function ran. Here each function's file
is parsed once (the source scanner's walk and import resolution, opassess/source: no second resolver), the calls on
its missed lines (not those of nested functions, which are functions of their own) are resolved to what they name,
and those naming an operator the knowledge base judges become "present, not reached":
- `torch.ops.<ns>.<op>(...)`: the op itself (torchvision::nms, aten::...);
- a library function that dispatches a library op (rules.toml [[third_party]] apis: torchvision.ops.boxes.nms);
- a documented torch API (torch.*, torch.nn.functional.*: the API tables).
A bare name defined at the top of the same file is that module's function (`nms` in torchvision/ops/boxes.py).
Tensor methods are left out: the receiver's type is not known statically. Each such operator is classified as a
captured one would be; the branch that skipped the call is named where the code says it (`if boxes.numel() == 0:
return` before it, or the `if` whose body holds it).
"""
from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..records import AtenCall, ClassifiedOp, Effort, FunctionReach, Inventory, Operator, OpNode
from ..vocabulary import Category

_MAX_BRANCH = 120  # characters of a branch's text kept


@dataclass(frozen=True)
class UnreachedCall:
    """A call on a line the capture did not run, inside a function it entered, that resolves to an operator the
    knowledge base judges: present in the code the model runs, not reached by the example inputs."""

    file: str  # absolute path, as the capture's code object named it
    line: int
    code: str  # the stripped source line
    call: str  # what the line calls, resolved ("torchvision.ops.boxes.nms")
    operator: str  # the operator it is judged as ("torchvision::nms")
    function: str  # the entered function holding it ("_batched_nms_coordinate_trick")
    branch: str | None  # what skipped it, where it can be said ("if boxes.numel() == 0: return")
    category: Category
    reason: str  # the deciding reason's message
    captured: bool  # the same operator was captured elsewhere in this run (its verdict and cost are there)


@dataclass(frozen=True)
class Reach:
    """What the capture's run reached of the functions it entered, and what it did not."""

    functions: int  # functions entered (the model's and the libraries', not torch's own)
    lines: int  # their lines
    ran: int  # of which ran
    calls: tuple[UnreachedCall, ...]  # present, not reached, in file and line order
    classified: tuple[ClassifiedOp, ...] = ()  # the verdicts of the operators the calls are judged as
    # uncaptured non-direct operators priced as source sites of their category (pipeline/assess.py), not in the total
    person_days: Effort = Effort(0.0, 0.0, 0.0)
    basis: str = ""

    @property
    def share(self) -> float:
        """The share of the entered functions' lines that ran (1.0 when none were entered)."""
        return self.ran / self.lines if self.lines else 1.0

    @property
    def uncaptured(self) -> tuple[ClassifiedOp, ...]:
        """The judged non-direct operators the capture did not see anywhere: the ones costed apart."""
        captured = {c.operator for c in self.calls if c.captured}
        return tuple(c for c in self.classified if c.operator.key not in captured and c.category != Category.DIRECT)


class _File:
    """One parsed file: its lines, its defs by first line, and the scanner that resolves its names."""

    def __init__(self, path: str) -> None:
        from ..source.facts import load_source_facts
        from ..source.python import PythonScanner
        from ..source.walk import walk_file

        text = Path(path).read_text(encoding="utf-8", errors="replace")
        self.lines = text.splitlines()
        tree = ast.parse(text)
        self.nodes = walk_file(tree)
        self.scanner = PythonScanner(self.nodes, self.lines, path, load_source_facts())
        self.module = _module_name(path)
        self.top = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.defs: dict[tuple[int, str], ast.FunctionDef | ast.AsyncFunctionDef] = {}
        for node, _, _ in self.nodes.functions:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            self.defs[(first, node.name)] = node
        self.parents: dict[int, ast.AST] = {}
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent

    def resolve(self, func: ast.expr) -> str | None:
        """The dotted name a callee expression names: an import path, or this module's own top-level function."""
        qual = self.scanner.qual(func)
        if qual is None and isinstance(func, ast.Name) and func.id in self.top and self.module:
            return f"{self.module}.{func.id}"
        return qual

    def code(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""


def _module_name(path: str) -> str | None:
    """'.../site-packages/torchvision/ops/boxes.py' -> 'torchvision.ops.boxes' (the dotted path below the first
    folder without an __init__.py); None for a file outside any package."""
    file = Path(path)
    parts = [file.stem] if file.stem != "__init__" else []
    folder = file.parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts) if len(parts) > 1 else None


def _operator_of(call: str, kb) -> tuple[str, str, tuple[str, ...]] | None:
    """(operator key, kind, ATen/library ops) a resolved call is judged as, or None when the KB cannot judge it."""
    if call.startswith("torch.ops."):
        parts = call.split(".")
        if len(parts) >= 4:
            op = f"{parts[2]}::{parts[3]}"
            return op, "custom", (op,)
        return None
    third = kb.rules.third_party_for_api(call)
    if third is not None:
        return third.op, "custom", (third.op,)
    if call.startswith("torch."):
        aten = _aten_of(call)
        if aten is not None or kb.api(call) is not None:
            return call, "function", (aten,) if aten else ()
    return None


def _aten_of(call: str) -> str | None:
    """The ATen op a torch function of the same name dispatches ('torch.logcumsumexp' -> aten::logcumsumexp,
    'torch.special.erf' -> aten::special_erf), when torch has one."""
    import torch

    namespace, _, name = call.rpartition(".")
    prefix = {"torch.special": "special_", "torch.linalg": "linalg_", "torch.fft": "fft_"}.get(namespace, "")
    if namespace not in ("torch", "torch.nn.functional") and not prefix:
        return None
    base = prefix + name
    return f"aten::{base}" if base and not base.startswith("_") and hasattr(torch.ops.aten, base) else None


def _ends(body: Sequence[ast.stmt]) -> bool:
    """The block leaves early: its last statement returns, raises, continues or breaks."""
    return bool(body) and isinstance(body[-1], ast.Return | ast.Raise | ast.Continue | ast.Break)


def _branch(file: _File, call: ast.AST, function: ast.AST, ran: set[int]) -> str | None:
    """What skipped `call`: an `if` that ran whose untaken side holds it, or an earlier `if` that ran and left early."""
    node: ast.AST = call
    while id(node) in file.parents and node is not function:
        parent = file.parents[id(node)]
        if isinstance(parent, ast.If) and parent.lineno in ran and node is not parent.test:
            side = "" if node in parent.body else "else of "
            return _cut(f"{side}if {ast.unparse(parent.test)}:")
        if isinstance(parent, ast.While | ast.For | ast.AsyncFor) and node in parent.body:
            loop = f"while {ast.unparse(parent.test)}" if isinstance(parent, ast.While) else \
                f"for {ast.unparse(parent.target)} in {ast.unparse(parent.iter)}"
            return _cut(f"{loop}: (no iteration)")
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and node in block:
                for earlier in reversed(block[:block.index(node)]):
                    if isinstance(earlier, ast.If) and earlier.lineno in ran and _ends(earlier.body):
                        leave = ast.unparse(earlier.body[-1]).split("(")[0].split(" ")[0]
                        return _cut(f"if {ast.unparse(earlier.test)}: {leave}")
        node = parent
    return None


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_BRANCH else text[:_MAX_BRANCH - 1] + "…"


@dataclass(frozen=True)
class _Site:
    file: str
    line: int
    code: str
    call: str
    operator: str
    kind: str
    ops: tuple[str, ...]
    function: str
    branch: str | None


def _sites(functions: Sequence[FunctionReach], kb) -> list[_Site]:
    files: dict[str, _File | None] = {}
    out: list[_Site] = []
    for reach in functions:
        if not reach.missed:
            continue
        if reach.file not in files:
            try:
                files[reach.file] = _File(reach.file)
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                files[reach.file] = None  # a file that cannot be read again is not judged: its share still counts
        parsed = files[reach.file]
        if parsed is None:
            continue
        function = parsed.defs.get((reach.first_line, reach.name.rpartition(".")[2]))
        if function is None:
            continue
        missed, ran = set(reach.missed), set(reach.ran)
        for call, scope, _, _ in parsed.nodes.calls:
            if scope != id(function) or call.lineno not in missed:
                continue
            name = parsed.resolve(call.func)
            judged = _operator_of(name, kb) if name else None
            if name is None or judged is None:
                continue
            key, kind, ops = judged
            out.append(_Site(reach.file, call.lineno, parsed.code(call.lineno), name, key, kind, ops, reach.name,
                             _branch(parsed, call, function, ran)))
    return out


def _example_nodes(key: str, site: _Site) -> tuple[OpNode, ...]:
    """A call nobody ran has no recorded shapes: its ATen op's composite kernel (if any) is run on one float32 [4, 4]
    tensor per tensor argument, as `opassess kb show` does, so what the kernel calls is judged too."""
    calls = tuple(AtenCall(op, "default", ((4, 4),), ("float32",), ((4, 4),), ("float32",))
                  for op in site.ops if op.startswith("aten::"))
    if not calls:
        return ()
    return (OpNode(f"unreached:{key}", key, site.kind, "", {}, ((4, 4),), ("float32",), ((4, 4),), ("float32",),
                   calls, f"{site.file}:{site.line}"),)


def judge_reach(inventory: Inventory, kb, *, target: str, torch_version: str) -> Reach | None:
    """The reach of the capture's run and its present-not-reached calls, each judged (None: no record was kept)."""
    from .operators import classify

    functions = inventory.capture.reach
    if functions is None:
        return None
    sites = _sites(functions, kb)
    operators: dict[str, list[_Site]] = {}
    for site in sites:
        operators.setdefault(site.operator, []).append(site)
    made = tuple(Operator(key=key, kind=group[0].kind, count=len(group), modules=(), signatures=(),
                          aten=group[0].ops, sources=tuple(f"{s.file}:{s.line}" for s in group),
                          nodes=_example_nodes(key, group[0]))
                 for key, group in operators.items())
    classified = classify(replace(inventory, operators=made), kb, target=target,
                          torch_version=torch_version) if made else ()
    verdicts = {c.operator.key: c for c in classified}
    seen = {op.key for op in inventory.operators} | {a for op in inventory.operators for a in op.aten} | {
        a.partition(".")[0] for op in inventory.operators for a in op.aten}
    calls = tuple(UnreachedCall(s.file, s.line, s.code, s.call, s.operator, s.function, s.branch,
                                verdicts[s.operator].category, _deciding(verdicts[s.operator]), s.operator in seen)
                  for s in sorted(sites, key=lambda s: (s.file, s.line)))
    lines = sum(len(f.ran) + len(f.missed) for f in functions)
    return Reach(len(functions), lines, sum(len(f.ran) for f in functions), calls, classified)


_DECIDING = ("replacement", "no-kernel", "binding", "api-unsupported", "kernel-unsupported", "not-in-kb", "custom-op",
             "dtype", "param-limit", "shape-limit")  # the reasons that move a verdict off direct, first first


def _deciding(op: ClassifiedOp) -> str:
    """The message of the reason that decided the category (for a direct one, its first reason)."""
    if op.category != Category.DIRECT:
        for code in _DECIDING:
            found = next((r for r in op.reasons if r.code == code), None)
            if found is not None:
                return found.message
    return op.reasons[0].message if op.reasons else ""
