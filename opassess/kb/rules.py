"""The curated rules (rules.toml): their records and the loader that checks every name against the facts."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from opassess.datafile import TomlTable
from opassess.errors import KnowledgeBaseError
from opassess.kb.products import KERNEL_COLUMNS
from opassess.vocabulary import CATEGORIES, Category

_ATEN_NAME = re.compile(r"^aten::[a-z_][a-z0-9_]*(\.[A-Za-z0-9_]+)?$")
_WHEN = ("required", "optional", "on-limit")


@dataclass(frozen=True)
class AttrField:
    """One PyTorch parameter and the CANN attribute it becomes."""

    source: str
    target: str
    transform: str


@dataclass(frozen=True)
class AttrMapping:
    """How an API's parameters map onto a CANN operator's attributes."""

    op: str
    apis: tuple[str, ...]
    aten: str | None
    cann_op: str
    fields: tuple[AttrField, ...]
    evidence: str


@dataclass(frozen=True)
class Replacement:
    """An NPU-only op that stands in for an API or third-party op."""

    source: str  # "torchvision::deform_conv2d", "torch.nn.functional.scaled_dot_product_attention", "pattern::rmsnorm"
    npu_op: str
    when: str  # "required" | "optional" | "on-limit"
    note: str
    evidence: str

    @property
    def api(self) -> str:
        return f"torch_npu.{self.npu_op}"


@dataclass(frozen=True)
class Composite:
    """An op torch_npu runs whole, whose CPU decomposition seen while tracing is not judged."""

    aten: str
    apis: tuple[str, ...]
    cpu_only: tuple[str, ...]
    evidence: str
    # Products (kernel columns) where torch_npu's kernel for the op runs PyTorch's own decomposition `fallback`
    # instead of a fused NPU kernel (SDPA below Ascend910B1 runs aten::_scaled_dot_product_attention_math)
    fallback: str | None = None
    fallback_on: tuple[str, ...] = ()
    fallback_evidence: str = ""


@dataclass(frozen=True)
class Family:
    """APIs whose category is known by nature (e.g. parameters mapped onto CANN attributes)."""

    nature: Category
    ops: tuple[str, ...]
    evidence: str
    note: str = ""


@dataclass(frozen=True)
class ThirdPartyOp:
    """An op of another library (torchvision::nms) the rules may name."""

    op: str
    schema: str
    evidence: str
    # the library's Python functions that dispatch it ("torchvision.ops.boxes.nms"): a call of one on a line the
    # capture did not reach is this op, present but not reached (classify/reach.py)
    apis: tuple[str, ...] = ()


@dataclass(frozen=True)
class FusedStep:
    """An optimizer step whose fused form the NPU runs as one kernel: `step` with `setting` dispatches `aten`."""

    step: str  # the documented API: "torch.optim.AdamW.step"
    setting: str  # how to ask for it: "fused=True"
    aten: str  # the fused ATen op with an NPU kernel: "aten::_fused_adamw_"
    evidence: str


@dataclass(frozen=True)
class Rules:
    """The curated rule file, validated against the generated facts."""

    version: str
    source: str
    calls: Mapping[str, str]
    calls_evidence: str
    host_ops: frozenset[str]
    host_evidence: str
    families: tuple[Family, ...]
    composites: tuple[Composite, ...]
    everywhere: frozenset[str]
    everywhere_evidence: str
    third_party: Mapping[str, ThirdPartyOp]
    replacements: tuple[Replacement, ...]
    attr_mappings: tuple[AttrMapping, ...]
    category_notes: Mapping[Category, str]
    options_only: frozenset[str] = frozenset()  # Tensor.new_ones & co: self lends only dtype and device
    options_evidence: str = ""
    host_factories: frozenset[str] = frozenset()  # torch.tensor & co: Python data filled on the host, then copied
    host_factory_evidence: str = ""

    def options_only_of(self, op: str) -> str | None:
        """The evidence when `op` takes only dtype and device from self (a dtype limit on self is not on the data)."""
        return self.options_evidence if op in self.options_only else None
    fused_steps: tuple[FusedStep, ...] = ()

    def fused_step(self, op: str) -> FusedStep | None:
        return next((f for f in self.fused_steps if f.step == op), None)

    def nature(self, op: str) -> Family | None:
        return next((f for f in self.families if op in f.ops), None)

    def third_party_for_api(self, api: str) -> ThirdPartyOp | None:
        """The library op a Python function of the library dispatches ("torchvision.ops.nms" -> torchvision::nms)."""
        return next((t for t in self.third_party.values() if api in t.apis), None)

    def composite_for_api(self, op: str) -> Composite | None:
        return next((c for c in self.composites if op in c.apis), None)

    def cpu_only_of(self, aten: str) -> Composite | None:
        return next((c for c in self.composites if aten in c.cpu_only), None)

    def fallback_of(self, aten: str, product: str) -> Composite | None:
        """The composite whose NPU kernel runs its `fallback` decomposition on `product` (a kernel column)."""
        return next((c for c in self.composites if c.aten == aten and product in c.fallback_on), None)


class KnownFacts(Protocol):
    """What the rules are checked against (the KnowledgeBase provides it)."""

    def is_documented_api(self, name: str) -> bool: ...

    def kernel(self, aten: str) -> Any: ...

    def has_custom_op(self, name: str) -> bool: ...


def _refuse(table: TomlTable, key: str, problem: str) -> KnowledgeBaseError:
    """'rules.toml: replacement[0].npu_op: problem' for a value the facts do not back."""
    return KnowledgeBaseError(f"{table.default_file}: {table.key(key)}: {problem}")


def _aten_names(table: TomlTable, key: str) -> tuple[str, ...]:
    """The ATen op names listed under `key` (may be absent), each checked for the aten::name[.overload] shape."""
    names = table.strings(key, ())
    for op in names:
        if not _ATEN_NAME.match(op):
            raise _refuse(table, key, f"{op!r} is not an ATen op name")
    return names


@dataclass(frozen=True)
class _Names:
    """The checks every name a rule mentions goes through: the generated facts, and the third-party ops the file
    declares first."""

    facts: KnownFacts
    third_party: Mapping[str, ThirdPartyOp]

    def known_op(self, op: str) -> bool:
        facts = self.facts
        return (facts.is_documented_api(op) or op in self.third_party or facts.kernel(op) is not None
                or facts.has_custom_op(op))

    def documented(self, table: TomlTable, key: str, name: str) -> str:
        if not self.facts.is_documented_api(name):
            raise _refuse(table, key, f"{name!r} is not a documented API")
        return name

    def aten_kernel(self, table: TomlTable, key: str, aten: str) -> str:
        if self.facts.kernel(aten) is None:
            raise _refuse(table, key, f"{aten!r} has no NPU kernel in the generated facts")
        return aten


def load_rules(path: Path, facts: KnownFacts) -> Rules:
    """Read and validate rules.toml; KnowledgeBaseError naming file and key on the first problem.

    Strategy: one reader per table, each reading through `TomlTable` (typed getters, then `finish()` refusing
    any key nobody read), so a misspelt table or key is one line naming the file and the dotted key. Every
    name a rule mentions is checked as it is read (`_Names`): against the generated facts (`KnownFacts`: documented
    APIs, ATen kernels, NPU-only ops) or the third-party ops the file itself declares first, so a rule can
    never speak for something the facts do not know. The root table is finished last, refusing any
    unknown top-level table.
    """
    root = TomlTable.of_file(path, "rules file", KnowledgeBaseError)
    meta = root.table("meta")
    version = meta.string("version")
    meta.finish()
    names = _Names(facts, _read_third_party(root))
    calls, calls_evidence = _read_calls(root, names)
    host_ops, host_evidence = _read_op_set(root, "host_ops")
    options_only, options_evidence = _read_op_set(root, "options_only", names)
    host_factories, host_factory_evidence = _read_op_set(root, "host_factories", names)
    families = _read_families(root, names)
    composites = _read_composites(root, names)
    everywhere = root.table("everywhere", None)
    everywhere_ops, everywhere_evidence = _aten_names(everywhere, "ops"), everywhere.string("evidence", "")
    everywhere.finish()
    replacements = _read_replacements(root, names)
    mappings = _read_attr_mappings(root, names)
    fused_steps = _read_fused_steps(root, names)
    notes_table = root.table("category_notes", None)
    notes = {Category(name): notes_table.string(name) for name in notes_table.keys() if name in CATEGORIES}
    notes_table.finish()
    root.finish()

    return Rules(
        version=version, source=str(path), calls=calls, calls_evidence=calls_evidence,
        host_ops=host_ops, host_evidence=host_evidence, families=families, composites=composites,
        everywhere=frozenset(everywhere_ops), everywhere_evidence=everywhere_evidence, third_party=names.third_party,
        replacements=replacements, attr_mappings=mappings, category_notes=notes,
        options_only=options_only, options_evidence=options_evidence, fused_steps=fused_steps,
        host_factories=host_factories, host_factory_evidence=host_factory_evidence)


def _read_third_party(root: TomlTable) -> dict[str, ThirdPartyOp]:
    """[[third_party]]: the namespaced ops of other libraries the later tables may name."""
    third_party = {}
    for item in root.tables("third_party"):
        op = item.string("op")
        if "::" not in op:
            raise _refuse(item, "op", f"{op!r} is not a namespaced op (ns::name)")
        third_party[op] = ThirdPartyOp(op, item.string("schema", ""), item.string("evidence"),
                                       item.strings("apis", ()))
        item.finish()
    return third_party


def _read_calls(root: TomlTable, names: _Names) -> tuple[dict[str, str], str]:
    """[calls]: module -> the documented function it calls, both documented APIs; and the table's evidence."""
    table = root.table("calls", None)
    evidence = table.string("calls_evidence", "")
    calls = {}
    for module in table.keys():
        if module != "calls_evidence":
            names.documented(table, module, module)
            calls[module] = names.documented(table, module, table.string(module))
    table.finish()
    return calls, evidence


def _read_op_set(root: TomlTable, name: str, names: _Names | None = None) -> tuple[frozenset[str], str]:
    """[host_ops], [options_only] or [host_factories]: a set of ops and its evidence; with `names`, each op a
    documented API."""
    table = root.table(name, None)
    ops, evidence = frozenset(table.strings("ops", ())), table.string("evidence", "")
    if names is not None:
        for op in ops:
            names.documented(table, "ops", op)
    table.finish()
    return ops, evidence


def _read_families(root: TomlTable, names: _Names) -> tuple[Family, ...]:
    """[[family]]: ops whose category is known by nature, each known to the facts."""
    families = []
    for item in root.tables("family"):
        nature = Category(item.choice("nature", CATEGORIES))
        ops = item.strings("ops")
        for op in ops:
            if not names.known_op(op):
                raise _refuse(item, "ops", f"{op!r} is not in the generated facts")
        families.append(Family(nature, ops, item.string("evidence"), item.string("note", "")))
        item.finish()
    return tuple(families)


def _read_composites(root: TomlTable, names: _Names) -> tuple[Composite, ...]:
    """[[composite]]: an ATen op with an NPU kernel, the documented APIs that reach it, its CPU decomposition."""
    composites = []
    for item in root.tables("composite"):
        aten = names.aten_kernel(item, "aten", item.string("aten"))
        apis = tuple(names.documented(item, "apis", api) for api in item.strings("apis"))
        fallback = item.string("fallback", None)
        fallback_on = item.strings("fallback_on", ())
        unknown = [p for p in fallback_on if p not in KERNEL_COLUMNS]
        if unknown:
            raise _refuse(item, "fallback_on", f"{unknown[0]!r} is not a product column ({', '.join(KERNEL_COLUMNS)})")
        if (fallback is None) != (not fallback_on):
            raise _refuse(item, "fallback", "a fallback names both the op it runs and the products it runs on")
        if fallback is not None and not _ATEN_NAME.match(fallback):
            raise _refuse(item, "fallback", f"{fallback!r} is not an ATen op name")
        composites.append(Composite(aten, apis, _aten_names(item, "cpu_only"), item.string("evidence"),
                                    fallback, fallback_on, item.string("fallback_evidence", "")))
        item.finish()
    return tuple(composites)


def _read_replacements(root: TomlTable, names: _Names) -> tuple[Replacement, ...]:
    """[[replacement]]: a known op (or declared third-party op) and the NPU-only op standing in for it."""
    replacements = []
    for item in root.tables("replacement"):
        source, npu_op = item.string("source"), item.string("npu_op")
        if not names.known_op(source):
            raise _refuse(item, "source", f"{source!r} is neither in the generated facts nor a declared third-party op")
        if not names.facts.has_custom_op(npu_op):
            raise _refuse(item, "npu_op", f"{npu_op!r} is not an NPU op in npu_custom_ops")
        when = item.choice("when", _WHEN)
        replacements.append(Replacement(source, npu_op, when, item.string("note", ""), item.string("evidence")))
        item.finish()
    return tuple(replacements)


def _read_attr_mappings(root: TomlTable, names: _Names) -> tuple[AttrMapping, ...]:
    """[[attr_mapping]]: a documented API's parameters onto a CANN operator's attributes ([[...fields]])."""
    mappings = []
    for item in root.tables("attr_mapping"):
        op = names.documented(item, "op", item.string("op"))
        aten = item.string("aten", None)
        if aten:
            names.aten_kernel(item, "aten", aten)
        if "fields" not in item:
            raise item.error("fields", "missing")
        fields = []
        for field in item.tables("fields"):
            fields.append(AttrField(field.string("source"), field.string("target"), field.string("transform", "as-is")))
            field.finish()
        mappings.append(AttrMapping(op, item.strings("apis", ()), aten, item.string("cann_op"), tuple(fields),
                                    item.string("evidence")))
        item.finish()
    return tuple(mappings)


def _read_fused_steps(root: TomlTable, names: _Names) -> tuple[FusedStep, ...]:
    """[[fused_step]]: a documented optimizer step, the setting that fuses it, and the fused ATen kernel."""
    fused_steps = []
    for item in root.tables("fused_step"):
        step = names.documented(item, "step", item.string("step"))
        fused_steps.append(FusedStep(step, item.string("setting"), names.aten_kernel(item, "aten", item.string("aten")),
                                     item.string("evidence")))
        item.finish()
    return tuple(fused_steps)
