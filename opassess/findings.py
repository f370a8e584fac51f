"""Findings stage: performance-work patterns pattern-matched on the captured graph (fusions, attention, layouts, ...).

What is matched, and with which NPU API each is replaced, is data: opassess/data/patterns.toml, loaded and
validated by load_patterns(). This module holds the matching engine and the formulas (FLOPs, layouts).

Why match on the records' edges and not with torch.fx's SubgraphMatcher: only the fx capture has a real fx
graph, and it never leaves trace.py; the export and dispatch captures (the ones large or untraceable models
get) produce the same OpNode records and (producer, consumer) edges, so matching on those works for every
capture method. The records also say more than an fx node does about what a node *is* across methods
(`x + y` is `Tensor.add` in fx and dispatch but `aten::add` in export; OpNode.entry names the ATen op of
both), so a pattern is a chain of *roles* that each list those keys. Patterns need what a literal subgraph
cannot express: optional and repeated steps (scale and mask in attention), nodes looked through (views,
casts, eval-mode dropout) and constraints on operands (x * 0.5 is a scale, x * y a gate). Chains are
followed along data-flow edges, so two ops that are adjacent in the node list but not connected never match.

Every finding names its nodes, the operator keys involved, a source line, the torch_npu API to use (None
when no fused API exists) and its effect on the score (the kind's `effect` in patterns.toml). Repeated blocks
give one finding per pattern, with the occurrence count in the title and in `metrics["occurrences"]`.
The knowledge base is asked one thing only: which dtypes torch_npu documents for an operator (mixed precision).
"""
from __future__ import annotations

import math
import re
import string
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import KnowledgeBaseError
from .records import Capture, Finding, Inventory, OpNode
from .resources import data_path

FORMAT = 1
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
DTYPE_BYTES = {"float64": 8, "int64": 8, "complex64": 8, "complex128": 16, "float32": 4, "int32": 4, "float16": 2,
               "bfloat16": 2, "int16": 2, "uint16": 2, "int8": 1, "uint8": 1, "bool": 1}
_MAX_STAR = 4  # a repeated step ("scale*") matches at most this many nodes in a row
_MAX_LOOK_THROUGH = 6  # transparent nodes looked through between two steps


# ------------------------------------------------------------------ pattern data


@dataclass(frozen=True)
class Role:
    """What a node does: the operator keys / entry ATen ops that play it, and constraints on the operands."""

    name: str
    ops: frozenset[str]
    tensor_inputs: int | None = None
    min_tensor_inputs: int | None = None
    same_shapes: bool = False
    vector_input: bool = False
    bool_index: bool = False
    dispatched: bool = False

    def admits(self, node: OpNode) -> bool:
        """The operand constraints (the key was already matched)."""
        shapes = [s for s in node.input_shapes if s is not None]
        if self.tensor_inputs is not None and len(shapes) != self.tensor_inputs:
            return False
        if self.min_tensor_inputs is not None and len(shapes) < self.min_tensor_inputs:
            return False
        if self.same_shapes and len(set(shapes)) > 1:
            return False
        if self.vector_input and not any(len(s) == 1 for s in shapes):
            return False
        if self.bool_index and "bool" not in node.input_dtypes[1:]:
            return False
        return True


@dataclass(frozen=True)
class Step:
    roles: tuple[str, ...]  # any of these
    quantifier: str  # "", "?" or "*"


@dataclass(frozen=True)
class Pattern:
    id: str
    kind: str
    title: str
    steps: tuple[Step, ...]
    npu_api: str | None
    exclusive: bool = False
    reject_inputs: tuple[str, ...] = ()
    yields_to: tuple[str, ...] = ()
    detail: str | None = None


@dataclass(frozen=True)
class PatternBook:
    """patterns.toml, validated."""

    source: Path
    roles: Mapping[str, Role]
    transparent: tuple[str, ...]
    effects: Mapping[str, str]  # finding kind -> effect sentence
    patterns: tuple[Pattern, ...]
    layout_title: str
    dynamic_titles: Mapping[str, str]  # role -> title, in checking order
    shape_branch_title: str
    shape_branch_markers: tuple[str, ...]
    precision_dtypes: tuple[str, ...]
    precision_title_dtype: str
    precision_title_float64: str
    compute_top: int
    compute_min_share: float
    compute_title: str
    _by_key: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)  # op key -> role names
    _by_aten: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)  # dispatched roles only

    def roles_of(self, node: OpNode) -> frozenset[str]:
        """Every role this node plays."""
        keys = {node.op} if node.kind == "module" else {node.op, *node.entry}
        candidates = {role for key in keys for role in self._by_key.get(key, ())}
        if self._by_aten:
            candidates |= {role for call in node.aten for role in self._by_aten.get(call.op, ())}
        return frozenset(role for role in candidates if self.roles[role].admits(node))


# Detail functions a pattern may name: (graph, matched node names) -> title fields.
_DETAILS: dict[str, tuple[Callable[[_Graph, Sequence[str]], dict[str, Any]], tuple[str, ...]]] = {}
# FLOP formulas by role, for nodes the trace left at 0 (export captures, attention on the CPU).
_FLOP_FORMULAS: dict[str, Callable[[OpNode], int | None]] = {}
# Roles this module's code refers to by name; patterns.toml must define them.
_CODE_ROLES = ("transpose", "contiguous", "compute", "slice", "matmul", "view", "conv", "linear", "sdpa", "mask",
               "repeat", "cast")


def _detail(name: str, fields: tuple[str, ...]):
    def register(fn):
        if name in _DETAILS:
            raise ValueError(f"detail function {name!r} registered twice")
        _DETAILS[name] = (fn, fields)
        return fn
    return register


def _flop_formula(role: str):
    def register(fn):
        if role in _FLOP_FORMULAS:
            raise ValueError(f"FLOP formula for role {role!r} registered twice")
        _FLOP_FORMULAS[role] = fn
        return fn
    return register


def load_patterns(path: Path | None = None) -> PatternBook:
    """Read and validate patterns.toml (the shipped one by default); errors name the file and the key."""
    path = Path(path) if path is not None else data_path("patterns.toml")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise KnowledgeBaseError(f"{path}: pattern file missing") from exc
    except tomllib.TOMLDecodeError as exc:
        raise KnowledgeBaseError(f"{path}: not valid TOML ({exc})") from exc
    return _Validator(path).book(raw)


class _Validator:
    """Turns the raw TOML into a PatternBook, raising KnowledgeBaseError('file: key: problem') on the first fault."""

    _ROLE_KEYS = {"ops": list, "tensor_inputs": int, "min_tensor_inputs": int, "same_shapes": bool,
                  "vector_input": bool, "bool_index": bool, "dispatched": bool}
    _PATTERN_KEYS = {"id": str, "kind": str, "title": str, "steps": list, "npu_api": str, "exclusive": bool,
                     "reject_inputs": list, "yields_to": list, "detail": str}

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, key: str, problem: str) -> KnowledgeBaseError:
        return KnowledgeBaseError(f"{self.path}: {key}: {problem}")

    def table(self, raw: Mapping, key: str) -> Mapping:
        value = raw.get(key)
        if not isinstance(value, dict):
            raise self.fail(key, "missing table")
        return value

    def typed(self, table: Mapping, key: str, kind: type, where: str, required: bool = True) -> Any:
        if key not in table:
            if required:
                raise self.fail(f"{where}.{key}", "missing")
            return None
        value = table[key]
        if kind is int and isinstance(value, bool) or not isinstance(value, kind):
            if not (kind is float and isinstance(value, int) and not isinstance(value, bool)):
                raise self.fail(f"{where}.{key}", f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    def known_keys(self, table: Mapping, allowed: Iterable[str], where: str) -> None:
        unknown = sorted(set(table) - set(allowed))
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}", "unknown key")

    def title(self, text: str, fields: Iterable[str], where: str) -> str:
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
        unknown = sorted(names - set(fields))
        if unknown:
            raise self.fail(where, f"unknown placeholder {{{unknown[0]}}} (known: {', '.join(sorted(fields))})")
        return text

    def book(self, raw: Mapping) -> PatternBook:
        if raw.get("format") != FORMAT:
            raise self.fail("format", f"expected {FORMAT}, got {raw.get('format')!r}")
        self.known_keys(raw, ("format", "match", "kinds", "roles", "pattern", "layout", "dynamic", "precision",
                              "compute"), "(top level)")
        roles = {name: self.role(name, spec) for name, spec in self.table(raw, "roles").items()}
        for name in _CODE_ROLES:
            if name not in roles:
                raise self.fail(f"roles.{name}", "missing (opassess/findings.py uses this role)")
        for name in _FLOP_FORMULAS:
            if name not in roles:
                raise self.fail(f"roles.{name}", "missing (a FLOP formula is keyed to it)")
        match = self.table(raw, "match")
        self.known_keys(match, ("transparent",), "match")
        transparent = tuple(self.names(self.typed(match, "transparent", list, "match"), roles, "match.transparent"))
        effects = {}
        for kind, spec in self.table(raw, "kinds").items():
            self.known_keys(spec, ("effect",), f"kinds.{kind}")
            effects[kind] = self.typed(spec, "effect", str, f"kinds.{kind}")
        for kind in ("layout-churn", "dynamic-shape", "mixed-precision", "compute"):
            if kind not in effects:
                raise self.fail(f"kinds.{kind}", "missing (opassess/findings.py emits this kind)")
        raw_patterns = raw.get("pattern", [])
        if not isinstance(raw_patterns, list) or not raw_patterns:
            raise self.fail("pattern", "expected at least one [[pattern]]")
        patterns = tuple(self.pattern(i, spec, roles, effects) for i, spec in enumerate(raw_patterns))
        ids = Counter(p.id for p in patterns)
        for pid, n in ids.items():
            if n > 1:
                raise self.fail(f"pattern[id={pid}]", "id used twice")
        for p in patterns:
            for other in p.yields_to:
                if other not in ids:
                    raise self.fail(f"pattern[id={p.id}].yields_to", f"no pattern {other!r}")
        layout, dynamic = self.table(raw, "layout"), self.table(raw, "dynamic")
        precision, compute = self.table(raw, "precision"), self.table(raw, "compute")
        self.known_keys(layout, ("title",), "layout")
        self.known_keys(dynamic, ("titles", "shape_branch_title", "shape_branch_markers"), "dynamic")
        titles = self.typed(dynamic, "titles", dict, "dynamic")
        self.names(list(titles), roles, "dynamic.titles")
        markers = self.typed(dynamic, "shape_branch_markers", list, "dynamic")
        if not markers or not all(isinstance(m, str) and m for m in markers):
            raise self.fail("dynamic.shape_branch_markers", "expected a non-empty list of error-message fragments")
        self.known_keys(precision, ("dtypes", "title_dtype", "title_float64"), "precision")
        self.known_keys(compute, ("top", "min_share", "title"), "compute")
        dtypes = self.typed(precision, "dtypes", list, "precision")
        for d in dtypes:
            if d not in FLOAT_DTYPES:
                raise self.fail("precision.dtypes", f"{d!r} is not a floating dtype")
        top = self.typed(compute, "top", int, "compute")
        share = float(self.typed(compute, "min_share", float, "compute"))
        if top < 1:
            raise self.fail("compute.top", "must be at least 1")
        if not 0 <= share <= 1:
            raise self.fail("compute.min_share", "must be between 0 and 1")
        by_key: dict[str, list[str]] = {}
        by_aten: dict[str, list[str]] = {}
        for role in roles.values():
            for key in role.ops:
                by_key.setdefault(key, []).append(role.name)
                if role.dispatched and key.startswith("aten::"):
                    by_aten.setdefault(key, []).append(role.name)
        return PatternBook(
            source=self.path, roles=roles, transparent=transparent, effects=effects, patterns=patterns,
            layout_title=self.title(self.typed(layout, "title", str, "layout"), ("count", "permutes", "copies"),
                                    "layout.title"),
            dynamic_titles={role: self.title(self.typed(titles, role, str, "dynamic.titles"),
                                             ("op", "count", "downstream"), f"dynamic.titles.{role}")
                            for role in titles},
            shape_branch_title=self.title(self.typed(dynamic, "shape_branch_title", str, "dynamic"), ("method",),
                                          "dynamic.shape_branch_title"),
            shape_branch_markers=tuple(markers),
            precision_dtypes=tuple(dtypes),
            precision_title_dtype=self.title(self.typed(precision, "title_dtype", str, "precision"),
                                             ("op", "allowed", "dtype", "count"), "precision.title_dtype"),
            precision_title_float64=self.title(self.typed(precision, "title_float64", str, "precision"),
                                               ("op", "count"), "precision.title_float64"),
            compute_top=top, compute_min_share=share,
            compute_title=self.title(self.typed(compute, "title", str, "compute"),
                                     ("op", "flops", "flops_share", "bytes", "bytes_share", "count"), "compute.title"),
            _by_key={k: tuple(v) for k, v in by_key.items()}, _by_aten={k: tuple(v) for k, v in by_aten.items()})

    def names(self, values: list, roles: Mapping[str, Role], where: str) -> list[str]:
        for value in values:
            if value not in roles:
                raise self.fail(where, f"unknown role {value!r}")
        return values

    def role(self, name: str, spec: Any) -> Role:
        where = f"roles.{name}"
        if not isinstance(spec, dict):
            raise self.fail(where, "expected a table")
        self.known_keys(spec, self._ROLE_KEYS, where)
        ops = self.typed(spec, "ops", list, where)
        if not ops or not all(isinstance(op, str) and op for op in ops):
            raise self.fail(f"{where}.ops", "expected a non-empty list of operator keys")
        options = {key: self.typed(spec, key, kind, where, required=False)
                   for key, kind in self._ROLE_KEYS.items() if key != "ops"}
        return Role(name=name, ops=frozenset(ops), **{k: v for k, v in options.items() if v is not None})

    def pattern(self, index: int, spec: Any, roles: Mapping[str, Role], effects: Mapping[str, str]) -> Pattern:
        where = f"pattern[{index}]"
        if not isinstance(spec, dict):
            raise self.fail(where, "expected a table")
        self.known_keys(spec, self._PATTERN_KEYS, where)
        pid = self.typed(spec, "id", str, where)
        where = f"pattern[id={pid}]"
        kind = self.typed(spec, "kind", str, where)
        if kind not in effects:
            raise self.fail(f"{where}.kind", f"{kind!r} has no [kinds.{kind}] entry")
        steps = []
        for text in self.typed(spec, "steps", list, where):
            if not isinstance(text, str) or not text:
                raise self.fail(f"{where}.steps", "expected role names")
            quantifier = text[-1] if text[-1] in "?*" else ""
            names = tuple(text.rstrip("?*").split("|"))
            self.names(list(names), roles, f"{where}.steps")
            steps.append(Step(names, quantifier))
        if not steps:
            raise self.fail(f"{where}.steps", "empty")
        if steps[0].quantifier:
            raise self.fail(f"{where}.steps", "the first step must be plain (no ? or *)")
        detail = self.typed(spec, "detail", str, where, required=False)
        fields: tuple[str, ...] = ("count",)
        if detail is not None:
            if detail not in _DETAILS:
                known = ", ".join(sorted(_DETAILS))
                raise self.fail(f"{where}.detail", f"no detail function {detail!r} (known: {known})")
            fields += _DETAILS[detail][1]
        reject = self.names(self.typed(spec, "reject_inputs", list, where, required=False) or [], roles,
                            f"{where}.reject_inputs")
        api = self.typed(spec, "npu_api", str, where)
        return Pattern(id=pid, kind=kind, title=self.title(self.typed(spec, "title", str, where), fields,
                                                            f"{where}.title"),
                       steps=tuple(steps), npu_api=api or None,
                       exclusive=bool(self.typed(spec, "exclusive", bool, where, required=False)),
                       reject_inputs=tuple(reject),
                       yields_to=tuple(self.typed(spec, "yields_to", list, where, required=False) or ()),
                       detail=detail)


# ------------------------------------------------------------------ the graph


class _Graph:
    """The capture's nodes with roles and data-flow neighbours, read-only."""

    def __init__(self, nodes: Sequence[OpNode], edges: Iterable[tuple[str, str]], book: PatternBook) -> None:
        self.book = book
        self.nodes = tuple(nodes)
        self.order = {node.name: i for i, node in enumerate(self.nodes)}
        self.node = {node.name: node for node in self.nodes}
        producers: dict[str, list[str]] = {name: [] for name in self.order}
        consumers: dict[str, list[str]] = {name: [] for name in self.order}
        for producer, consumer in edges:
            # Capture order is execution order; an edge pointing backwards is not data flow.
            if producer in self.order and consumer in self.order and self.order[producer] < self.order[consumer]:
                producers[consumer].append(producer)
                consumers[producer].append(consumer)
        sort = self.order.get
        self.producers = {k: tuple(sorted(set(v), key=sort)) for k, v in producers.items()}
        self.consumers = {k: tuple(sorted(set(v), key=sort)) for k, v in consumers.items()}
        self.roles = {node.name: book.roles_of(node) for node in self.nodes}
        self.transparent = frozenset(book.transparent)

    def plays(self, name: str, roles: Iterable[str]) -> bool:
        return not self.roles[name].isdisjoint(roles)

    def is_transparent(self, name: str) -> bool:
        return self.plays(name, self.transparent)

    def data_consumers(self, name: str) -> tuple[str, ...]:
        """Consumers that take this node's values. FX records an edge from x's producer to `view(b, t, c)` when the
        sizes came from x.shape; a view with more producers than tensor operands took sizes, not values."""
        out = []
        for c in self.consumers[name]:
            node = self.node[c]
            if self.plays(c, ("view",)) and len(self.producers[c]) > len(node.input_shapes):
                continue
            out.append(c)
        return tuple(out)

    def successors(self, name: str) -> Iterable[tuple[str, tuple[str, ...]]]:
        """(consumer, transparent nodes passed on the way), looking through transparent nodes."""
        stack = [(c, ()) for c in reversed(self.data_consumers(name))]
        while stack:
            c, via = stack.pop()
            if self.is_transparent(c) and len(via) < _MAX_LOOK_THROUGH:
                stack.extend((n, via + (c,)) for n in reversed(self.data_consumers(c)))
                # a transparent node may itself be a step (a cast that is also a role): offer it too
            yield c, via

    def ancestors_through_transparent(self, name: str) -> tuple[str, ...]:
        """Producers of `name`, looking back through transparent nodes."""
        out, stack, seen = [], list(self.producers[name]), set()
        while stack:
            p = stack.pop()
            if p in seen:
                continue
            seen.add(p)
            if self.is_transparent(p):
                stack.extend(self.producers[p])
            else:
                out.append(p)
        return tuple(out)


# ------------------------------------------------------------------ chain matching


def _match_chain(graph: _Graph, pattern: Pattern, start: str) -> list[str] | None:
    """The longest chain of `pattern` starting at `start`, as matched node names (transparent nodes left out)."""
    steps = pattern.steps
    if not graph.plays(start, steps[0].roles):
        return None
    if pattern.reject_inputs and any(graph.plays(p, pattern.reject_inputs)
                                     for p in graph.ancestors_through_transparent(start)):
        return None
    best: list[str] | None = None

    def extend(i: int, current: str, path: list[str], repeats: int) -> None:
        nonlocal best
        if i == len(steps):
            if best is None or len(path) > len(best):
                best = list(path)
            return
        step = steps[i]
        if step.quantifier:
            extend(i + 1, current, path, 0)
        if step.quantifier == "*" and repeats >= _MAX_STAR:
            return
        if pattern.exclusive and len(graph.data_consumers(current)) != 1:
            return
        for candidate, via in graph.successors(current):
            if candidate in path or not graph.plays(candidate, step.roles):
                continue
            if pattern.exclusive and any(len(graph.data_consumers(v)) != 1 for v in via):
                continue
            path.append(candidate)
            if step.quantifier == "*":
                extend(i, candidate, path, repeats + 1)
            else:
                extend(i + 1, candidate, path, 0)
            path.pop()

    extend(1, start, [start], 0)
    return best


def _pattern_findings(graph: _Graph) -> list[Finding]:
    book = graph.book
    matches: dict[str, list[list[str]]] = {}
    for pattern in book.patterns:
        used: set[str] = set()
        found = []
        first = frozenset(pattern.steps[0].roles)
        for node in graph.nodes:
            # only nodes playing the first step's role can start a chain (most nodes of a large model do not)
            if node.name in used or graph.roles[node.name].isdisjoint(first):
                continue
            chain = _match_chain(graph, pattern, node.name)
            if chain and used.isdisjoint(chain):
                found.append(chain)
                used.update(chain)
        matches[pattern.id] = found
    findings = []
    for pattern in book.patterns:
        stronger = {name for other in pattern.yields_to for chain in matches[other] for name in chain}
        chains = [chain for chain in matches[pattern.id] if stronger.isdisjoint(chain)]
        # One finding per pattern and arrangement: repeated blocks are counted, not listed one by one.
        groups: dict[tuple, list[tuple[list[str], dict]]] = {}
        for chain in chains:
            fields = _DETAILS[pattern.detail][0](graph, chain) if pattern.detail else {}
            key = (tuple(graph.node[n].op for n in chain), tuple(sorted(fields.items())))
            groups.setdefault(key, []).append((chain, fields))
        for (ops, _), members in groups.items():
            names = tuple(name for chain, _ in members for name in chain)
            title = pattern.title.format(count=len(members), **members[0][1])
            findings.append(Finding(
                kind=pattern.kind, title=title, nodes=names, ops=tuple(dict.fromkeys(ops)),
                source=_first_source(graph, names), npu_api=pattern.npu_api, effect=book.effects[pattern.kind],
                metrics={"occurrences": len(members)}))
    return findings


def _first_source(graph: _Graph, names: Iterable[str]) -> str | None:
    return next((graph.node[n].source for n in names if graph.node[n].source), None)


# ------------------------------------------------------------------ details: layouts and splits


def _permutation(graph: _Graph, name: str) -> tuple[int, ...] | None:
    """The axis permutation a permute/transpose/movedim node applied, from its attributes, checked on its shapes."""
    node = graph.node[name]
    if not node.input_shapes or not node.output_shapes or node.input_shapes[0] is None:
        return None
    shape_in, shape_out = node.input_shapes[0], node.output_shapes[0]
    rank = len(shape_in)
    ints = []
    for value in node.attrs.values():
        for v in (value if isinstance(value, list) else [value]):
            if isinstance(v, int) and not isinstance(v, bool):
                ints.append(v % rank if rank and -rank <= v < rank else v)
    keys = " ".join((node.op, *node.entry))
    perm: list[int] | None = None
    if "movedim" in keys or "moveaxis" in keys:
        if len(ints) >= 2 and all(0 <= i < rank for i in ints[:2]):
            rest = [d for d in range(rank) if d != ints[0]]
            rest.insert(ints[1], ints[0])
            perm = rest
    elif len(ints) == rank and sorted(ints) == list(range(rank)) and "permute" in keys:
        perm = ints
    elif len(ints) >= 2 and all(0 <= i < rank for i in ints[:2]):
        perm = list(range(rank))
        perm[ints[0]], perm[ints[1]] = perm[ints[1]], perm[ints[0]]
    if perm is None or tuple(shape_in[p] for p in perm) != tuple(shape_out):
        return None
    return tuple(perm)


@_detail("attention_layout", ("layout", "heads", "mask", "gqa"))
def _attention_layout(graph: _Graph, chain: Sequence[str]) -> dict[str, Any]:
    """npu_fusion_attention's input_layout for this attention, from the query's shape and how it was made.

    A 4-D query is (batch, heads, seq, dim): BNSD. When it comes straight from a transpose(1, 2) of a
    (batch, seq, heads, dim) view, BSND takes that view as is and the q/k/v (and output) transposes go.
    A 3-D query (batch * heads, seq, dim) is BSH with head_num 1."""
    first = chain[0]
    node = graph.node[first]
    facts = {"mask": _attention_mask(graph, chain), "gqa": _repeated_kv(graph, first)}
    q = node.input_shapes[0] if node.input_shapes else None
    if q is None or len(q) not in (3, 4):
        return {"layout": "BNSD", "heads": "?", **facts}
    if len(q) == 3:
        return {"layout": "BSH", "heads": 1, **facts}
    # Edges do not say which operand they feed, and q, k, v often share a shape: BSND only when every producer
    # of that shape is a (0, 2, 1, 3) transpose (otherwise q may be one that is not).
    candidates = [p for p in graph.producers[first] if graph.node[p].output_shapes[:1] == (q,)]
    if candidates and all(graph.plays(p, ("transpose",)) and _permutation(graph, p) == (0, 2, 1, 3)
                          for p in candidates):
        return {"layout": "BSND", "heads": q[1], **facts}
    return {"layout": "BNSD", "heads": q[1], **facts}


def _repeated_kv(graph: _Graph, name: str) -> str:
    """Grouped-query attention written with repeat_kv (expand + reshape of k and v) shortly before the attention:
    npu_fusion_attention takes fewer key/value heads than query heads, so the repeat (a copy) can go."""
    frontier, seen = [name], {name}
    for _ in range(4):  # the reshape, the expand, the unsqueeze and a transpose at most
        nxt = []
        for n in frontier:
            for p in graph.producers[n]:
                if p in seen:
                    continue
                seen.add(p)
                if graph.plays(p, ("repeat",)):
                    return ", GQA: drop repeat_kv, npu_fusion_attention takes the kv heads as they are"
                if graph.plays(p, ("view", "transpose", "slice", "cast")):
                    nxt.append(p)
        frontier = nxt
    return ""


def _attention_mask(graph: _Graph, chain: Sequence[str]) -> str:
    """How the model's mask maps onto atten_mask, where True (1) means 'masked out'."""
    node = graph.node[chain[0]]
    if graph.plays(chain[0], ("sdpa",)):
        if node.attrs.get("is_causal"):
            return "causal, atten_mask = triu(ones(S, S), 1)"
        if len(node.input_dtypes) > 3:
            return ("bool attn_mask, invert it (True keeps in SDPA)" if node.input_dtypes[3] == "bool"
                    else "additive float mask, pass it as a bool atten_mask")
        return "none"
    for name in chain:
        if not graph.plays(name, ("mask",)):
            continue
        keys = " ".join((graph.node[name].op, *graph.node[name].entry))
        if "masked_fill" in keys:
            return "masked_fill mask, same convention"
        if "where" in keys:
            return "where(keep, scores, -inf), pass ~keep"
        return "additive float mask, pass it as a bool atten_mask"
    return "none"


@_detail("mha_layout", ("layout", "heads"))
def _mha_layout(graph: _Graph, chain: Sequence[str]) -> dict[str, Any]:
    """nn.MultiheadAttention: (batch, seq, embed) when batch_first, else (seq, batch, embed)."""
    attrs = graph.node[chain[0]].attrs
    return {"layout": "BSH" if attrs.get("batch_first") else "SBH", "heads": attrs.get("num_heads", "?")}


@_detail("glu_split", ("split",))
def _glu_split(graph: _Graph, chain: Sequence[str]) -> dict[str, Any]:
    """npu_swiglu / npu_geglu take one tensor and split it themselves: say whether the model already has one."""
    from_split = any(graph.plays(p, ("slice",)) for p in graph.ancestors_through_transparent(chain[0]))
    return {"split": "pass the projection before its chunk, dim=-1" if from_split
            else "two projections: concatenate their weights into one first"}


# ------------------------------------------------------------------ layout churn


def _flow_flags(graph: _Graph, anchor: str) -> tuple[set[str], set[str]]:
    """Nodes with an `anchor`-role ancestor, and nodes with an `anchor`-role descendant (node order is topological)."""
    after: set[str] = set()
    for node in graph.nodes:
        if any(p in after or graph.plays(p, (anchor,)) for p in graph.producers[node.name]):
            after.add(node.name)
    before: set[str] = set()
    for node in reversed(graph.nodes):
        if any(c in before or graph.plays(c, (anchor,)) for c in graph.consumers[node.name]):
            before.add(node.name)
    return after, before


def _moves_channels(perm: tuple[int, ...]) -> bool:
    """The channel axis goes from position 1 to the last or back (NCHW <-> NHWC, NCL <-> NLC, NCDHW <-> NDHWC)."""
    rank = len(perm)
    return rank >= 3 and perm[0] == 0 and (perm[-1] == 1 or perm[1] == rank - 1)


def _layout_finding(graph: _Graph) -> Finding | None:
    after, before = _flow_flags(graph, "compute")
    conversions: list[str] = []
    for node in graph.nodes:
        name = node.name
        if not (name in after and name in before):
            continue  # not between two compute ops: a parameter or input reformatted once
        if graph.plays(name, ("transpose",)):
            perm = _permutation(graph, name)
            if perm is None or not _moves_channels(perm):
                continue
            if any(graph.plays(c, ("matmul",)) for c, _ in graph.successors(name)):
                continue  # a matmul takes a transposed operand through its transpose flag
            conversions.append(name)
        elif any("channels_last" in str(v) for v in node.attrs.values()):
            conversions.append(name)  # .contiguous(memory_format=torch.channels_last), .to(memory_format=...)
    counted = set(conversions)
    copies = [n.name for n in graph.nodes if graph.plays(n.name, ("contiguous",)) and n.name not in counted
              and any(p in counted for p in graph.producers[n.name])]
    if not conversions:
        return None
    names = tuple(sorted(counted | set(copies), key=graph.order.get))
    title = graph.book.layout_title.format(count=len(names), permutes=len(conversions), copies=len(copies))
    return Finding(kind="layout-churn", title=title, nodes=names,
                   ops=tuple(dict.fromkeys(graph.node[n].op for n in names)), source=_first_source(graph, names),
                   npu_api=None, effect=graph.book.effects["layout-churn"],
                   metrics={"conversions": len(names), "permutes": len(conversions), "copies": len(copies)})


# ------------------------------------------------------------------ dynamic shapes


def _dynamic_findings(graph: _Graph, capture: Capture) -> list[Finding]:
    """Ops whose output size (or the Python control flow after them) depends on the data, one finding per role
    and operator, with how many ops downstream see that size; and a forward that branches on input shapes."""
    book = graph.book
    findings = []
    seen: set[str] = set()
    for role, template in book.dynamic_titles.items():
        by_op: dict[str, list[str]] = {}
        for node in graph.nodes:
            if node.name not in seen and graph.plays(node.name, (role,)):
                by_op.setdefault(node.op, []).append(node.name)
                seen.add(node.name)
        for op, names in by_op.items():
            downstream = _descendants(graph, names)
            title = template.format(op=op, count=len(names), downstream=len(downstream))
            findings.append(Finding(kind="dynamic-shape", title=title, nodes=tuple(names), ops=(op,),
                                    source=_first_source(graph, names), npu_api=None,
                                    effect=book.effects["dynamic-shape"],
                                    metrics={"occurrences": len(names), "downstream": len(downstream)}))
    # FX proxies shapes as well as values: `if x.shape[1] > 8:` stops it with a control-flow error. When the
    # model then ran on the meta device (values unknown there), the branch was on a shape, not on data.
    for attempt in capture.attempts:
        if attempt.error and capture.device == "meta" and any(m in attempt.error for m in book.shape_branch_markers):
            findings.append(Finding(kind="dynamic-shape", title=book.shape_branch_title.format(method=attempt.method),
                                    nodes=(), ops=(), source=_error_source(attempt.error), npu_api=None,
                                    effect=book.effects["dynamic-shape"], metrics={"occurrences": 1}))
            break
    return findings


def _descendants(graph: _Graph, names: Iterable[str]) -> set[str]:
    start = set(names)
    found: set[str] = set()
    stack = list(start)
    while stack:
        for c in graph.consumers[stack.pop()]:
            if c not in found:
                found.add(c)
                stack.append(c)
    return found - start


def _error_source(error: str) -> str | None:
    """'... (at tests/models/x.py:35)' or 'node n (tests/models/x.py:35): ...' -> 'tests/models/x.py:35'."""
    m = re.search(r"([\w./-]+\.py:\d+)", error)
    return m.group(1) if m else None


# ------------------------------------------------------------------ mixed precision


def _api_candidates(op: str) -> tuple[str, ...]:
    """Documented API names to ask the knowledge base about: the key itself, and for an export capture's
    'aten::silu' the Python APIs that reach it."""
    if op.startswith("aten::"):
        base = op[len("aten::"):]
        return (f"torch.nn.functional.{base}", f"torch.{base}", f"Tensor.{base}")
    return (op,)


def _allowed_dtypes(kb: Any, op: str, attrs: Mapping[str, Any], product: str,
                    torch_version: str | None) -> tuple[str, ...] | None:
    for name in _api_candidates(op):
        fact = kb.api(name, torch_version)
        if fact is not None and fact.limitation is not None:
            allowed = fact.limitation.allowed_dtypes(product, attrs)
            if allowed is not None:
                return allowed
    return None


def _precision_findings(graph: _Graph, inventory: Inventory, kb: Any, dtype: str | None, product: str,
                        torch_version: str | None) -> list[Finding]:
    book = graph.book
    effect = book.effects["mixed-precision"]
    findings = []
    for operator in inventory.operators:
        floating = [n for n in operator.nodes if FLOAT_DTYPES.intersection((*n.input_dtypes, *n.output_dtypes))]
        if not floating:
            continue
        if dtype is not None:
            allowed = _allowed_dtypes(kb, operator.op, floating[0].attrs, product, torch_version)
            # A dtype rule that lists no floating type speaks of an index operand (nn.Embedding's ids): not this.
            if allowed is not None and FLOAT_DTYPES.intersection(allowed) and dtype not in allowed:
                names = tuple(n.name for n in floating)
                title = book.precision_title_dtype.format(op=operator.op, allowed=", ".join(allowed), dtype=dtype,
                                                          count=len(names))
                findings.append(Finding(kind="mixed-precision", title=title, nodes=names, ops=(operator.op,),
                                        source=_first_source(graph, names), npu_api=None, effect=effect,
                                        metrics={"occurrences": len(names)}))
        double = tuple(n.name for n in floating if "float64" in (*n.input_dtypes, *n.output_dtypes))
        if double:
            title = book.precision_title_float64.format(op=operator.op, count=len(double))
            findings.append(Finding(kind="mixed-precision", title=title, nodes=double, ops=(operator.op,),
                                    source=_first_source(graph, double), npu_api=None, effect=effect,
                                    metrics={"occurrences": len(double)}))
    return findings


# ------------------------------------------------------------------ compute weight


def _numel(shape: Sequence[int] | None) -> int:
    return math.prod(shape) if shape is not None else 0


@_flop_formula("conv")
def _conv_flops(node: OpNode) -> int | None:
    """2 * output elements * (input channels per group * kernel elements); the kernel from the layer's attributes,
    or from the weight operand (out, in/groups, *kernel) when the capture recorded it."""
    if not node.output_shapes or node.output_shapes[0] is None:
        return None
    attrs = node.attrs
    if "in_channels" in attrs and "kernel_size" in attrs:
        kernel = attrs["kernel_size"] if isinstance(attrs["kernel_size"], list) else [attrs["kernel_size"]]
        per_output = attrs["in_channels"] // max(1, attrs.get("groups", 1) or 1) * math.prod(kernel)
    elif len(node.input_shapes) >= 2 and node.input_shapes[1]:
        per_output = math.prod(node.input_shapes[1][1:])
    else:
        return None
    return 2 * _numel(node.output_shapes[0]) * per_output


@_flop_formula("linear")
def _linear_flops(node: OpNode) -> int | None:
    """2 * output elements * in_features (Linear 4 -> 8 on (1, 4): 2 * 8 * 4 = 64)."""
    if not node.output_shapes or node.output_shapes[0] is None or not node.input_shapes:
        return None
    k = node.attrs.get("in_features") or (node.input_shapes[0][-1] if node.input_shapes[0] else None)
    return 2 * _numel(node.output_shapes[0]) * int(k) if k else None


@_flop_formula("matmul")
def _matmul_flops(node: OpNode) -> int | None:
    """2 * output elements * the contracted size (the first operand's last dimension); baddbmm adds its input
    first, so the contracted operand is the second."""
    if not node.output_shapes or node.output_shapes[0] is None or len(node.input_shapes) < 2:
        return None
    operand = node.input_shapes[-2] if len(node.input_shapes) >= 3 else node.input_shapes[0]
    if not operand:
        return None
    return 2 * _numel(node.output_shapes[0]) * operand[-1]


@_flop_formula("sdpa")
def _attention_flops(node: OpNode) -> int | None:
    """Two batched matmuls: q @ k^T (2 * B * Sq * Sk * D) and p @ v (2 * B * Sq * Sk * Dv), B = all leading dims.
    The trace's flop counter has no formula for SDPA's CPU kernel and sees nothing on export."""
    if len(node.input_shapes) < 3 or any(s is None or len(s) < 2 for s in node.input_shapes[:3]):
        return None
    q, k, v = node.input_shapes[:3]
    batch = math.prod(q[:-2])
    return 2 * batch * q[-2] * k[-2] * q[-1] + 2 * batch * q[-2] * k[-2] * v[-1]


def _estimated_bytes(node: OpNode) -> int:
    shapes = zip((*node.input_shapes, *node.output_shapes), (*node.input_dtypes, *node.output_dtypes), strict=False)
    return sum(_numel(shape) * DTYPE_BYTES.get(dtype or "", 4) for shape, dtype in shapes)


def _node_cost(graph: _Graph, node: OpNode) -> tuple[int, int, bool]:
    """(FLOPs, bytes moved, estimated here): the trace's counts, or this module's formulas where it left 0."""
    flops, estimated = node.flops, False
    if not flops:
        for role in graph.roles[node.name]:
            formula = _FLOP_FORMULAS.get(role)
            value = formula(node) if formula else None
            if value:
                flops, estimated = value, True
                break
    nbytes = node.bytes_moved or _estimated_bytes(node)
    return flops, nbytes, estimated or (not node.bytes_moved and nbytes > 0)


def _compute_findings(graph: _Graph, inventory: Inventory) -> list[Finding]:
    book = graph.book
    totals: dict[str, list[int]] = {}
    for operator in inventory.operators:
        row = totals.setdefault(operator.op, [0, 0, 0])
        for node in operator.nodes:
            flops, nbytes, estimated = _node_cost(graph, node)
            row[0] += flops
            row[1] += nbytes
            row[2] += int(estimated)
    all_flops = sum(r[0] for r in totals.values())
    all_bytes = sum(r[1] for r in totals.values())
    chosen: list[str] = []
    for index, total in ((0, all_flops), (1, all_bytes)):
        if total <= 0:
            continue
        ranked = sorted(totals, key=lambda op: -totals[op][index])
        chosen += [op for op in ranked[:book.compute_top]
                   if totals[op][index] / total >= book.compute_min_share and op not in chosen]
    operators = {o.op: o for o in inventory.operators}
    findings = []
    for op in chosen:
        flops, nbytes, estimated = totals[op]
        names = tuple(n.name for n in operators[op].nodes)
        metrics = {"flops": flops, "bytes_moved": nbytes,
                   "flops_share": flops / all_flops if all_flops else 0.0,
                   "bytes_share": nbytes / all_bytes if all_bytes else 0.0,
                   "estimated_nodes": estimated, "occurrences": len(names)}
        title = book.compute_title.format(op=op, flops=flops, flops_share=metrics["flops_share"], bytes=nbytes,
                                          bytes_share=metrics["bytes_share"], count=len(names))
        findings.append(Finding(kind="compute", title=title, nodes=names, ops=(op,),
                                source=_first_source(graph, names), npu_api=None, effect=book.effects["compute"],
                                metrics=metrics))
    return findings


# ------------------------------------------------------------------ the stage


def find_findings(inventory: Inventory, kb: Any, *, dtype: str | None = None, product: str = "Atlas A2",
                  torch_version: str | None = None, patterns: PatternBook | None = None) -> tuple[Finding, ...]:
    """Every performance-work finding in the captured graph, in the order: patterns (as listed in patterns.toml),
    layout churn, dynamic shapes, mixed precision (float64 always; kernel dtype gaps when `dtype` is given),
    compute weight."""
    book = patterns or load_patterns()
    if dtype is not None and dtype not in book.precision_dtypes and dtype != "float32":
        raise KnowledgeBaseError(f"{book.source}: precision.dtypes: no mixed-precision check for {dtype!r} "
                                 f"(known: {', '.join(book.precision_dtypes)})")
    if dtype not in (None, "float32") and kb is None:
        raise KnowledgeBaseError(f"the mixed-precision check for {dtype} needs the knowledge base (kb is None)")
    capture = inventory.capture
    graph = _Graph(capture.nodes, capture.edges, book)
    findings = _pattern_findings(graph)
    layout = _layout_finding(graph)
    if layout is not None:
        findings.append(layout)
    findings += _dynamic_findings(graph, capture)
    findings += _precision_findings(graph, inventory, kb, dtype if dtype != "float32" else None, product,
                                    torch_version)
    findings += _compute_findings(graph, inventory)
    return tuple(findings)
