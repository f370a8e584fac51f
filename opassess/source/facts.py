"""The source-level Ascend facts (kb/source_facts.json, built by tools/kb_source.py) behind lookups by qualified name.

Names are the dotted paths code imports from: `torch.cuda.set_device`, `flash_attn.flash_attn_func`,
`apex.optimizers.FusedAdam`, `triton.language.atomic_add` (the `tl.` alias is accepted too). Every record keeps
its table and row so a finding can cite it as e.g. "cuda_api_migration.tsv:30".
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from ..errors import KnowledgeBaseError
from ..resources import data_path

FACTS_FILE = "kb/source_facts.json"
SUPPORTED_FORMAT = 1


@dataclass(frozen=True)
class Patch:
    """One API transfer_to_npu patches: kind (module-swap, device-arg-rewrite, rebind, ...) and the statement line."""

    api: str
    kind: str
    effect: str
    source_line: int | None
    row: int

    @property
    def cite(self) -> str:
        where = f" (transfer_to_npu.py L{self.source_line})" if self.source_line else ""
        return f"transfer_to_npu_patches.tsv:{self.row} {self.kind}{where}"


@dataclass(frozen=True)
class MigrationRule:
    """One GPU-only API or pattern and how the transfer_to_npu route handles it (cuda_api_migration.tsv)."""

    row: int
    pattern: str
    form: str
    apis: tuple[str, ...]
    literals: tuple[str, ...]
    imports: tuple[str, ...]
    condition: tuple[tuple[str, str], ...]
    handling: str
    npu_equivalent: str
    gpu2ascend: str
    evidence: tuple[str, ...]

    @property
    def cite(self) -> str:
        first = f" ({self.evidence[0]})" if self.evidence else ""
        return f"cuda_api_migration.tsv:{self.row} {self.handling}{first}"

    def applies(self, kwargs: dict[str, str]) -> bool:
        """Whether the row's call condition ('with map_location', "backend='cudagraphs'") holds for these kwargs."""
        cond = dict(self.condition)
        if "absent" in cond:
            return cond["absent"] not in kwargs
        if "present" in cond and cond["present"] != "device":
            if cond["present"] not in kwargs:
                return False
            return "value" not in cond or kwargs[cond["present"]] == cond["value"]
        return True


@dataclass(frozen=True)
class KernelLibrary:
    """One third-party kernel library entry-point group and its NPU route (third_party_kernel_libs.tsv)."""

    row: int
    library: str
    context: str
    modules: tuple[str, ...]
    symbols: tuple[str, ...]
    route: str
    route_kind: str
    dropped: str
    category: str
    category_note: str
    as_of: str
    # the op's documented constraints the route states (tools/kb_source.py route_constraints): name -> values, words
    constraints: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, hash=False, compare=False)

    @property
    def cite(self) -> str:
        context = f" ({self.context})" if self.context else ""
        return f"third_party_kernel_libs.tsv:{self.row} {self.library}{context}"

    def dropped_args(self, kwargs) -> tuple[str, ...]:
        """The keyword arguments among `kwargs` that the row's dropped-features text names (whole words)."""
        words = _words(self.dropped)
        return tuple(sorted(k for k in kwargs if k in words))

    def dropped_clauses(self, kwargs) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The row's dropped-features clauses that name one of the keyword arguments in `kwargs`, and the others,
        each in the row's order: the whole text, each clause once."""
        parts = clauses(self.dropped)
        named = tuple(part for part in parts if any(k in _words(part) for k in kwargs))
        return named, tuple(part for part in parts if part not in named)


def clauses(text: str) -> tuple[str, ...]:
    """`text`'s '; '-separated clauses, stripped; a ';' inside brackets stays in its clause:
    'a (b; c); d' -> ('a (b; c)', 'd')."""
    found, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if char == ";" and depth <= 0:
            found.append(text[start:index])
            start = index + 1
    found.append(text[start:])
    return tuple(clause.strip() for clause in found if clause.strip())


def _words(text: str) -> set[str]:
    """The whole words of a dropped-features text an argument's name is matched against."""
    return set(text.replace(",", " ").replace(";", " ").replace("(", " ").split())


@dataclass(frozen=True)
class TritonApi:
    """What triton-ascend lacks for one Triton API: dtypes, argument constraints, limits."""

    name: str
    row: int
    unsupported_dtypes: tuple[str, ...]
    unsupported_args: tuple[tuple[str, str, str], ...]
    limit: str
    ascend_dtypes: tuple[str, ...]

    @property
    def cite(self) -> str:
        return f"triton_ascend_api_limits.tsv:{self.row} {self.name}"


@dataclass(frozen=True)
class TritonRule:
    """A general triton-ascend porting rule (grid bound, UB size, alignment ...)."""

    name: str
    row: int
    limit: str
    citations: tuple[str, ...]

    @property
    def cite(self) -> str:
        return f"triton_ascend_api_limits.tsv:{self.row} [rule] {self.name}"


class SourceFacts:
    """Lookups over source_facts.json; build with load_source_facts()."""

    def __init__(self, data: dict, path: Path):
        if data.get("format") != SUPPORTED_FORMAT:
            raise KnowledgeBaseError(f"{path}: format {data.get('format')!r}, expected {SUPPORTED_FORMAT}")
        self.path = path
        self._data = data
        self._relevant: dict[str, bool] = {}
        self._module_rows: dict[str, tuple[KernelLibrary, ...]] = {}

    @property
    def provenance(self) -> dict:
        """Generator, date, source tables (sha256, rows) and upstream commits of the facts."""
        return {k: self._data[k] for k in ("generator", "generated_at", "sources", "upstream")}

    @cached_property
    def _patches(self) -> dict[str, tuple[Patch, ...]]:
        return {api: tuple(Patch(api, kind, effect, line, row) for kind, line, effect, row in rows)
                for api, rows in self._data["patches"].items()}

    @cached_property
    def rules(self) -> tuple[MigrationRule, ...]:
        """Every cuda_api_migration row, in table order."""
        return tuple(MigrationRule(
            r["row"], r["pattern"], r["form"], tuple(r.get("apis", ())), tuple(r.get("literals", ())),
            tuple(r.get("imports", ())), tuple(sorted(r.get("condition", {}).items())), r["handling"],
            r.get("npu_equivalent", ""), r.get("gpu2ascend", ""), tuple(r.get("evidence", ())))
            for r in self._data["migration"])

    @cached_property
    def libraries(self) -> tuple[KernelLibrary, ...]:
        """Every third_party_kernel_libs row, in table order."""
        return tuple(KernelLibrary(
            r["row"], r["library"], r["context"], tuple(r["modules"]), tuple(r["symbols"]), r["route"],
            r["route_kind"], r["dropped"], r["category"], r["category_note"], r["as_of"], r.get("constraints", {}))
            for r in self._data["libraries"])

    @cached_property
    def _triton(self) -> dict[str, TritonApi]:
        return {name: TritonApi(name, e["row"], tuple(e.get("unsupported_dtypes", ())),
                                tuple(tuple(a) for a in e.get("unsupported_args", ())), e.get("limit", ""),
                                tuple(e.get("ascend_dtypes", ())))
                for name, e in self._data["triton"]["apis"].items()}

    @cached_property
    def triton_rules(self) -> tuple[TritonRule, ...]:
        """The general porting rules of triton-ascend."""
        return tuple(TritonRule(r["name"], r["row"], r.get("limit", ""), tuple(r.get("citations", ())))
                     for r in self._data["triton"]["rules"])

    # ------------------------------------------------------------------ indexes (built once per facts file)

    @cached_property
    def _rules_by_api(self) -> dict[str, tuple[MigrationRule, ...]]:
        found: dict[str, list[MigrationRule]] = {}
        for rule in self.rules:
            for api in dict.fromkeys(rule.apis):
                found.setdefault(api, []).append(rule)
        return {api: tuple(rules) for api, rules in found.items()}

    @cached_property
    def _wildcard_rules(self) -> tuple[tuple[MigrationRule, tuple[str, ...]], ...]:
        """The rows with a wildcard API pattern ('torch.cuda.*'), in table order, with those patterns."""
        return tuple((rule, patterns) for rule in self.rules
                     if (patterns := tuple(p for p in rule.apis if "*" in p)))

    def _first_by(self, field: str) -> dict[str, MigrationRule]:
        found: dict[str, MigrationRule] = {}
        for rule in self.rules:
            for value in getattr(rule, field):
                found.setdefault(value, rule)
        return found

    @cached_property
    def _rules_by_literal(self) -> dict[str, MigrationRule]:
        return self._first_by("literals")

    @cached_property
    def _rules_by_import(self) -> dict[str, MigrationRule]:
        return self._first_by("imports")

    @cached_property
    def _libraries_by_symbol(self) -> dict[str, tuple[KernelLibrary, ...]]:
        return self._index_libraries(lambda symbol: symbol)

    @cached_property
    def _libraries_by_ends(self) -> dict[str, tuple[KernelLibrary, ...]]:
        """'root last' -> rows with a symbol of that module root and last name (flash_attn ... flash_attn_func)."""
        return self._index_libraries(lambda symbol: f"{symbol.split('.')[0]} {symbol.rsplit('.', 1)[-1]}")

    def _index_libraries(self, key) -> dict[str, tuple[KernelLibrary, ...]]:
        found: dict[str, dict[int, KernelLibrary]] = {}
        for index, lib in enumerate(self.libraries):
            for symbol in lib.symbols:
                found.setdefault(key(symbol), {})[index] = lib  # each row once, in table order
        return {name: tuple(rows.values()) for name, rows in found.items()}

    @cached_property
    def _libraries_by_module(self) -> dict[str, tuple[int, ...]]:
        """Import name -> the table indexes of the rows listing it."""
        found: dict[str, dict[int, None]] = {}
        for index, lib in enumerate(self.libraries):
            for module in lib.modules:
                found.setdefault(module, {})[index] = None
        return {module: tuple(rows) for module, rows in found.items()}

    # ------------------------------------------------------------------ lookups

    def patches(self, api: str) -> tuple[Patch, ...]:
        """The transfer_to_npu patches of `api`, in table order (empty when it is not patched)."""
        return self._patches.get(api, ())

    def migration(self, api: str, kwargs: dict[str, str] | None = None) -> MigrationRule | None:
        """The cuda_api_migration row naming `api`: exact names first, then wildcards; conditions checked on kwargs."""
        kwargs = kwargs or {}
        exact = next((r for r in self._rules_by_api.get(api, ()) if r.applies(kwargs)), None)
        if exact is not None:
            return exact
        for rule, patterns in self._wildcard_rules:
            if not rule.applies(kwargs):
                continue
            if any(fnmatchcase(api, p) for p in patterns):
                patched = dict(rule.condition).get("patched")
                if patched and not any(p.kind == patched for p in self.patches(api)):
                    continue
                return rule
        return None

    def migration_for_literal(self, literal: str) -> MigrationRule | None:
        """The row about a string literal ('nccl', 'NCCL', 'cuda') in comparisons or arguments."""
        return self._rules_by_literal.get(literal)

    def migration_for_import(self, module: str) -> MigrationRule | None:
        """The row about importing `module` (e.g. amp_C)."""
        return self._rules_by_import.get(module)

    def library_rows(self, api: str) -> tuple[KernelLibrary, ...]:
        """Library rows listing `api`; a symbol re-exported from a submodule matches by module root and last name."""
        exact = self._libraries_by_symbol.get(api)
        if exact:
            return exact
        return self._libraries_by_ends.get(f"{api.split('.')[0]} {api.rsplit('.', 1)[-1]}", ())

    def libraries_for_module(self, module: str) -> tuple[KernelLibrary, ...]:
        """Every library row whose import names cover `module` (flash_attn.bert_padding -> flash_attn), in table
        order."""
        rows = self._module_rows.get(module)
        if rows is None:
            parts = module.split(".")
            indexes = {i for end in range(1, len(parts) + 1)
                       for i in self._libraries_by_module.get(".".join(parts[:end]), ())}
            rows = self._module_rows[module] = tuple(self.libraries[i] for i in sorted(indexes))
        return rows

    def library_for_module(self, module: str) -> KernelLibrary | None:
        """The first library row whose import names cover `module` (flash_attn.bert_padding -> flash_attn)."""
        return next((lib for lib in self.libraries_for_module(module) if lib.library != "torch"), None)

    def triton_api(self, name: str) -> TritonApi | None:
        """The triton-ascend limits of a Triton API ('triton.language.dot', 'tl.dot' or 'triton.Config')."""
        if name.startswith("tl."):
            name = "triton.language." + name[3:]
        return self._triton.get(name)

    def triton_rule(self, word: str) -> TritonRule | None:
        """The first porting rule whose name contains `word` (e.g. 'coreDim', 'unified buffer')."""
        return next((r for r in self.triton_rules if word in r.name), None)

    def is_relevant(self, api: str) -> bool:
        """Whether a qualified name is a GPU-specific construct the facts speak about (memoised per name)."""
        known = self._relevant.get(api)
        if known is None:
            known = self._relevant[api] = self._is_relevant(api)
        return known

    def _is_relevant(self, api: str) -> bool:
        if api.startswith(("torch.cuda.", "torch.backends.cudnn.", "torch.backends.cuda.")):
            return True
        if self.migration(api) is not None or self.library_rows(api):
            return True
        return any(p.kind != "device-arg-rewrite" for p in self.patches(api))


@cache
def _load(path: str) -> SourceFacts:
    from ..datafile import read_generated

    return read_generated(path, "source facts table", "tools/kb_source.py", SourceFacts)


def load_source_facts(path: Path | None = None) -> SourceFacts:
    """The shipped source facts (read once per process), or those at `path`."""
    return _load(str(path or data_path(FACTS_FILE)))
