"""The source-level Ascend facts (kb/source_facts.json, built by tools/kb_source.py) behind lookups by qualified name.

Names are the dotted paths code imports from: `torch.cuda.set_device`, `flash_attn.flash_attn_func`,
`apex.optimizers.FusedAdam`, `triton.language.atomic_add` (the `tl.` alias is accepted too). Every record keeps
its table and row so a finding can cite it as e.g. "cuda_api_migration.tsv:30".
"""
from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache, cached_property
from pathlib import Path

from ..errors import KnowledgeBaseError
from ..kb.store import KnowledgeBase
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

    @property
    def cite(self) -> str:
        context = f" ({self.context})" if self.context else ""
        return f"third_party_kernel_libs.tsv:{self.row} {self.library}{context}"

    def dropped_args(self, kwargs) -> tuple[str, ...]:
        """The keyword arguments among `kwargs` that the row's dropped-features text names (whole words)."""
        words = set(self.dropped.replace(",", " ").replace(";", " ").replace("(", " ").split())
        return tuple(sorted(k for k in kwargs if k in words))


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
            r["route_kind"], r["dropped"], r["category"], r["category_note"], r["as_of"])
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

    # ------------------------------------------------------------------ lookups

    def patches(self, api: str) -> tuple[Patch, ...]:
        """The transfer_to_npu patches of `api`, in table order (empty when it is not patched)."""
        return self._patches.get(api, ())

    def migration(self, api: str, kwargs: dict[str, str] | None = None) -> MigrationRule | None:
        """The cuda_api_migration row naming `api`: exact names first, then wildcards; conditions checked on kwargs."""
        kwargs = kwargs or {}
        exact = [r for r in self.rules if api in r.apis and r.applies(kwargs)]
        if exact:
            return exact[0]
        for rule in self.rules:
            if not rule.applies(kwargs):
                continue
            if any("*" in p and fnmatchcase(api, p) for p in rule.apis):
                patched = dict(rule.condition).get("patched")
                if patched and not any(p.kind == patched for p in self.patches(api)):
                    continue
                return rule
        return None

    def migration_for_literal(self, literal: str) -> MigrationRule | None:
        """The row about a string literal ('nccl', 'NCCL', 'cuda') in comparisons or arguments."""
        return next((r for r in self.rules if literal in r.literals), None)

    def migration_for_import(self, module: str) -> MigrationRule | None:
        """The row about importing `module` (e.g. amp_C)."""
        return next((r for r in self.rules if module in r.imports), None)

    def library_rows(self, api: str) -> tuple[KernelLibrary, ...]:
        """Library rows listing `api`; a symbol re-exported from a submodule matches by module root and last name."""
        exact = tuple(lib for lib in self.libraries if api in lib.symbols)
        if exact:
            return exact
        root, last = api.split(".")[0], api.rsplit(".", 1)[-1]
        return tuple(lib for lib in self.libraries
                     if any(s.split(".")[0] == root and s.rsplit(".", 1)[-1] == last for s in lib.symbols))

    def library_for_module(self, module: str) -> KernelLibrary | None:
        """The first library row whose import names cover `module` (flash_attn.bert_padding -> flash_attn)."""
        for lib in self.libraries:
            if lib.library == "torch":
                continue
            if any(module == m or module.startswith(m + ".") for m in lib.modules):
                return lib
        return None

    def triton_api(self, name: str) -> TritonApi | None:
        """The triton-ascend limits of a Triton API ('triton.language.dot', 'tl.dot' or 'triton.Config')."""
        if name.startswith("tl."):
            name = "triton.language." + name[3:]
        return self._triton.get(name)

    def triton_rule(self, word: str) -> TritonRule | None:
        """The first porting rule whose name contains `word` (e.g. 'coreDim', 'unified buffer')."""
        return next((r for r in self.triton_rules if word in r.name), None)

    @cached_property
    def npu_op_names(self) -> tuple[str, ...]:
        """torch_npu's own ops (npu_rotary_mul, ...) from the shipped kb/custom_ops.json, for name matching."""
        shipped = KnowledgeBase(data_path("kb"), data_path("rules.toml"), data_path("error_codes.toml"))
        return tuple(sorted(name for name in shipped.custom_op_names() if name.startswith("npu_")))

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
