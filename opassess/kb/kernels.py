"""Kernel-level dtype facts: does the CANN aclnn kernel behind an ATen op take these dtypes on this Ascend product?

Data: opassess/data/kb/aclnn.json, compiled by tools/kb_kernels.py from two tables (see that tool's docstring):
op-plugin's ATen -> aclnn map and the per-API, per-parameter dtypes of CANN's aclnn docs with per-product
support and exclusions. The file is read on first use; the per-API, per-product indexes are built on the first
query that needs them and every verdict is memoised, so a repeated `judge` call costs a dictionary lookup.

How a verdict is reached (`KernelFacts.judge`):
  1. overload lookup: the exact overload ("add.Tensor"; "aten::mm.default" is "mm"), else "<name>.out" (some
     ops are listed only as their out= kernel, e.g. gelu.out), else the bare name; no row -> None.
  2. the row's own aclnn APIs (all branches: mm lists aclnnMatmulWeightNz and aclnnMm). The main API decides
     (main_api.py): the documented one named like the op (mm -> aclnnMm, index_put_ -> aclnnIndexPutImpl, silu_ ->
     aclnnInplaceSilu or aclnnSilu), else the first documented one; a kernel that only delegates to other ops
     takes its principal callee's main API. The others are reported, not counted.
  3. dtypes: the API's input / inout parameters that list dtypes. The first of them is the data carrier
     (self / input / x in practice): the model's first tensor dtype must be listed there and not excluded on the
     product. Any other model dtype is native when at least one input row lists it without excluding it on the
     product (indices, masks and scalars have rows of their own, and the table does not say which rows are
     tensors, so a row-by-row positional match would be guesswork). `allowed` is the carrier's dtypes minus the
     product's exclusions: a cast target for a remedy must be inside it.
  4. API-level support: ✘ for the product makes every dtype unsupported; a doc that does not name the product
     decides nothing (confidence low).
Confidence: "high" when the deciding rows state the dtypes plainly (a dtype cell, exclusions from the section
notes or the cell); "medium" when a deciding row's exclusions come from 约束说明 constraints or an allow-list,
or the row was found through "<name>.out", the bare name, or a name-only/ambiguous kernel match; "low" when
the doc gives no dtypes for the product (per-product lists without one for it, undocumented API, product not
named) or the row carries unparsed dtype footnotes. A dtype outside the lists is "not native", not
necessarily "fails": torch_npu may cast first or take the aclop path (`fallback_aclop`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import KnowledgeBaseError
from ..resources import data_path
from ..vocabulary import Confidence
from .catalog import NOT_EXCLUDED
from .main_api import delegated_main, norm
from .products import KERNEL_COLUMNS, shipped
from .products import UnknownProductError as UnknownProductError  # re-exported

FILE = "aclnn.json"
PRODUCTS = KERNEL_COLUMNS

_DTYPE_ALIASES = {
    "half": "float16", "fp16": "float16", "float": "float32", "fp32": "float32", "double": "float64",
    "fp64": "float64", "bf16": "bfloat16", "long": "int64", "int": "int32", "short": "int16", "chalf": "complex32",
    "cfloat": "complex64", "cdouble": "complex128",
}
_LOW_NOTES = ("dtype footnotes not parsed", "dtype list found outside the dtype column")
_MEDIUM_NOTES = ("from-constraints", "allowlist-derived", "dtypes from the description text",
                 "params:fallback-first-param-table", "parameter section is headed")
_PER_PRODUCT = "dtypes only given per product"
_NO_LIST = re.compile(r"dtype cell has no list for (\S+)")
_WEAK_MATCH = ("name-arity", "name-only", "signature-ambiguous")


def resolve_product(name: str) -> str:
    """'910B' / 'Atlas A2' -> 'A2', '910A' / 'Atlas training series' -> '910', ... (case-insensitive; the aliases
    of opassess/data/products.toml, the one product vocabulary)."""
    return name if name in PRODUCTS else shipped().resolve(name).kernel


def normalize_dtype(dtype: str) -> str:
    """'torch.bfloat16' -> 'bfloat16', 'half' -> 'float16'; names as in the aclnn table."""
    name = dtype.strip().lower().removeprefix("torch.")
    return _DTYPE_ALIASES.get(name, name)


# ------------------------------------------------------------------ records


@dataclass(frozen=True)
class ApiVerdict:
    """What one aclnn API's doc says about the model's input dtypes on one product."""

    api: str
    main: bool  # this API decides the verdict
    documented: bool  # the API has a doc row in cann_aclnn_dtypes.tsv
    product_support: bool | None  # API-level ✔ / ✘ for the product; None: the doc does not name it
    native: tuple[str, ...]  # input dtypes listed and not excluded on the product
    excluded: tuple[tuple[str, str], ...]  # (dtype, parameter) the product excludes
    unlisted: tuple[str, ...]  # input dtypes no deciding row lists
    allowed: tuple[str, ...]  # the data carrier's dtypes on the product (empty when the API is ✘ there)
    carrier: str | None  # the data-carrier parameter ("self")

    @property
    def takes_all(self) -> bool:
        """The API runs on the product and takes every input dtype (an undocumented API says nothing: False)."""
        return self.documented and self.product_support is not False and not self.excluded and not self.unlisted


@dataclass(frozen=True)
class KernelVerdict:
    """The kernel facts' answer for one ATen overload, product and set of input dtypes."""

    aten: str  # the op-plugin row used ("mm", "gelu.out")
    lookup: str  # "exact" | "out" (via "<name>.out") | "bare" (via the name without overload)
    product: str  # table product ("A2")
    supported: bool  # the main API takes every input dtype on the product (or the doc states nothing against it)
    apis: tuple[ApiVerdict, ...]  # every API the kernel launches, in the table's order
    native: tuple[str, ...]  # of the main API
    not_native: tuple[str, ...]  # input dtypes the main API does not take on the product
    allowed: tuple[str, ...]  # the main API's carrier dtypes on the product: cast targets for a remedy
    fallback_aclop: bool  # the kernel falls back to the older aclop path when CANN lacks the API
    other_acl_op_path: bool  # some other branch (soc/format/dtype) calls acl_op
    confidence: Confidence
    evidence: tuple[str, ...]

    @property
    def main_api(self) -> ApiVerdict | None:
        return next((a for a in self.apis if a.main), None)


# ------------------------------------------------------------------ per-API index


@dataclass(frozen=True)
class _Row:
    param: str
    dtypes: frozenset[str]
    excluded: frozenset[str]  # on the product
    confidence: Confidence  # of this row's statement for the product
    source: str  # "from-section", "allowlist-derived", ... ("dtype cell" when no flag)


@dataclass(frozen=True)
class _ApiOnProduct:
    documented: bool
    support: bool | None
    rows: tuple[_Row, ...]  # input rows with dtypes; rows[0] is the data carrier

    def carrier_allowed(self) -> tuple[str, ...]:
        if not self.rows or self.support is False:
            return ()
        carrier = self.rows[0]
        return tuple(sorted(carrier.dtypes - carrier.excluded))


@dataclass(frozen=True)
class _OpIndex:
    name: str  # the op-plugin row used
    lookup: str
    entry: dict[str, Any]
    main: str | None
    views: tuple[tuple[str, _ApiOnProduct], ...]
    mapping: str  # the op_plugin_aten_to_aclnn.tsv evidence line


def _row_confidence(notes: list[str], product: str, excluded: list[str]) -> Confidence:
    if any(n.startswith(_LOW_NOTES) for n in notes):
        return Confidence.LOW
    if any(n.startswith(_PER_PRODUCT) for n in notes) and not excluded:
        return Confidence.LOW  # per-product lists and none was found for this product
    for note in notes:
        m = _NO_LIST.match(note)
        if m and product in m.group(1).split("/"):
            return Confidence.LOW
    if any(n.startswith(_MEDIUM_NOTES) for n in notes):
        return Confidence.MEDIUM
    return Confidence.HIGH


def _index_api(raw: dict[str, Any] | None, product: str, index: int) -> _ApiOnProduct:
    if raw is None:
        return _ApiOnProduct(False, None, ())
    rows = []
    for p in raw.get("params", ()):
        if not p.get("dtypes"):
            continue
        notes = p.get("notes", [])
        excluded = p.get("excluded", {}).get(product, [])
        source = next((n for n in notes if n.startswith(("from-", "allowlist"))), "dtype cell")
        rows.append(_Row(p["name"], frozenset(p["dtypes"]), frozenset(excluded),
                         _row_confidence(notes, product, excluded), source))
    support = {"y": True, "n": False}.get(raw["support"][index])
    return _ApiOnProduct(True, support, tuple(rows))


def overload_key(aten_overload: str) -> str:
    """'aten::mm.default' -> 'mm'; 'aten::add.Tensor' -> 'add.Tensor'; 'npu::npu_rms_norm' -> 'npu_rms_norm' (the
    key of the kernel tables, here and in KnowledgeBase)."""
    name = aten_overload.strip().rpartition("::")[2]
    return name.removesuffix(".default")


# ------------------------------------------------------------------ facts


class KernelFacts:
    """The compiled kernel facts of one aclnn.json, with memoised per-overload verdicts."""

    def __init__(self, directory: Path | None = None, *, cache_size: int = 1 << 16) -> None:
        """`directory` overrides opassess/data/kb (a folder holding aclnn.json)."""
        self.path = (Path(directory) if directory is not None else data_path("kb")) / FILE
        self._data: dict[str, Any] | None = None
        self._views: dict[tuple[str, str], _ApiOnProduct] = {}
        self._ops: dict[tuple[str, str], _OpIndex | None] = {}
        self._apis: dict[tuple[str, bool, str, tuple[str, ...]], tuple[ApiVerdict, list[Confidence], list[str]]] = {}
        self._lookups: dict[str, tuple[str, str] | None] = {}
        self._names: dict[str, str] | None = None
        self._cached = lru_cache(maxsize=cache_size)(self._judge)

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            from ..datafile import read_json

            data = read_json(self.path, "kernel facts", KnowledgeBaseError)
            if not isinstance(data, dict):
                raise KnowledgeBaseError(f"{self.path}: not a kernel-facts file (not a JSON object)")
            missing = [k for k in ("aten", "aclnn", "products", "provenance") if k not in data]
            if missing or tuple(data.get("products", ())) != PRODUCTS:
                raise KnowledgeBaseError(f"{self.path}: not a kernel-facts file (missing {missing or 'products'}); "
                                         "rebuild it with tools/kb_kernels.py")
            self._data = data
        return self._data

    def judge(self, aten_overload: str, product: str, input_dtypes: tuple[str | None, ...]) -> KernelVerdict | None:
        """Verdict for 'aten::mm.default' on 'A2' (or '910B', ...) for the model's input dtypes (None: non-tensor).

        None when op-plugin has no row for the overload. Memoised: a repeated signature costs a cache lookup.
        """
        return self._cached(aten_overload, product, tuple(input_dtypes))

    @property
    def provenance(self) -> dict[str, Any]:
        return self.data["provenance"]

    def aten_entry(self, name: str) -> dict[str, Any] | None:
        """The op-plugin row of an overload as stored ('mm', 'add.Tensor'), or None."""
        return self.data["aten"].get(name)

    def api_entry(self, api: str) -> dict[str, Any] | None:
        """The doc facts of one aclnn API ('aclnnMm'), or None when no doc was read for it."""
        return self.data["aclnn"].get(api)

    def lookup(self, aten_overload: str) -> tuple[str, str] | None:
        """(stored row name, 'exact' | 'out' | 'bare') for an overload, or None when op-plugin has no row."""
        key = overload_key(aten_overload)
        if key not in self._lookups:
            base = key.partition(".")[0]
            table = self.data["aten"]
            found = None
            for name, how in ((key, "exact"), (f"{base}.out", "out"), (base, "bare")):
                if name in table:
                    found = (name, how)
                    break
            self._lookups[key] = found
        return self._lookups[key]

    def named_api(self, aten_overload: str) -> str | None:
        """The documented aclnn API named like an ATen op ('aten::lgamma' -> 'aclnnLgamma', 'lgamma_' ->
        'aclnnInplaceLgamma'), or None: the CANN kernel an op-plugin registration would bind."""
        if self._names is None:
            self._names = {norm(api.removeprefix("aclnn")): api for api in sorted(self.data["aclnn"])}
        base = overload_key(aten_overload).partition(".")[0]
        inplace = base.endswith("_") and not base.startswith("__")
        return self._names.get(f"inplace{norm(base)}" if inplace else norm(base))

    def api_support(self, api: str, product: str) -> tuple[bool | None, tuple[str, ...]]:
        """(the API doc's ✔/✘ for the product or None, the data carrier's dtypes there) of one documented API."""
        view = self._view(api, resolve_product(product))
        return view.support, view.carrier_allowed()

    def _view(self, api: str, product: str) -> _ApiOnProduct:
        view = self._views.get((api, product))
        if view is None:
            view = _index_api(self.data["aclnn"].get(api), product, PRODUCTS.index(product))
            self._views[(api, product)] = view
        return view

    def _op(self, aten_overload: str, product: str) -> _OpIndex | None:
        """The per-overload, per-product part of a verdict (row, main API, API views), built once."""
        key = (aten_overload, product)
        if key not in self._ops:
            found = self.lookup(aten_overload)
            if found is None:
                self._ops[key] = None
                return None
            name, how = found
            entry = self.data["aten"][name]
            views = tuple((api, self._view(api, product)) for api in entry["apis"])
            documented = {api for api, view in views if view.documented}
            main, why = delegated_main(overload_key(aten_overload).partition(".")[0], entry, self.data["aten"],
                                       documented)
            self._ops[key] = _OpIndex(name, how, entry, main, views,
                                      _mapping_evidence(name, how, aten_overload, entry, main, why))
        return self._ops[key]

    def _api(self, api: str, main: bool, view: _ApiOnProduct, product: str,
             dtypes: tuple[str, ...]) -> tuple[ApiVerdict, list[Confidence], list[str]]:
        key = (api, main, product, dtypes)
        if key not in self._apis:
            verdict, confidences, lines = _judge_api(api, main, view, product, dtypes)
            self._apis[key] = (verdict, confidences, lines if main else [_branch_evidence(verdict, product, dtypes)])
        return self._apis[key]

    def _judge(self, aten_overload: str, product: str, input_dtypes: tuple[str | None, ...]) -> KernelVerdict | None:
        product = resolve_product(product)  # once per (overload, product, dtypes): _judge is memoised
        op = self._op(aten_overload, product)
        if op is None:
            return None
        dtypes = tuple(dict.fromkeys(normalize_dtype(d) for d in input_dtypes if d))
        verdicts, confidences, evidence, branches = [], [], [op.mapping], []
        head = None
        for api, view in op.views:
            verdict, conf, lines = self._api(api, api == op.main, view, product, dtypes)
            verdicts.append(verdict)
            if api == op.main:
                head = verdict
                confidences += conf
                evidence += lines
            else:
                branches += lines
        evidence += branches
        entry = op.entry
        if op.lookup != "exact" or entry["match"].startswith(_WEAK_MATCH):
            confidences.append(Confidence.MEDIUM)
        if head is None or not head.documented:
            supported = True  # a kernel exists; no doc states anything against these dtypes
            confidences.append(Confidence.LOW)
            evidence.append(f"{op.main}: no doc row in cann_aclnn_dtypes.tsv, dtypes not stated" if op.main
                            else "the kernel launches no aclnn API itself: dtypes not stated")
        else:
            supported = head.product_support is not False and not head.excluded and not head.unlisted
        if entry["fallback"]:
            evidence.append(f"op_plugin_aten_to_aclnn.tsv: {op.name} falls back to aclop when CANN lacks the API")
        return KernelVerdict(
            aten=op.name, lookup=op.lookup, product=product, supported=supported, apis=tuple(verdicts),
            native=head.native if head else (),
            not_native=tuple(d for d in dtypes if d not in head.native) if head and head.documented else (),
            allowed=head.allowed if head else (), fallback_aclop=entry["fallback"],
            other_acl_op_path=entry["other_aclop"],
            confidence=Confidence.weakest(confidences, default=Confidence.HIGH), evidence=tuple(evidence))


def _mapping_evidence(name: str, how: str, asked: str, entry: dict, main: str | None, why: str) -> str:
    via = {"exact": "", "out": f" (no row for {asked}; its out= kernel)",
           "bare": f" (no row for {asked}; the bare name)"}[how]
    text = f"op_plugin_aten_to_aclnn.tsv: {name} -> {', '.join(entry['apis']) or 'no aclnn API'}{via}"
    if len(entry["apis"]) > 1:
        text += f"; all branches listed, the main API {main} ({why}) decides"
    if entry["match"].startswith(_WEAK_MATCH):
        text += f"; kernel tied to the schema by {entry['match']}"
    return text


def _judge_api(api: str, main: bool, view: _ApiOnProduct, product: str,
               dtypes: tuple[str, ...]) -> tuple[ApiVerdict, list[Confidence], list[str]]:
    """One API's verdict plus the confidences and evidence lines of its deciding rows."""
    if not view.documented:
        return ApiVerdict(api, main, False, None, (), (), (), (), None), [], []
    where = f"cann_aclnn_dtypes.tsv {api}"
    confidences, lines = [], []
    if view.support is None:
        confidences.append(Confidence.LOW)
        lines.append(f"{where}: the doc does not name {product}")
    elif not view.support:
        lines.append(f"{where}: not supported on {product} (API-level)")
    native, excluded, unlisted = [], [], []
    carrier = view.rows[0] if view.rows else None
    for i, dtype in enumerate(dtypes if view.support is not False else ()):
        # The model's first tensor dtype is judged by the carrier row alone; the others by any input row.
        rows = (carrier,) if i == 0 and carrier else view.rows
        takes = next((r for r in rows if dtype in r.dtypes and dtype not in r.excluded), None)
        if takes is not None:
            native.append(dtype)
            confidences.append(takes.confidence)
            lines.append(f"{where}.{takes.param}: {dtype} on {product} ({NOT_EXCLUDED}; {takes.source})")
            continue
        denied = [r for r in rows if dtype in r.excluded]
        if denied:
            excluded += [(dtype, r.param) for r in denied]
            confidences.append(denied[0].confidence)
            lines.append(f"{where}.{denied[0].param}: {dtype} excluded on {product} ({denied[0].source})")
        else:
            unlisted.append(dtype)
            if carrier:
                confidences.append(carrier.confidence)
            lines.append(f"{where}.{carrier.param}: {dtype} not listed" if i == 0 and carrier
                         else f"{where}: {dtype} not listed for any input")
    if not dtypes and carrier:
        confidences.append(carrier.confidence)
    verdict = ApiVerdict(api, main, True, view.support, tuple(native), tuple(excluded), tuple(unlisted),
                         view.carrier_allowed(), carrier.param if carrier else None)
    return verdict, confidences, lines


def _branch_evidence(verdict: ApiVerdict, product: str, dtypes: tuple[str, ...]) -> str:
    if not verdict.documented:
        return f"other branch {verdict.api}: no doc row"
    if verdict.product_support is False:
        return f"other branch {verdict.api}: not supported on {product}"
    state = "takes" if verdict.takes_all else "does not take"
    return f"other branch {verdict.api}: {state} {', '.join(dtypes) or 'the op'} on {product} (not counted)"


# ------------------------------------------------------------------ module-level convenience


@lru_cache(maxsize=4)
def load(directory: Path | None = None) -> KernelFacts:
    """The shared KernelFacts of opassess/data/kb (or of `directory`); the file itself is read on first query."""
    return KernelFacts(directory)


def judge(aten_overload: str, product: str, input_dtypes: tuple[str | None, ...],
          directory: Path | None = None) -> KernelVerdict | None:
    """Kernel verdict for 'aten::mm.default' on 'A2' (or '910B', 'Atlas A2') with input dtypes ('bfloat16', ...).

    None when op-plugin has no kernel row for the op (CompositeImplicitAutograd ops such as linear, or ops with no
    NPU kernel such as _grouped_mm): the kernel facts say nothing, fall back to other evidence.
    """
    return load(directory).judge(aten_overload, product, tuple(input_dtypes))
