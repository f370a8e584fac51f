"""The distributed pre-flight of one parsed Python file: the torch.distributed constructs HCCL treats differently.

Sites (raw; classify/distributed.py judges them against the HCCL facts and the target product):
- `collective`: a torch.distributed collective call, with the reduce op and the tensor's dtype where visible (one
  level of data flow: the argument itself, or the nearest earlier assignment of that name in the same function);
- `reduce-op`: a ReduceOp member HCCL lacks or emulates (BAND/BOR/BXOR, AVG, PREMUL_SUM), wherever it is named;
- `comm-hook`: a DDP communication hook (`.register_comm_hook(...)`, or a ddp_comm_hooks function);
- `dist-api`: another torch.distributed API the HCCL facts name (FSDP optimizer-state helpers, parallelize_module,
  DistributedOptimizer, ...);
- `env-var`: an `NCCL_*` / `TORCH_NCCL_*` environment variable name (a string literal);
- `process-group`: init_process_group / new_group options HCCL does not take as given (pg_options, timeout).
Each names the qualified API or literal; the alias resolution is the file scanner's (python.py).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Callable

from .records import Site
from .walk import FileNodes, Resolver

DIST = "torch.distributed."
# Collectives of torch.distributed whose HCCL behaviour the facts describe (name -> index of the tensor argument).
COLLECTIVES = {"all_reduce": 0, "reduce": 0, "all_gather": 1, "all_gather_into_tensor": 1, "gather": 0,
               "scatter": 0, "reduce_scatter": 1, "reduce_scatter_tensor": 1, "all_to_all": 1,
               "all_to_all_single": 1, "broadcast": 0, "send": 0, "recv": 0, "isend": 0, "irecv": 0}
REDUCE_OP = DIST + "ReduceOp."
GROUP_CALLS = (DIST + "init_process_group", DIST + "new_group")
GROUP_OPTIONS = ("pg_options", "timeout")
ENV_NAME = re.compile(r"(TORCH_)?NCCL_[A-Z0-9_]+")
# How a dtype shows in an expression: torch dtype attributes and the tensor methods that cast.
DTYPE_ATTRS = {"torch.float64": "float64", "torch.double": "float64", "torch.uint64": "uint64",
               "torch.float32": "float32", "torch.float": "float32", "torch.float16": "float16",
               "torch.half": "float16", "torch.bfloat16": "bfloat16", "torch.int64": "int64", "torch.long": "int64",
               "torch.int32": "int32", "torch.int": "int32", "torch.int8": "int8", "torch.uint8": "uint8",
               "torch.bool": "bool"}
KEEP_DTYPE = ("sum", "mean", "clone", "detach", "contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze",
             "abs", "neg", "max", "min", "prod", "cumsum")  # tensor methods whose result keeps the receiver's dtype
CAST_METHODS = {"double": "float64", "float": "float32", "half": "float16", "bfloat16": "bfloat16", "long": "int64",
                "int": "int32", "bool": "bool"}


class _Lazy(dict):
    """A mapping filled by `fill` on its first read (a scope's assignments, wanted only where a collective is)."""

    def __init__(self, fill):
        super().__init__()
        self._fill = fill

    def _load(self):
        if self._fill is not None:
            self.update(self._fill())
            self._fill = None

    def __contains__(self, key):
        self._load()
        return super().__contains__(key)

    def __getitem__(self, key):
        self._load()
        return super().__getitem__(key)


class DistributedScanner:
    """Collects the distributed sites of one file from its walk (walk.FileNodes), using a PythonScanner's alias
    resolution (`qual`, `code`)."""

    def __init__(self, nodes: FileNodes, scanner: Resolver, known: Callable[[str], bool]) -> None:
        self.nodes, self.scanner, self.known = nodes, scanner, known  # known(api) -> whether the HCCL facts name it
        self._sites: dict[tuple[int, str, str], tuple[Site, tuple[int, int], ast.AST]] = {}
        self._order: tuple[int, int] = (0, 0)  # (pass, walk index) of the node being read
        self._node: ast.AST | None = None

    def add(self, node: ast.AST, kind: str, subject: str, detail=()) -> None:
        """One site per (line, kind, subject) (one hook site per line: register + its hook): of two nodes claiming
        one, references before calls, an enclosing node before the nodes inside it, else the later node."""
        line = getattr(node, "lineno", 1)
        key = (line, kind, "" if kind == "comm-hook" else subject)
        held = self._sites.get(key)
        if held is not None and not _first(self._order, node, held[1], held[2]):
            return
        self._sites[key] = (Site(self.scanner.file, line, self.scanner.code(line), kind, subject, tuple(detail)),
                            self._order, node)

    def scan(self) -> list[Site]:
        """The references and constants, then the calls, each read once; a scope's assignments are read only when
        a collective in it needs a tensor's dtype."""
        by_scope: dict[int, list[ast.Assign | ast.AnnAssign]] = {}
        for assign, scope, _, _ in self.nodes.assigns:
            if not isinstance(assign, ast.AugAssign):
                by_scope.setdefault(scope, []).append(assign)
        aliases = self.scanner.aliases
        for root, _, index in self.nodes.references:
            chain: list[ast.Attribute | ast.Name] = []  # a.b.c, a.b, a: each a reference of its own
            link: ast.expr = root
            while isinstance(link, ast.Attribute):
                chain.append(link)
                link = link.value
            if not isinstance(link, ast.Name) or link.id not in aliases:
                continue  # names nothing imported (self.x.y): none of the chain resolves
            chain.append(link)
            for offset, node in enumerate(chain):
                self._order = (0, index + offset)
                self._reference(node)
        for constant, index in self.nodes.nccl:
            name = constant.value  # a str: the walk files only strings starting 'NCCL_' / 'TORCH_NCCL_'
            if isinstance(name, str) and ENV_NAME.fullmatch(name):
                self._order = (0, index)
                self.add(constant, "env-var", name)
        scopes: dict[int, _Lazy] = {}
        for call, scope, _, index in self.nodes.calls:
            if scope not in scopes:
                found = by_scope.get(scope, [])
                scopes[scope] = _Lazy(lambda found=found: self._assignments(found))
            self._order = (1, index)
            self._call(call, scopes[scope])
        return sorted((site for site, _, _ in self._sites.values()), key=lambda s: (s.line, s.kind, s.subject))

    # ------------------------------------------------------------------ data flow

    def _assignments(self, nodes: list[ast.Assign | ast.AnnAssign]) -> dict[str, list[tuple[int, str]]]:
        """Name -> [(line, dtype)] for each of a scope's assignments whose value shows a dtype, in line order."""
        found: dict[str, list[tuple[int, str]]] = {}
        for node in sorted(nodes, key=lambda n: n.lineno):
            if node.value is None:
                continue
            dtype = self.dtype_of(node.value, {})
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and dtype:
                    found.setdefault(target.id, []).append((node.lineno, dtype))
        return found

    def dtype_of(self, node: ast.AST, assigned: dict[str, list[tuple[int, str]]], line: int = 0) -> str:
        """The dtype an expression shows: `x.double()`, `torch.zeros(..., dtype=torch.float64)`, `x.to(torch.uint64)`,
        or a name assigned so earlier in the same function ('' when none is visible)."""
        if isinstance(node, ast.Name) and node.id in assigned:
            earlier = [dtype for at, dtype in assigned[node.id] if at <= line or not line]
            return earlier[-1] if earlier else ""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and self.scanner.qual(node.func) is None:
            if not node.args and node.func.attr in CAST_METHODS:
                return CAST_METHODS[node.func.attr]
            if node.func.attr in KEEP_DTYPE:  # y.double().sum(): the dtype of the receiver
                return self.dtype_of(node.func.value, assigned, line)
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute):
                dtype = DTYPE_ATTRS.get(self.scanner.qual(sub) or "")
                if dtype:
                    return dtype
        return ""

    # ------------------------------------------------------------------ sites

    def _call(self, node: ast.Call, assigned) -> None:
        q = self.scanner.qual(node.func)
        if q is None:
            if isinstance(node.func, ast.Attribute) and node.func.attr == "register_comm_hook":
                self.add(node, "comm-hook", "DistributedDataParallel.register_comm_hook")
            return
        q = q.replace(".distributed_c10d.", ".")
        name = q[len(DIST):] if q.startswith(DIST) else ""
        if name in COLLECTIVES:
            self._collective(node, q, COLLECTIVES[name], assigned)
        elif q in GROUP_CALLS:
            for option in GROUP_OPTIONS:
                if any(k.arg == option for k in node.keywords):
                    self.add(node, "process-group", q, [("option", option)])

    def _collective(self, node: ast.Call, q: str, index: int, assigned) -> None:
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        tensor = node.args[index] if len(node.args) > index else next(
            (v for k, v in keywords.items() if k in ("tensor", "input", "input_tensor", "output_tensor",
                                                      "tensor_list", "output")), None)
        detail = []
        dtype = self.dtype_of(tensor, assigned, node.lineno) if tensor is not None else ""
        if dtype:
            detail.append(("dtype", dtype))
        op = keywords.get("op") or next((a for a in node.args if (self.scanner.qual(a) or "").startswith(REDUCE_OP)),
                                        None)
        reduce = self.scanner.qual(op) if op is not None else None
        if reduce is not None and reduce.startswith(REDUCE_OP):
            detail.append(("op", reduce[len(REDUCE_OP):]))
        if q.endswith(".recv") and "src" not in keywords and len(node.args) < 2:
            detail.append(("source", "any"))
        # named as the capture names the function (its module is distributed_c10d), so a captured call of it at this
        # line is the same item (score/source_cost.covering_operator): judged and costed once, as the operator
        self.add(node, "collective", f"{DIST}distributed_c10d.{q[len(DIST):]}", detail)

    def _reference(self, node: ast.Attribute | ast.Name) -> None:
        q = self.scanner.qual(node)
        if q is None or (isinstance(node, ast.Name) and q == node.id):
            return
        q = q.replace(".distributed_c10d.", ".")
        if q.startswith(REDUCE_OP):
            self.add(node, "reduce-op", q)
        elif "ddp_comm_hooks" in q and self.known(q):
            self.add(node, "comm-hook", q)
        elif q.startswith(DIST) and q[len(DIST):] not in COLLECTIVES and self.known(q):
            self.add(node, "dist-api", q)


def _first(order: tuple[int, int], node: ast.AST, held: tuple[int, int], held_node: ast.AST) -> bool:
    """Whether the node read now comes before the one holding a site, in the order the scan always read them:
    references before calls; of two in one pass an enclosing node first, else the later one (right to left)."""
    if node is held_node or order[0] != held[0]:
        return order[0] < held[0]
    if any(sub is held_node for sub in ast.walk(node)):
        return True
    if any(sub is node for sub in ast.walk(held_node)):
        return False
    return order[1] > held[1]


def scan_distributed(nodes: FileNodes, scanner: Resolver, known: Callable[[str], bool]) -> list[Site]:
    """The distributed sites of one walked file (`nodes`: walk.FileNodes; `scanner`: its PythonScanner; `known`:
    api -> the facts name it)."""
    return DistributedScanner(nodes, scanner, known).scan()
