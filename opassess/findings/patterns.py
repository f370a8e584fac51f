"""The pattern book: opassess/data/patterns.toml read and validated into frozen records (roles, patterns, titles).

Validation strategy: the file is read through the one strict reader (`opassess.datafile`), table by table.
Each fixed-shape table first refuses keys it does not know (`only`), so a typo (`same_shape`, `[layuot]`,
`npu_apii`, `title_f64`) is named as the unknown key rather than reported as some other key missing; then every
key is read with a typed getter, and `finish()` closes the table. Cross-references are checked as they are met:
every role a step, `transparent`, `reject_inputs` or `dynamic.titles` names exists; every pattern kind has a
`[kinds.X]` entry; `yields_to` names real pattern ids; title placeholders are fields the title is given; and the
roles, finding kinds and detail functions the code registers (`findings.registry`) are all there. The first
fault raises one KnowledgeBaseError line, 'FILE: dotted.key: problem' (the shape this file's errors have always
had: `pattern[id=rmsnorm].title: unknown placeholder {n}`).
"""
from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..datafile import TomlTable
from ..dtypes import FLOAT_DTYPES
from ..errors import KnowledgeBaseError, OpassessError
from ..records import OpNode
from ..resources import data_path
from . import registry

FORMAT = 1
# What a finding kind's `criterion` may name: a score criterion of weights.toml (tests/test_vocabulary.py ties these to
# score.weights.CRITERIA), or "impact" for a kind that describes and scores nothing (the risk matrix reads it).
IMPACT = "impact"  # the criterion of a kind that describes and fixes nothing (a share of compute)
FINDING_CRITERIA = ("fusion", "memory_layout", "dtype_support", "pipeline", IMPACT)


@dataclass(frozen=True)
class FindingKind:
    """One [kinds.X] entry: the vocabulary of records.Finding.kind, declared once (scoring and the time model read
    it here)."""

    name: str
    criterion: str  # one of FINDING_CRITERIA
    fused: bool  # a fused NPU op takes the chain whole (perf: the other members' time is at risk)
    effect: str  # the sentence a report shows


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
    # roles the last step's other operands must come from (through transparent nodes); () accepts any
    partner_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class PatternBook:
    """patterns.toml, validated."""

    source: Path
    roles: Mapping[str, Role]
    transparent: tuple[str, ...]
    kinds: Mapping[str, FindingKind]  # every finding kind, in the file's order
    patterns: tuple[Pattern, ...]
    layout_title: str
    dynamic_titles: Mapping[str, str]  # role -> title, in checking order
    shape_branch_title: str
    shape_branch_markers: tuple[str, ...]
    aclop_title: str  # an aclop-only kernel fed a data-dependent size
    precision_dtypes: tuple[str, ...]
    precision_title_dtype: str
    precision_title_float64: str
    precision_title_refused: str
    compute_top: int
    compute_min_share: float
    compute_title: str
    _by_key: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)  # op key -> role names
    _by_aten: Mapping[str, tuple[str, ...]] = field(default_factory=dict, repr=False)  # dispatched roles only

    @property
    def effects(self) -> Mapping[str, str]:
        """finding kind -> effect sentence."""
        return {name: kind.effect for name, kind in self.kinds.items()}

    @property
    def fused_kinds(self) -> frozenset[str]:
        """The kinds whose fused NPU op takes the chain whole."""
        return frozenset(name for name, kind in self.kinds.items() if kind.fused)

    def criterion_of(self, kind: str) -> str:
        """The score criterion a finding of this kind raises; a kind the book does not list counts as a fusion."""
        known = self.kinds.get(kind)
        return known.criterion if known is not None else "fusion"

    def texts(self) -> tuple[str, ...]:
        """Every sentence of the file a report shows (effects and titles): the message ids the catalog translates."""
        return tuple(dict.fromkeys((*self.effects.values(), *(p.title for p in self.patterns), self.layout_title,
                                    *self.dynamic_titles.values(), self.shape_branch_title, self.aclop_title,
                                    self.precision_title_dtype, self.precision_title_float64,
                                    self.precision_title_refused, self.compute_title)))

    def roles_of(self, node: OpNode) -> frozenset[str]:
        """Every role this node plays."""
        keys = {node.key} if node.kind == "module" else {node.key, *node.entry_names}
        candidates = {role for key in keys for role in self._by_key.get(key, ())}
        if self._by_aten:
            candidates |= {role for call in node.aten for role in self._by_aten.get(call.op, ())}
        return frozenset(role for role in candidates if self.roles[role].admits(node))


def load_patterns(path: Path | None = None) -> PatternBook:
    """Read and validate patterns.toml (the shipped one by default); errors name the file and the key."""
    path = Path(path) if path is not None else data_path("patterns.toml")
    root = PatternTable.of_file(path, "pattern file", KnowledgeBaseError)
    return _Validator(path).book(root)


@lru_cache(maxsize=1)
def shipped_patterns() -> PatternBook:
    """The shipped pattern book, read once per process (scoring and the weights check read its kinds)."""
    return load_patterns()


def unknown_kinds(kinds: Iterable[str]) -> list[str]:
    """The finding kinds among `kinds` the shipped pattern book does not declare, in order."""
    known = shipped_patterns().kinds
    return [kind for kind in kinds if kind not in known]


class PatternTable(TomlTable):
    """A TomlTable whose errors read 'FILE: dotted.key: problem' (its sub-tables are PatternTables too)."""

    def error(self, key: str, problem: str) -> OpassessError:
        return KnowledgeBaseError(f"{self.file_of(key)}: {self.key(key)}: {problem}")

    def only(self, *allowed: str) -> None:
        """Refuse an unknown key before reading the known ones: a mistyped optional key is named as the typo it is
        rather than reported later as some other key missing."""
        unknown = [key for key in self.keys() if key not in allowed]
        if unknown:
            raise self.error(unknown[0], "unknown key")


class _Validator:
    """Turns patterns.toml into a PatternBook: tables read strictly, then the cross-references checked."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def book(self, root: PatternTable) -> PatternBook:
        """The book, one table at a time in the file's order; the root finished last (an unknown table refused)."""
        found = root.value("format", None)
        if found != FORMAT:
            raise root.error("format", f"expected {FORMAT}, got {found!r}")
        root.only("format", "match", "kinds", "roles", "pattern", "layout", "dynamic", "precision", "compute")
        roles = self.roles(root.table("roles"))
        match = root.table("match")
        match.only("transparent")
        transparent = self.names(match, "transparent", roles)
        match.finish()
        kinds = self.kinds(root.table("kinds"))
        patterns = self.patterns(root, roles, kinds)
        layout = root.table("layout")
        layout.only("title")
        layout_title = self.title(layout, "title", ("count", "permutes", "copies"))
        layout.finish()
        dynamic_titles, shape_branch_title, markers, aclop_title = self.dynamic(root.table("dynamic"), roles)
        dtypes, title_dtype, title_float64, title_refused = self.precision(root.table("precision"))
        top, share, compute_title = self.compute(root.table("compute"))
        root.finish()
        by_key: dict[str, list[str]] = {}
        by_aten: dict[str, list[str]] = {}
        for defined in roles.values():
            for key in defined.ops:
                by_key.setdefault(key, []).append(defined.name)
                if defined.dispatched and key.startswith("aten::"):
                    by_aten.setdefault(key, []).append(defined.name)
        return PatternBook(
            source=self.path, roles=roles, transparent=transparent, kinds=kinds, patterns=patterns,
            layout_title=layout_title, dynamic_titles=dynamic_titles, shape_branch_title=shape_branch_title,
            shape_branch_markers=markers, aclop_title=aclop_title, precision_dtypes=dtypes,
            precision_title_dtype=title_dtype, precision_title_float64=title_float64,
            precision_title_refused=title_refused, compute_top=top, compute_min_share=share,
            compute_title=compute_title,
            _by_key={k: tuple(v) for k, v in by_key.items()}, _by_aten={k: tuple(v) for k, v in by_aten.items()})

    def roles(self, table: PatternTable) -> dict[str, Role]:
        """[roles]: every role, and every role the code registered (findings/registry.py) defined."""
        roles = {name: self.role(table.table(name), name) for name in table.keys()}
        for name, why in registry.registered_roles().items():
            if name not in roles:
                raise table.error(name, f"missing ({why})")
        return roles

    def kinds(self, table: PatternTable) -> dict[str, FindingKind]:
        """[kinds]: every finding kind (those the code emits included), its criterion, fused flag and effect; an
        effect naming a criterion ('performance.fusion: ...') names the kind's own."""
        kinds = {}
        for name in table.keys():
            spec = table.table(name)
            spec.only("criterion", "fused", "effect")
            criterion = spec.string("criterion")
            if criterion not in FINDING_CRITERIA:
                raise spec.error("criterion", f"unknown criterion {criterion!r} (known: {', '.join(FINDING_CRITERIA)})")
            effect = spec.string("effect")
            named = effect.partition(":")[0].rpartition(".")[2]
            if named in FINDING_CRITERIA and named != criterion:
                raise spec.error("effect", f"names criterion {named!r}, the kind's criterion is {criterion!r}")
            kinds[name] = FindingKind(name, criterion, spec.boolean("fused"), effect)
            spec.finish()
        for name, module in registry.CODE_KINDS.items():
            if name not in kinds:
                raise table.error(name, f"missing ({module} emits this kind)")
        return kinds

    def dynamic(self, dynamic: PatternTable, roles: Mapping[str, Role]
                ) -> tuple[dict[str, str], str, tuple[str, ...], str]:
        """[dynamic]: titles per role, the shape-branch title and its error-message markers, the aclop title."""
        dynamic.only("titles", "shape_branch_title", "shape_branch_markers", "aclop_title")
        titles = dynamic.table("titles")
        dynamic_titles = {}
        for role in titles.keys():
            if role not in roles:
                raise dynamic.error("titles", f"unknown role {role!r}")
            dynamic_titles[role] = self.title(titles, role, ("op", "count", "downstream"))
        titles.finish()
        markers = dynamic.strings("shape_branch_markers")
        if not markers or not all(markers):
            raise dynamic.error("shape_branch_markers", "expected a non-empty list of error-message fragments")
        shape_branch_title = self.title(dynamic, "shape_branch_title", ("method",))
        aclop_title = self.title(dynamic, "aclop_title", ("op", "aten", "count", "sources"))
        dynamic.finish()
        return dynamic_titles, shape_branch_title, markers, aclop_title

    def precision(self, precision: PatternTable) -> tuple[tuple[str, ...], str, str, str]:
        """[precision]: the floating dtypes the check allows, and its three titles."""
        precision.only("dtypes", "title_dtype", "title_float64", "title_refused")
        dtypes = precision.strings("dtypes")
        for dtype in dtypes:
            if dtype not in FLOAT_DTYPES:
                raise precision.error("dtypes", f"{dtype!r} is not a floating dtype")
        title_dtype = self.title(precision, "title_dtype", ("op", "allowed", "dtype", "count"))
        title_float64 = self.title(precision, "title_float64", ("op", "count"))
        title_refused = self.title(precision, "title_refused", ("op", "dtype", "aten", "count"))
        precision.finish()
        return dtypes, title_dtype, title_float64, title_refused

    def compute(self, compute: PatternTable) -> tuple[int, float, str]:
        """[compute]: how many of the costliest operators to name, the least share named, and the title."""
        compute.only("top", "min_share", "title")
        top = compute.integer("top")
        if top < 1:
            raise compute.error("top", "must be at least 1")
        share = compute.number("min_share")
        if share > 1:
            raise compute.error("min_share", "must be between 0 and 1")
        compute_title = self.title(compute, "title", ("op", "flops", "flops_share", "bytes", "bytes_share", "count"))
        compute.finish()
        return top, share, compute_title

    def title(self, table: PatternTable, key: str, fields: Iterable[str]) -> str:
        """A title string whose {placeholders} are all among `fields`."""
        text = table.string(key)
        names = {name for _, name, _, _ in string.Formatter().parse(text) if name}
        unknown = sorted(names - set(fields))
        if unknown:
            raise table.error(key, f"unknown placeholder {{{unknown[0]}}} (known: {', '.join(sorted(fields))})")
        return text

    def names(self, table: PatternTable, key: str, roles: Mapping[str, Role], *default: tuple[str, ...]
              ) -> tuple[str, ...]:
        """A list of role names, each defined under [roles] (optional when a default is given)."""
        values = table.strings(key, *default)
        for value in values:
            if value not in roles:
                raise table.error(key, f"unknown role {value!r}")
        return values

    def role(self, spec: PatternTable, name: str) -> Role:
        spec.only("ops", "tensor_inputs", "min_tensor_inputs", "same_shapes", "vector_input", "bool_index",
                  "dispatched")
        ops = spec.strings("ops")
        if not ops or not all(ops):
            raise spec.error("ops", "expected a non-empty list of operator keys")
        role = Role(name=name, ops=frozenset(ops), tensor_inputs=spec.integer("tensor_inputs", None),
                    min_tensor_inputs=spec.integer("min_tensor_inputs", None),
                    same_shapes=spec.boolean("same_shapes", False), vector_input=spec.boolean("vector_input", False),
                    bool_index=spec.boolean("bool_index", False), dispatched=spec.boolean("dispatched", False))
        spec.finish()
        return role

    def patterns(self, root: PatternTable, roles: Mapping[str, Role], kinds: Mapping[str, FindingKind]
                 ) -> tuple[Pattern, ...]:
        patterns = []
        for item in root.tables("pattern"):
            pid = item.value("id", None)  # messages name a pattern by its id once it has one: pattern[id=ffn].steps
            spec = item.renamed(f"pattern[id={pid}].") if isinstance(pid, str) else item
            spec.only("id", "kind", "title", "steps", "npu_api", "exclusive", "reject_inputs", "yields_to", "detail",
                      "partner_from")
            patterns.append(self.pattern(spec, roles, kinds))
        if not patterns:
            raise root.error("pattern", "expected at least one [[pattern]]")
        ids = Counter(p.id for p in patterns)
        for pid, n in ids.items():
            if n > 1:
                raise root.error(f"pattern[id={pid}]", "id used twice")
        for p in patterns:
            for other in p.yields_to:
                if other not in ids:
                    raise root.error(f"pattern[id={p.id}].yields_to", f"no pattern {other!r}")
        return tuple(patterns)

    def pattern(self, spec: PatternTable, roles: Mapping[str, Role], kinds: Mapping[str, FindingKind]) -> Pattern:
        pid = spec.string("id")
        kind = spec.string("kind")
        if kind not in kinds:
            raise spec.error("kind", f"{kind!r} has no [kinds.{kind}] entry")
        steps = []
        for text in spec.strings("steps"):
            if not text:
                raise spec.error("steps", "expected role names")
            quantifier = text[-1] if text[-1] in "?*" else ""
            names = tuple(text.rstrip("?*").split("|"))
            for name in names:
                if name not in roles:
                    raise spec.error("steps", f"unknown role {name!r}")
            steps.append(Step(names, quantifier))
        if not steps:
            raise spec.error("steps", "empty")
        if steps[0].quantifier:
            raise spec.error("steps", "the first step must be plain (no ? or *)")
        detail = spec.string("detail", None)
        fields: tuple[str, ...] = ("count",)
        if detail is not None:
            if detail not in registry.DETAILS:
                known = ", ".join(sorted(registry.DETAILS))
                raise spec.error("detail", f"no detail function {detail!r} (known: {known})")
            fields += registry.DETAILS[detail][1]
        pattern = Pattern(id=pid, kind=kind, title=self.title(spec, "title", fields), steps=tuple(steps),
                          npu_api=spec.string("npu_api") or None, exclusive=spec.boolean("exclusive", False),
                          reject_inputs=self.names(spec, "reject_inputs", roles, ()),
                          yields_to=spec.strings("yields_to", ()), detail=detail,
                          partner_from=self.names(spec, "partner_from", roles, ()))
        spec.finish()
        return pattern
