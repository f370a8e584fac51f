"""Knowledge base: the generated Ascend facts, the curated rules and the error codes, behind one query API.

Layout on disk (opassess/data): kb/*.json, written by tools/build_kb.py from the Ascend fact tables
(one file per table, loaded lazily on first use so a scan only pays for what it asks), rules.toml
(hand-curated) and error_codes.toml. An overlay folder (OPASSESS_KB_DIR, or the user folder that
`opassess kb import` writes) may add kernel facts read from a newer torch-npu wheel.

Torch versions are compared as (major, minor): "2.7.1" and "2.7" are the same release line.
"""
from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .errors import KnowledgeBaseError
from .resources import data_path

PRODUCTS = ("Atlas A2", "Atlas A3", "Ascend 950DT", "Atlas training")
KB_FILES = ("kernels", "custom_ops", "apis", "limitations", "checks", "mstt", "onnx_cann")
# Dtype rule parameter names that mean "the operator's main tensor input(s)".
INPUT_PARAMS = ("input", "self", "tensor", "query", "key", "value", "x", "input1", "input2", "other")

Version = tuple[int, int]


def parse_version(text: str) -> Version:
    """'2.13', '2.13.0', 'v2.13', '2.13.0+cpu' -> (2, 13)."""
    m = re.match(r"^v?(\d+)\.(\d+)", str(text).strip())
    if not m:
        raise KnowledgeBaseError(f"not a torch version: {text!r} (expected e.g. 2.13)")
    return int(m.group(1)), int(m.group(2))


def format_version(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def user_kb_dir() -> Path:
    """Where `opassess kb import` writes refreshed kernel facts by default."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "opassess" / "kb"


# ------------------------------------------------------------------ fact records


@dataclass(frozen=True)
class VersionRange:
    """Inclusive range of torch versions; None on a side means unbounded ('all_version', '..newest')."""

    low: Version | None
    high: Version | None

    def contains(self, version: Version) -> bool:
        return (self.low is None or version >= self.low) and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self.low is None and self.high is None:
            return "all"
        low = format_version(self.low) if self.low else "*"
        if self.low == self.high:
            return f"v{low}"
        return f"v{low}..{format_version(self.high) if self.high else 'newest'}"


def _ranges(raw: Iterable) -> tuple[VersionRange, ...]:
    return tuple(VersionRange(parse_version(lo) if lo else None, parse_version(hi) if hi else None) for lo, hi in raw)


def _in(ranges: tuple[VersionRange, ...], version: Version) -> bool:
    return any(r.contains(version) for r in ranges)


def _fmt(ranges: tuple[VersionRange, ...]) -> str:
    return ",".join(str(r) for r in ranges) or "none"


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
        if _in(self.opapi, version):
            out.append("aclnn")
        if _in(self.aclop, version):
            out.append("aclop")
        if _in(self.native, version):
            out.append("torch_npu")
        return tuple(out)

    def supports(self, version: Version) -> bool:
        return bool(self.paths(version))

    def evidence(self) -> str:
        parts = [f"aclnn {_fmt(self.opapi)}", f"aclop {_fmt(self.aclop)}"]
        if self.native:
            parts = ["torch_npu native"]
        if self.structured:
            parts.append(f"structured codegen {self.structured}")
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

    def describe(self) -> str:
        if self.rule == "unsupported":
            return f"{self.param} is not supported (must stay at its default)"
        if self.rule == "equals":
            return f"{self.param} must be {self.value!r}"
        if self.rule == "in":
            return f"{self.param} may only be set to one of {list(self.value)}"
        if self.rule == "not_in":
            return f"{self.param} must not be one of {list(self.value)}"
        return f"{self.param} must be {dict(gt='>', ge='>=', le='<=')[self.rule]} {self.value}"

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
        return (self.min is not None and ndim < self.min) or (self.max is not None and ndim > self.max) or ndim in self.not_

    def describe(self) -> str:
        parts = []
        if self.min is not None:
            parts.append(f">= {self.min}")
        if self.max is not None:
            parts.append(f"<= {self.max}")
        if self.not_:
            parts.append(f"not {list(self.not_)}")
        return f"{self.param} rank must be {' and '.join(parts)}"


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
        excluded = {d for dtypes, products in self.dtype_excluded if not products or product in products for d in dtypes}
        if excluded:
            if chosen is None:
                return None if not excluded else tuple(sorted(ALL_DTYPES - excluded))
            chosen = [d for d in chosen if d not in excluded]
        return tuple(chosen) if chosen is not None else None

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
        return _in(self.aclop, version) or _in(self.opapi, version)

    @property
    def python_name(self) -> str:
        return f"torch_npu.{self.name.split('.')[0]}"

    def evidence(self) -> str:
        return f"npu_custom_ops: {self.name} [aclnn {_fmt(self.opapi)}; aclop {_fmt(self.aclop)}; exposed {_fmt(self.exposed)}]"


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


@dataclass(frozen=True)
class AttrField:
    source: str
    target: str
    transform: str


@dataclass(frozen=True)
class AttrMapping:
    op: str
    apis: tuple[str, ...]
    aten: str | None
    cann_op: str
    fields: tuple[AttrField, ...]
    evidence: str


@dataclass(frozen=True)
class Replacement:
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
    aten: str
    apis: tuple[str, ...]
    cpu_only: tuple[str, ...]
    evidence: str


@dataclass(frozen=True)
class Family:
    nature: str
    ops: tuple[str, ...]
    evidence: str
    note: str = ""


@dataclass(frozen=True)
class ThirdPartyOp:
    op: str
    schema: str
    evidence: str


@dataclass(frozen=True)
class Rules:
    """The curated rule file, validated against the generated facts."""

    version: str
    source: str
    aliases: Mapping[str, str]
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
    category_notes: Mapping[str, str]

    def nature(self, op: str) -> Family | None:
        return next((f for f in self.families if op in f.ops), None)

    def composite_for_api(self, op: str) -> Composite | None:
        return next((c for c in self.composites if op in c.apis), None)

    def cpu_only_of(self, aten: str) -> Composite | None:
        return next((c for c in self.composites if aten in c.cpu_only), None)


@dataclass(frozen=True)
class ErrorCode:
    code: str  # "ACL_ERROR_INVALID_PARAM" or "ERR01003" or "ERR01" (a family)
    value: int | None
    module: str | None
    meaning: str
    cause: str
    remedy: str
    evidence: str


# ------------------------------------------------------------------ the knowledge base


@dataclass(frozen=True)
class KnowledgeBase:
    """The loaded knowledge base; tables are read on first use."""

    directory: Path
    rules_path: Path
    error_codes_path: Path
    overlay: Path | None = None
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    # -------------------------------------------------------------- raw tables

    def _table(self, name: str) -> Any:
        if name not in self._cache:
            path = self.directory / f"{name}.json"
            try:
                self._cache[name] = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError as exc:
                raise KnowledgeBaseError(f"{path}: knowledge-base table missing (rebuild with tools/build_kb.py)") from exc
            except json.JSONDecodeError as exc:
                raise KnowledgeBaseError(f"{path}: not valid JSON ({exc})") from exc
        return self._cache[name]

    @cached_property
    def provenance(self) -> Mapping[str, Any]:
        data = self._table("provenance")
        for key in ("generated_at", "sources", "upstream", "counts", "generator_version"):
            if key not in data:
                raise KnowledgeBaseError(f"{self.directory / 'provenance.json'}: missing key {key!r}")
        return data

    @property
    def version(self) -> str:
        """Knowledge-base version: generator version, data date, curated-rules version."""
        date = self.provenance["generated_at"][:10].replace("-", "")
        return f"{self.provenance['generator_version']}+{date}.rules{self.rules.version}"

    @property
    def products(self) -> tuple[str, ...]:
        return tuple(self.provenance.get("products", PRODUCTS))

    @cached_property
    def api_doc_versions(self) -> tuple[str, ...]:
        return tuple(self.provenance["counts"]["api_versions"])

    @cached_property
    def imported(self) -> Mapping[Version, Mapping[str, Any]]:
        """Kernel facts read from torch-npu wheels: version -> {"provenance": ..., "kernels": {name: {...}}}."""
        out: dict[Version, Mapping[str, Any]] = {}
        if self.overlay is None or not self.overlay.is_dir():
            return out
        for path in sorted(self.overlay.glob("kernels-*.json")):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                out[parse_version(data["torch_version"])] = data
            except (OSError, ValueError, KeyError) as exc:
                raise KnowledgeBaseError(f"{path}: not an imported kernel table ({exc})") from exc
        return out

    @cached_property
    def torch_versions(self) -> tuple[str, ...]:
        """Every torch version the facts speak for: 2.1 up to the newest kernel version, plus imported wheels."""
        newest = parse_version(self.provenance.get("kernel_newest_version") or self.api_doc_versions[-1])
        versions = {(2, minor) for minor in range(1, newest[1] + 1)} if newest[0] == 2 else {newest}
        versions |= {parse_version(v) for v in self.api_doc_versions} | set(self.imported)
        return tuple(format_version(v) for v in sorted(versions))

    @property
    def default_torch_version(self) -> str:
        """The newest version with both kernel facts and documented API support (2.13 in the shipped data),
        or a newer imported wheel. Kernel ranges run to 2.15 but the API docs stop at 2.13, and an
        assessment mixing the two would judge APIs against docs of another release."""
        newest_doc = max(parse_version(v) for v in self.api_doc_versions)
        newest = max([newest_doc, *self.imported])
        return format_version(newest)

    def resolve_version(self, torch_version: str | None) -> Version:
        """Validate a requested torch version (None: the default) against the facts."""
        version = parse_version(torch_version or self.default_torch_version)
        if format_version(version) not in self.torch_versions:
            raise KnowledgeBaseError(
                f"torch version {torch_version} is not covered by the knowledge base "
                f"(known: {', '.join(self.torch_versions)}; import a newer torch-npu wheel with `opassess kb import`)")
        return version

    def resolve_product(self, product: str) -> str:
        for known in self.products:
            if product.strip().lower() == known.lower():
                return known
        raise KnowledgeBaseError(f"unknown target product {product!r} (known: {', '.join(self.products)})")

    # -------------------------------------------------------------- kernels

    @cached_property
    def _kernels(self) -> dict[str, KernelFact]:
        facts = {}
        for name, raw in self._table("kernels").items():
            facts[name] = KernelFact(
                name=name, base=raw["base"], overload=raw.get("overload", ""), sections=tuple(raw.get("sections", ())),
                aclop=_ranges(raw.get("aclop", ())), opapi=_ranges(raw.get("opapi", ())),
                native=_ranges(raw.get("npu", ())), structured=raw.get("structured"),
                deprecated=raw.get("deprecated"), exposed=_ranges(raw.get("exposed", ())), delegate=raw.get("delegate"))
        for version, data in self.imported.items():
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
                       "aclop": old.aclop + (_ranges([v]) if "aclop" in paths else ()),
                       "opapi": old.opapi + (_ranges([v]) if "aclnn" in paths else ()),
                       "native": old.native + (_ranges([v]) if not paths else ()),
                       "imported": old.imported + (format_version(version),)})
        return facts

    @cached_property
    def _kernels_by_base(self) -> dict[str, tuple[KernelFact, ...]]:
        out: dict[str, list[KernelFact]] = {}
        for fact in self._kernels.values():
            out.setdefault(fact.base, []).append(fact)
        return {k: tuple(v) for k, v in out.items()}

    @staticmethod
    def _kernel_key(aten: str) -> str:
        name = aten.split("::", 1)[1] if "::" in aten else aten
        return name[: -len(".default")] if name.endswith(".default") else name

    def kernel(self, aten: str) -> KernelFact | None:
        """Kernel fact by 'aten::add.Tensor', 'add.Tensor' or 'add' (the default overload)."""
        return self._kernels.get(self._kernel_key(aten))

    def kernels_for_base(self, base: str) -> tuple[KernelFact, ...]:
        return self._kernels_by_base.get(self._kernel_key(base).split(".")[0], ())

    def kernel_support(self, aten: str, torch_version: str | Version | None = None) -> KernelSupport:
        """Whether `aten` has an NPU kernel at the version, and on which evidence."""
        version = torch_version if isinstance(torch_version, tuple) else self.resolve_version(torch_version)
        key = self._kernel_key(aten)
        qualified = f"aten::{key}"
        if version in self.imported:
            # The wheel for this version is authoritative: listed means present, absent means absent.
            listed = self.imported[version]["kernels"]
            entry = listed.get(key)
            fact = self._kernels.get(key)
            if entry is not None:
                return KernelSupport(qualified, True, "imported-wheel", fact,
                                     f"torch-npu {format_version(version)} wheel: {key} ({','.join(entry.get('paths', [])) or 'native'})")
            if "." not in key and f"{key}.out" in listed:  # the functional op derived from its out= kernel
                return KernelSupport(qualified, True, "structured-delegate", self._kernels.get(f"{key}.out"),
                                     f"torch-npu {format_version(version)} wheel: {key}.out (functional {key} "
                                     f"derived from {key}.out)")
            return KernelSupport(qualified, False, "none", fact,
                                 f"torch-npu {format_version(version)} wheel: {key} not listed")
        fact = self._kernels.get(key)
        if fact is not None and fact.supports(version):
            return KernelSupport(qualified, True, "kernel", fact, fact.evidence())
        if fact is None and "." not in key:
            # A functional op whose out= overload is a structured kernel: PyTorch's codegen derives the
            # functional variant from it (structured_delegate), so the kernel covers both (e.g. gelu <- gelu.out).
            out = self._kernels.get(f"{key}.out")
            if out is not None and out.supports(version):
                return KernelSupport(qualified, True, "structured-delegate", out,
                                     f"{out.evidence()} (functional {key} derived from {key}.out)")
        if fact is not None:
            return KernelSupport(qualified, False, "none", fact,
                                 f"{fact.evidence()} (not for torch {format_version(version)})")
        return KernelSupport(qualified, False, "none", None, f"npu_aten_ops: no row for {key}")

    def has_kernel(self, aten: str, torch_version: str | None = None) -> bool:
        return self.kernel_support(aten, torch_version).supported

    # -------------------------------------------------------------- native API support

    @cached_property
    def _limitations(self) -> dict[str, Any]:
        return self._table("limitations")

    def limitation(self, lim_id: str) -> Limitation:
        raw = self._limitations.get(lim_id)
        if raw is None:
            raise KnowledgeBaseError(f"{self.directory / 'limitations.json'}: no limitation {lim_id}")
        return _limitation(lim_id, raw)

    def api(self, name: str, torch_version: str | None = None) -> ApiFact | None:
        """The documented support of `name` in the doc version nearest below (or at) the torch version."""
        name = self.rules.aliases.get(name, name)
        entry = self._table("apis").get(name)
        if entry is None:
            return None
        version = parse_version(torch_version or self.default_torch_version)
        docs = sorted(entry, key=parse_version)
        below = [d for d in docs if parse_version(d) <= version]
        doc = below[-1] if below else docs[0]
        support, lim_id, module = entry[doc]
        marks = {p: {"y": True, "n": False}.get(ch) for p, ch in zip(PRODUCTS, support, strict=False)}
        return ApiFact(name, doc, module, marks, self.limitation(lim_id) if lim_id else None)

    def api_names(self) -> tuple[str, ...]:
        return tuple(self._table("apis"))

    def mstt_status(self, api: str, torch_version: str | None = None) -> str | None:
        """The migration analyser's view: 'supported' / 'unsupported' / None (not listed), nearest list version."""
        table = self._table("mstt")
        flags = table["apis"].get(self.rules.aliases.get(api, api))
        if flags is None:
            return None
        version = parse_version(torch_version or self.default_torch_version)
        indexes = [i for i, v in enumerate(table["versions"]) if parse_version(v) <= version] or [0]
        mark = flags[indexes[-1]]
        return {"s": "supported", "u": "unsupported"}.get(mark)

    # -------------------------------------------------------------- NPU-only ops and replacements

    @cached_property
    def _custom_ops(self) -> dict[str, CustomOpFact]:
        replaces: dict[str, list[str]] = {}
        for rep in self.rules.replacements:
            replaces.setdefault(rep.npu_op, []).append(rep.source)
        facts = {}
        for name, raw in self._table("custom_ops").items():
            facts[name] = CustomOpFact(
                name=name, base=raw["base"], schema=raw.get("schema", ""), sections=tuple(raw.get("sections", ())),
                library=raw.get("library", "npu"), aclop=_ranges(raw.get("aclop", ())), opapi=_ranges(raw.get("opapi", ())),
                exposed=_ranges(raw.get("exposed", ())), deprecated=raw.get("deprecated"),
                documented=bool(raw.get("documented")), replaces=tuple(replaces.get(name, ())))
        return facts

    @staticmethod
    def _custom_key(name: str) -> str:
        key = name.split("::", 1)[-1]
        return key[len("torch_npu."):] if key.startswith("torch_npu.") else key

    def has_custom_op(self, name: str) -> bool:
        return self._custom_key(name) in self._table("custom_ops")

    def custom_op(self, name: str) -> CustomOpFact | None:
        """NPU-only op by 'npu_rms_norm', 'torch_npu.npu_rms_norm' or 'npu::npu_rms_norm'."""
        return self._custom_ops.get(self._custom_key(name))

    def custom_op_names(self) -> tuple[str, ...]:
        return tuple(self._custom_ops)

    def replacements_for(self, op: str) -> tuple[Replacement, ...]:
        return tuple(r for r in self.rules.replacements if r.source == op or r.source == self.rules.aliases.get(op))

    # -------------------------------------------------------------- checks, CANN names, attribute maps

    @cached_property
    def _checks(self) -> dict[str, tuple[CheckFact, ...]]:
        out: dict[str, list[CheckFact]] = {}
        for path, raw in self._table("checks").items():
            for line, macro, errcode, kind in raw["checks"]:
                out.setdefault(raw.get("op") or "", []).append(CheckFact(path, line, macro, errcode, kind, raw.get("op")))
        return {k: tuple(v) for k, v in out.items()}

    def checks_for(self, aten: str) -> tuple[CheckFact, ...]:
        """Kernel argument checks keyed to the ATen base op ('aten::max_pool2d_with_indices' -> its checks)."""
        return self._checks.get(self._kernel_key(aten).split(".")[0], ())

    def attr_mapping(self, op: str) -> AttrMapping | None:
        op = self.rules.aliases.get(op, op)
        return next((m for m in self.rules.attr_mappings if m.op == op or op in m.apis or m.aten == op), None)

    def onnx_cann(self, onnx_op: str) -> str | None:
        entry = self._table("onnx_cann").get(onnx_op)
        return entry["cann"] if entry and entry["cann"] != "PartitionedCall" else None

    def cann_op(self, op: str) -> str | None:
        """CANN operator name for an operator key or ATen op: curated mapping, else the 1:1 ACLNN kernel."""
        mapping = self.attr_mapping(op)
        if mapping:
            return mapping.cann_op
        if "::" in op or "." not in op:
            support = self.kernel(op)
            if support and support.structured and support.structured.startswith("aclnn"):
                return support.structured
        return None

    # -------------------------------------------------------------- rules and error codes

    @cached_property
    def rules(self) -> Rules:
        return _load_rules(self.rules_path, self)

    @cached_property
    def error_codes(self) -> Mapping[str, ErrorCode]:
        return _load_error_codes(self.error_codes_path)

    def error_code(self, code: str) -> ErrorCode | None:
        """Look up 'ACL_ERROR_INVALID_PARAM', '100000', 'ERR01003' or 'EZ9999'-style codes (case-insensitive)."""
        key = code.strip().upper()
        codes = self.error_codes
        if key in codes:
            return codes[key]
        if key.isdigit():
            return next((c for c in codes.values() if c.value == int(key)), None)
        m = re.fullmatch(r"ERR(\d{2})(\d{3})", key)
        if m:
            generic = codes.get(f"ERR**{m.group(2)}")
            module = codes.get(f"ERR{m.group(1)}")
            if generic is not None:
                module_name = module.meaning if module else f"module {m.group(1)}"
                return ErrorCode(key, None, module_name, f"{module_name}: {generic.meaning}", generic.cause,
                                 generic.remedy, generic.evidence)
        return None

    def counts(self) -> Mapping[str, Any]:
        return self.provenance["counts"]


def _limitation(lim_id: str, raw: Mapping[str, Any]) -> Limitation:
    dtype_rules, excluded, extra, casts, params, ndims = [], [], [], [], [], []
    flags = {"cpu_fallback": None, "cpu_only": False, "inference_only": False, "no_sparse": False,
             "no_packed_sequence": False}
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
            flags["cpu_fallback"] = "always" if "always" in (rule["when"], flags["cpu_fallback"]) else "may"
        elif kind in ("cpu_only", "inference_only", "no_sparse", "no_packed_sequence"):
            flags[kind] = True
        elif kind == "use_instead":
            use_instead.append(rule["api"])
        else:
            raise KnowledgeBaseError(f"limitations.json: {lim_id}: unknown rule kind {kind!r}")
    return Limitation(lim_id, tuple(dtype_rules), tuple(excluded), tuple(extra), tuple(casts), tuple(params),
                      tuple(ndims), flags["cpu_fallback"], flags["cpu_only"], flags["inference_only"],
                      flags["no_sparse"], flags["no_packed_sequence"], tuple(use_instead), tuple(raw["notes"]),
                      tuple(u["tag"] for u in raw["unparsed"]), raw["clauses"])


# ------------------------------------------------------------------ rule file


def _read_toml(path: Path) -> dict:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError as exc:
        raise KnowledgeBaseError(f"{path}: file missing") from exc
    except tomllib.TOMLDecodeError as exc:
        raise KnowledgeBaseError(f"{path}: invalid TOML ({exc})") from exc


def _need(data: Mapping, key: str, where: str, kind: type = str):
    if key not in data:
        raise KnowledgeBaseError(f"{where}: missing key {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        raise KnowledgeBaseError(f"{where}.{key}: expected {kind.__name__}, got {type(value).__name__}")
    return value


_ATEN_NAME = re.compile(r"^aten::[a-z_][a-z0-9_]*(\.[A-Za-z0-9_]+)?$")


def _load_rules(path: Path, kb: KnowledgeBase) -> Rules:
    data = _read_toml(path)
    where = str(path)
    meta = _need(data, "meta", where, dict)
    apis = kb._table("apis")

    def known_op(op: str) -> bool:
        return (op in apis or op in third_party or kb.kernel(op) is not None or kb.has_custom_op(op))

    third_party = {}
    for i, raw in enumerate(data.get("third_party", [])):
        key = f"{where}: third_party[{i}]"
        op = _need(raw, "op", key)
        if "::" not in op:
            raise KnowledgeBaseError(f"{key}.op: {op!r} is not a namespaced op (ns::name)")
        third_party[op] = ThirdPartyOp(op, raw.get("schema", ""), _need(raw, "evidence", key))

    aliases = dict(data.get("aliases", {}))
    for alias, target in aliases.items():
        if target not in apis:
            raise KnowledgeBaseError(f"{where}: aliases.{alias}: {target!r} is not a documented API")

    calls = {k: v for k, v in data.get("calls", {}).items() if k != "calls_evidence"}
    for module, functional in calls.items():
        for name in (module, functional):
            if name not in apis:
                raise KnowledgeBaseError(f"{where}: calls.{module}: {name!r} is not a documented API")

    host = data.get("host_ops", {})
    families = []
    for i, raw in enumerate(data.get("family", [])):
        key = f"{where}: family[{i}]"
        nature = _need(raw, "nature", key)
        if nature not in ("direct", "param-converted", "custom-dev"):
            raise KnowledgeBaseError(f"{key}.nature: {nature!r} is not a category")
        ops = tuple(_need(raw, "ops", key, list))
        for op in ops:
            if not known_op(op):
                raise KnowledgeBaseError(f"{key}.ops: {op!r} is not in the generated facts")
        families.append(Family(nature, ops, _need(raw, "evidence", key), raw.get("note", "")))

    composites = []
    for i, raw in enumerate(data.get("composite", [])):
        key = f"{where}: composite[{i}]"
        aten = _need(raw, "aten", key)
        if kb.kernel(aten) is None:
            raise KnowledgeBaseError(f"{key}.aten: {aten!r} has no NPU kernel in the generated facts")
        capis = tuple(_need(raw, "apis", key, list))
        for api in capis:
            if api not in apis:
                raise KnowledgeBaseError(f"{key}.apis: {api!r} is not a documented API")
        cpu_only = tuple(raw.get("cpu_only", ()))
        for op in cpu_only:
            if not _ATEN_NAME.match(op):
                raise KnowledgeBaseError(f"{key}.cpu_only: {op!r} is not an ATen op name")
        composites.append(Composite(aten, capis, cpu_only, _need(raw, "evidence", key)))

    everywhere = data.get("everywhere", {})
    for op in everywhere.get("ops", []):
        if not _ATEN_NAME.match(op):
            raise KnowledgeBaseError(f"{where}: everywhere.ops: {op!r} is not an ATen op name")

    replacements = []
    for i, raw in enumerate(data.get("replacement", [])):
        key = f"{where}: replacement[{i}]"
        source, npu_op = _need(raw, "source", key), _need(raw, "npu_op", key)
        if not known_op(source):
            raise KnowledgeBaseError(f"{key}.source: {source!r} is neither in the generated facts nor a declared third-party op")
        if not kb.has_custom_op(npu_op):
            raise KnowledgeBaseError(f"{key}.npu_op: {npu_op!r} is not an NPU op in npu_custom_ops")
        when = _need(raw, "when", key)
        if when not in ("required", "optional", "on-limit"):
            raise KnowledgeBaseError(f"{key}.when: {when!r} must be 'required', 'optional' or 'on-limit'")
        replacements.append(Replacement(source, npu_op, when, raw.get("note", ""), _need(raw, "evidence", key)))

    mappings = []
    for i, raw in enumerate(data.get("attr_mapping", [])):
        key = f"{where}: attr_mapping[{i}]"
        op = _need(raw, "op", key)
        if op not in apis:
            raise KnowledgeBaseError(f"{key}.op: {op!r} is not a documented API")
        aten = raw.get("aten")
        if aten and kb.kernel(aten) is None:
            raise KnowledgeBaseError(f"{key}.aten: {aten!r} has no NPU kernel in the generated facts")
        fields = tuple(AttrField(_need(f, "source", f"{key}.fields[{j}]"), _need(f, "target", f"{key}.fields[{j}]"),
                                 f.get("transform", "as-is")) for j, f in enumerate(_need(raw, "fields", key, list)))
        mappings.append(AttrMapping(op, tuple(raw.get("apis", ())), aten, _need(raw, "cann_op", key), fields,
                                    _need(raw, "evidence", key)))

    notes = dict(data.get("category_notes", {}))
    for category in notes:
        if category not in ("direct", "param-converted", "custom-dev"):
            raise KnowledgeBaseError(f"{where}: category_notes.{category}: not a category")

    return Rules(
        version=str(_need(meta, "version", f"{where}: meta")), source=where, aliases=aliases, calls=calls,
        calls_evidence=str(data.get("calls", {}).get("calls_evidence", "")),
        host_ops=frozenset(host.get("ops", ())), host_evidence=host.get("evidence", ""),
        families=tuple(families), composites=tuple(composites), everywhere=frozenset(everywhere.get("ops", ())),
        everywhere_evidence=everywhere.get("evidence", ""), third_party=third_party,
        replacements=tuple(replacements), attr_mappings=tuple(mappings), category_notes=notes)


def _load_error_codes(path: Path) -> Mapping[str, ErrorCode]:
    data = _read_toml(path)
    codes: dict[str, ErrorCode] = {}
    for section in ("acl", "torch_npu_module", "torch_npu_code"):
        for i, raw in enumerate(data.get(section, [])):
            key = f"{path}: {section}[{i}]"
            code = _need(raw, "code", key).upper()
            if code in codes:
                raise KnowledgeBaseError(f"{key}.code: {code} defined twice")
            value = raw.get("value")
            if value is not None and not isinstance(value, int):
                raise KnowledgeBaseError(f"{key}.value: expected an integer")
            codes[code] = ErrorCode(code, value, raw.get("module"), _need(raw, "meaning", key),
                                    _need(raw, "cause", key), _need(raw, "remedy", key), _need(raw, "evidence", key))
    if not codes:
        raise KnowledgeBaseError(f"{path}: no error codes defined")
    return codes


# ------------------------------------------------------------------ entry points


def load_kb(path: Path | None = None) -> KnowledgeBase:
    """Load the knowledge base: the shipped data, or a full KB folder at `path`, with any imported overlay.

    `path` may be a full KB folder (its provenance.json says kind "shipped") or an overlay folder
    written by `opassess kb import`. Without `path`, OPASSESS_KB_DIR names the overlay, else the
    user folder (user_kb_dir()) is used when it exists.
    """
    shipped = data_path("kb")
    directory, overlay = shipped, None
    if path is not None:
        path = Path(path)
        if not path.is_dir():
            raise KnowledgeBaseError(f"{path}: knowledge-base folder not found")
        if (path / "kernels.json").is_file() and (path / "provenance.json").is_file():
            directory = path
        else:
            overlay = path
    else:
        env = os.environ.get("OPASSESS_KB_DIR")
        candidate = Path(env) if env else user_kb_dir()
        if env and not candidate.is_dir():
            raise KnowledgeBaseError(f"OPASSESS_KB_DIR={env}: folder not found")
        overlay = candidate if candidate.is_dir() else None
    kb = KnowledgeBase(directory, data_path("rules.toml"), data_path("error_codes.toml"), overlay)
    kb.provenance  # fail early on a missing or broken table
    kb.rules  # validate the curated rules against the facts
    return kb


def import_wheel(wheel_path: Path, dest: Path | None = None) -> Mapping[str, Any]:
    """Read torch-npu's kernel list from a downloaded wheel (as a zip, never imported) into `dest`."""
    from .kb_import import import_wheel as _import

    return _import(Path(wheel_path), Path(dest) if dest is not None else user_kb_dir())
