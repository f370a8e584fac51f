"""The fact records read from the generated tables (kernels, NPU-only ops, documented APIs and their limitations)."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from opassess.errors import KnowledgeBaseError
from opassess.messages import N_, Text

from .catalog import STRUCTURED
from .versions import Version, VersionRange, format_ranges, format_version, in_ranges, parse_version, version_ranges

# Dtype rule parameter names that mean "the operator's main tensor input(s)".
# "params": an optimizer step's parameters (torch.optim.AdamW.step allows float16 and float32), judged on the
# optimizer operators of a training step (--train), whose input dtypes are the parameters' dtypes
INPUT_PARAMS = ("input", "self", "tensor", "query", "key", "value", "x", "input1", "input2", "other", "params")


@dataclass(frozen=True)
class KernelFact:
    """One ATen overload with an NPU kernel (npu_aten_ops.tsv)."""

    name: str  # "add.Tensor", "convolution" (default overload has no suffix)
    base: str
    overload: str
    sections: tuple[str, ...]
    aclop: tuple[VersionRange, ...]  # CANN single-op path (ACLOP)
    opapi: tuple[VersionRange, ...]  # CANN kernel library (ACLNN)
    native: tuple[VersionRange, ...]  # implemented in torch_npu itself (no CANN path named)
    structured: str | None  # "aclnnRelu" when generated 1:1 from the ATen op
    deprecated: str | None
    exposed: tuple[VersionRange, ...]
    delegate: str | None
    imported: tuple[str, ...] = ()  # versions whose facts came from an imported wheel

    @property
    def qualified(self) -> str:
        return f"aten::{self.name}"

    def paths(self, version: Version) -> tuple[str, ...]:
        """The kernel paths available at `version`: 'aclnn', 'aclop', 'torch_npu'."""
        out = []
        if in_ranges(self.opapi, version):
            out.append("aclnn")
        if in_ranges(self.aclop, version):
            out.append("aclop")
        if in_ranges(self.native, version):
            out.append("torch_npu")
        return tuple(out)

    def supports(self, version: Version) -> bool:
        return bool(self.paths(version))

    def evidence(self) -> str:
        parts = [f"aclnn {format_ranges(self.opapi)}", f"aclop {format_ranges(self.aclop)}"]
        if self.native:
            parts = ["torch_npu native"]
        if self.structured:
            parts.append(STRUCTURED % {"name": self.structured})
        if self.imported:
            parts.append(f"imported wheel {','.join(self.imported)}")
        if self.deprecated:
            parts.append(f"deprecated -> {self.deprecated}")
        return f"npu_aten_ops: {self.name} [{'; '.join(parts)}]"


@dataclass(frozen=True)
class KernelSupport:
    """The answer to 'does this ATen op run on the NPU at version X', with how it was decided."""

    op: str
    supported: bool
    via: str  # "kernel", "structured-delegate", "imported-wheel", "none"
    fact: KernelFact | None
    evidence: str


@dataclass(frozen=True)
class DtypeRule:
    params: tuple[str, ...]
    allowed: tuple[str, ...]
    products: tuple[str, ...] = ()  # empty: every product
    when: Mapping[str, Any] | None = None  # {"param": "mode", "equals": "constant"}


@dataclass(frozen=True)
class ParamRule:
    """A documented parameter limit, e.g. proj_size unsupported, dilation equals 1, mode in [...]."""

    param: str
    rule: str  # "unsupported" | "equals" | "in" | "not_in" | "gt" | "ge" | "le"
    value: Any = None
    products: tuple[str, ...] = ()
    auto_fixed: bool = False  # the NPU silently changes the value instead of failing

    def describe(self) -> Text:
        """'dilation must be 1' (a Message: said in the reader's language)."""
        if self.rule == "unsupported":
            return Text(N_("%(param)s is not supported (must stay at its default)"), {"param": self.param})
        if self.rule == "equals":
            return Text(N_("%(param)s must be %(value)s"), {"param": self.param, "value": repr(self.value)})
        if self.rule == "in":
            return Text(N_("%(param)s may only be set to one of %(values)s"),
                           {"param": self.param, "values": list(self.value)})
        if self.rule == "not_in":
            return Text(N_("%(param)s must not be one of %(values)s"),
                           {"param": self.param, "values": list(self.value)})
        return Text(N_("%(param)s must be %(relation)s %(value)s"),
                       {"param": self.param, "relation": dict(gt=">", ge=">=", le="<=")[self.rule],
                        "value": self.value})

    def violated_by(self, value: Any) -> bool:
        """True when this traced attribute value breaks the rule (None = the attribute was not recorded)."""
        if self.rule == "unsupported":
            return not is_unset(value)
        if self.rule == "in":
            # "may only be set to X": leaving the parameter at its default is always allowed.
            return not is_unset(value) and not all(str(v) in [str(a) for a in self.value] for v in _values(value))
        if value is None:
            return False
        values = _values(value)
        if self.rule == "equals":
            return any(v != self.value for v in values)
        if self.rule == "not_in":
            return any(v in self.value for v in values)
        try:
            if self.rule == "gt":
                return any(v <= self.value for v in values)
            if self.rule == "ge":
                return any(v < self.value for v in values)
            if self.rule == "le":
                return any(v > self.value for v in values)
        except TypeError:
            return False
        return False


def is_unset(value: Any) -> bool:
    """A parameter left at PyTorch's 'off' default: None, 0, False, 'none', empty."""
    if isinstance(value, (list, tuple)):
        return all(is_unset(v) for v in value)
    return value is None or value is False or value == 0 or value == "" or value == "none"


def _values(value: Any) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


@dataclass(frozen=True)
class NdimRule:
    param: str
    min: int | None = None
    max: int | None = None
    not_: tuple[int, ...] = ()

    def violated_by(self, ndim: int) -> bool:
        too_low = self.min is not None and ndim < self.min
        return too_low or (self.max is not None and ndim > self.max) or ndim in self.not_

    def describe(self) -> Text:
        """'input rank must be >= 2 and <= 5' (a Message: said in the reader's language)."""
        parts: list[str] = []
        if self.min is not None:
            parts.append(f">= {self.min}")
        if self.max is not None:
            parts.append(f"<= {self.max}")
        if self.not_:
            parts.append(Text(N_("not %(values)s"), {"values": list(self.not_)}))
        rule = parts[0] if parts else ""
        for part in parts[1:]:
            rule = Text(N_("%(first)s and %(second)s"), {"first": rule, "second": part})
        return Text(N_("%(param)s rank must be %(rule)s"), {"param": self.param, "rule": rule})


@dataclass(frozen=True)
class Limitation:
    """The structured content of one limitation cell; `id` is the sha256 prefix of its source text."""

    id: str
    dtype_rules: tuple[DtypeRule, ...]
    dtype_excluded: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]  # (dtypes, products)
    dtype_extra: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]
    dtype_casts: tuple[Mapping[str, Any], ...]  # {"from": "float64", "to": "float32"}
    param_rules: tuple[ParamRule, ...]
    ndim_rules: tuple[NdimRule, ...]
    cpu_fallback: str | None  # "may" | "always"
    cpu_only: bool
    inference_only: bool
    no_sparse: bool
    no_packed_sequence: bool
    use_instead: tuple[str, ...]
    notes: tuple[str, ...]  # informational tags: "precision", "performance", ...
    unparsed: tuple[str, ...]  # category tag of each clause the parser could not structure
    clauses: int

    def allowed_dtypes(self, product: str, attrs: Mapping[str, Any] | None = None) -> tuple[str, ...] | None:
        """Dtypes allowed for the main input on `product`, or None when the limitation states none."""
        chosen: list[str] | None = None
        for rule in self.dtype_rules:
            if not set(rule.params) & set(INPUT_PARAMS):
                continue
            if rule.products and product not in rule.products:
                continue
            if rule.when and attrs is not None and not _condition_holds(rule.when, attrs):
                continue
            chosen = list(dict.fromkeys((chosen or []) + list(rule.allowed)))
        for dtypes, products in self.dtype_extra:
            if product in products and chosen is not None:
                chosen = list(dict.fromkeys(chosen + list(dtypes)))
        excluded = {d for dtypes, products in self.dtype_excluded if not products or product in products
                    for d in dtypes}
        if excluded:
            if chosen is None:
                return None if not excluded else tuple(sorted(ALL_DTYPES - excluded))
            chosen = [d for d in chosen if d not in excluded]
        return tuple(chosen) if chosen is not None else None

    def excludes(self, dtype: str, product: str) -> bool:
        """The page names `dtype` as unsupported on `product` ("不支持int64"), not merely leaves it out of a list."""
        return any(dtype in dtypes for dtypes, products in self.dtype_excluded if not products or product in products)

    def param_rules_for(self, product: str) -> tuple[ParamRule, ...]:
        return tuple(r for r in self.param_rules if not r.products or product in r.products)


ALL_DTYPES = frozenset({"bfloat16", "float16", "float32", "float64", "uint8", "uint16", "int8", "int16", "int32",
                        "int64", "bool", "complex64", "complex128"})


def _condition_holds(when: Mapping[str, Any], attrs: Mapping[str, Any]) -> bool:
    value = attrs.get(when["param"])
    if "equals" in when:
        return str(value) == str(when["equals"])
    if "not_equals" in when:
        return str(value) != str(when["not_equals"])
    return True


@dataclass(frozen=True)
class ApiFact:
    """torch_npu's documented support of one native API in one doc version (npu_native_api_support.tsv)."""

    api: str
    doc_version: str  # "2.13.0"
    doc_module: str
    support: Mapping[str, bool | None]  # product -> True (✔) / False (✘) / None (blank)
    limitation: Limitation | None

    def supported(self, product: str) -> bool | None:
        return self.support.get(product)

    def evidence(self) -> str:
        marks = " ".join(f"{p}={'✔' if v else '✘' if v is False else '-'}" for p, v in self.support.items())
        lim = f"; limitation {self.limitation.id}" if self.limitation else ""
        return f"npu_native_api_support: {self.api} @torch {self.doc_version} [{marks}{lim}]"


@dataclass(frozen=True)
class CustomOpFact:
    """An NPU-only op (torch_npu.npu_*), with its schema (npu_custom_ops.tsv) and what it can replace."""

    name: str
    base: str
    schema: str
    sections: tuple[str, ...]
    library: str  # "npu" | "atb"
    aclop: tuple[VersionRange, ...]
    opapi: tuple[VersionRange, ...]
    exposed: tuple[VersionRange, ...]
    deprecated: str | None
    documented: bool
    replaces: tuple[str, ...] = ()

    def supports(self, version: Version) -> bool:
        return in_ranges(self.aclop, version) or in_ranges(self.opapi, version)

    @property
    def python_name(self) -> str:
        return f"torch_npu.{self.name.split('.')[0]}"

    def evidence(self) -> str:
        return (f"npu_custom_ops: {self.name} [aclnn {format_ranges(self.opapi)}; aclop {format_ranges(self.aclop)}; "
                f"exposed {format_ranges(self.exposed)}]")


@dataclass(frozen=True)
class CheckFact:
    """One argument check inside an NPU kernel, classified (npu_op_check_messages.tsv)."""

    file: str
    line: int
    macro: str
    errcode: str | None
    kind: str  # "float64-unsupported", "int64-cast-int32", "dilation-limit", ...
    op: str | None  # ATen base op inferred from the kernel file name

    def evidence(self) -> str:
        return f"npu_op_check_messages: {self.file}:{self.line} ({self.kind})"


def limitation_from_json(lim_id: str, raw: Mapping[str, Any]) -> Limitation:
    dtype_rules, excluded, extra, casts, params, ndims = [], [], [], [], [], []
    cpu_fallback: str | None = None
    flags = {"cpu_only": False, "inference_only": False, "no_sparse": False, "no_packed_sequence": False}
    use_instead = []
    for rule in raw["rules"]:
        kind = rule["kind"]
        if kind == "dtype":
            dtype_rules.append(DtypeRule(tuple(rule["params"]), tuple(rule["allowed"]), tuple(rule.get("products", ())),
                                         rule.get("when")))
        elif kind == "dtype_excluded":
            excluded.append((tuple(rule["dtypes"]), tuple(rule.get("products", ()))))
        elif kind == "dtype_extra":
            extra.append((tuple(rule["dtypes"]), tuple(rule.get("products", ()))))
        elif kind == "dtype_cast":
            casts.append({k: v for k, v in rule.items() if k != "kind"})
        elif kind == "param":
            params.append(ParamRule(rule["param"], rule["rule"], rule.get("value"), tuple(rule.get("products", ())),
                                    bool(rule.get("auto_fixed"))))
        elif kind == "ndim":
            ndims.append(NdimRule(rule["param"], rule.get("min"), rule.get("max"), tuple(rule.get("not", ()))))
        elif kind == "cpu_fallback":
            cpu_fallback = "always" if "always" in (rule["when"], cpu_fallback) else "may"
        elif kind in ("cpu_only", "inference_only", "no_sparse", "no_packed_sequence"):
            flags[kind] = True
        elif kind == "use_instead":
            use_instead.append(rule["api"])
        else:
            raise KnowledgeBaseError(f"limitations.json: {lim_id}: unknown rule kind {kind!r}")
    return Limitation(lim_id, tuple(dtype_rules), tuple(excluded), tuple(extra), tuple(casts), tuple(params),
                      tuple(ndims), cpu_fallback, flags["cpu_only"], flags["inference_only"],
                      flags["no_sparse"], flags["no_packed_sequence"], tuple(use_instead), tuple(raw["notes"]),
                      tuple(u["tag"] for u in raw["unparsed"]), raw["clauses"])



def kernel_facts(table: Mapping[str, Any], imported: Mapping[Version, Mapping[str, Any]]) -> dict[str, KernelFact]:
    """kernels.json rows, each imported wheel's kernel list adding its torch version to the ops it lists."""
    facts = {}
    for name, raw in table.items():
        facts[name] = KernelFact(
            name=name, base=raw["base"], overload=raw.get("overload", ""), sections=tuple(raw.get("sections", ())),
            aclop=version_ranges(raw.get("aclop", ())), opapi=version_ranges(raw.get("opapi", ())),
            native=version_ranges(raw.get("npu", ())), structured=raw.get("structured"),
            deprecated=raw.get("deprecated"), exposed=version_ranges(raw.get("exposed", ())),
            delegate=raw.get("delegate"))
    for version, data in imported.items():
        for name, raw in data["kernels"].items():
            v = [format_version(version)] * 2
            old = facts.get(name)
            if old is None:
                old = KernelFact(name=name, base=name.split(".")[0], overload=name.partition(".")[2],
                                 sections=(raw.get("section", "imported"),), aclop=(), opapi=(), native=(),
                                 structured=None, deprecated=None, exposed=(), delegate=None)
            paths = raw.get("paths", [])
            facts[name] = KernelFact(
                **{**old.__dict__,
                   "aclop": old.aclop + (version_ranges([v]) if "aclop" in paths else ()),
                   "opapi": old.opapi + (version_ranges([v]) if "aclnn" in paths else ()),
                   "native": old.native + (version_ranges([v]) if not paths else ()),
                   "imported": old.imported + (format_version(version),)})
    return facts


def custom_op_facts(table: Mapping[str, Any], replaces: Mapping[str, list[str]]) -> dict[str, CustomOpFact]:
    """custom_ops.json rows; `replaces` names, per NPU op, what the curated replacements let it stand in for."""
    return {name: CustomOpFact(
        name=name, base=raw["base"], schema=raw.get("schema", ""), sections=tuple(raw.get("sections", ())),
        library=raw.get("library", "npu"), aclop=version_ranges(raw.get("aclop", ())),
        opapi=version_ranges(raw.get("opapi", ())), exposed=version_ranges(raw.get("exposed", ())),
        deprecated=raw.get("deprecated"), documented=bool(raw.get("documented")),
        replaces=tuple(replaces.get(name, ()))) for name, raw in table.items()}


def check_facts(table: Mapping[str, Any]) -> dict[str, tuple[CheckFact, ...]]:
    """checks.json (kernel file -> its checks) regrouped by the ATen base op each kernel file implements."""
    out: dict[str, list[CheckFact]] = {}
    for path, raw in table.items():
        for line, macro, errcode, kind in raw["checks"]:
            out.setdefault(raw.get("op") or "", []).append(CheckFact(path, line, macro, errcode, kind, raw.get("op")))
    return {k: tuple(v) for k, v in out.items()}


def api_fact(name: str, entry: Mapping[str, Any], version: Version, products: tuple[str, ...],
             limitation: Callable[[str], Limitation]) -> ApiFact:
    """One apis.json entry read at the doc version nearest below (or at) `version`.

    `limitation` turns a limitation id into its Limitation (the limitations table is read on demand).
    """
    docs = sorted(entry, key=parse_version)
    below = [d for d in docs if parse_version(d) <= version]
    doc = below[-1] if below else docs[0]
    support, lim_id, module = entry[doc]
    marks = {p: {"y": True, "n": False}.get(ch) for p, ch in zip(products, support, strict=False)}
    return ApiFact(name, doc, module, marks, limitation(lim_id) if lim_id else None)
