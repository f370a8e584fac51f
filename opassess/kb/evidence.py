"""The one evidence hierarchy, per signature and per kind of fact (a product mark, a dtype): the kernel facts for the
target product first (ATen op -> aclnn API -> its per-product support, dtypes and exclusions), then the torch_npu
API page (its ✔/✘ mark and dtype list for the product), then the dispatcher's structure.

A disagreement lowers the confidence and is said in the reason; it never raises the category on its own. Product
marks (`check_product`): an API page ✘ where the aclnn docs of the kernels that ran list the product as supported is
direct with low confidence ("not verified on Ascend 950"); a page ✔ where a doc marks the product unsupported stays
direct, confidence medium; a doc's ✘ decides against the op only where the page does not mark it ✔ and the kernel has
no aclop fallback (older products run such ops through the aclop path).

A view (its schema returns an alias of its input: select, slice, unsqueeze, view) reads no data, so when only views
ran no dtype fact is missing: the operator has the confidence views have (high), on every product.
A dtype an API page leaves out of its allow-list for an operator whose only kernel is torch_npu's own device-to-host
copy (`Tensor.item` -> aten::_local_scalar_dense: registered by torch_npu itself, no CANN kernel, returns a host
scalar) runs: no kernel doc limits it, so the page's list is a caveat said with confidence low ("not verified for
int64"), not a limit; a page that names the dtype as unsupported still decides.

When the two disagree the kernel facts decide and the message says so ("the API page lists float16, float32;
aclnnAddmm's doc lists bfloat16 on Atlas A2"). The kernel facts count against a dtype only where a doc
excludes it on the product explicitly: an API-level ✘ (older products run such ops through the aclop path) or a
dtype no row lists decides nothing. A remedy's cast target is always inside the allowed set and of the same kind
(a float stays a float, a complex a complex: never complex -> int or float -> int), and an integer is narrowed only
where its values fit (int64 -> int32 below 2^31).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..dtypes import FLOAT_DTYPES
from ..errors import KnowledgeBaseError
from ..messages import N_, Text
from ..reasons import EXCLUSION_CODES as EXCLUSION_CODES  # re-exported
from ..vocabulary import Confidence
from . import kernels, products
from .products import Product

_PREFERENCE = ("float32", "float16", "bfloat16", "int32", "int64", "int16", "int8", "uint8", "bool")


@dataclass(frozen=True)
class DtypeCheck:
    """What the evidence says about one input dtype of one signature on one product."""

    dtype: str
    ok: bool  # the verdict: the NPU takes this dtype as it is
    decided_by: str  # "kernel" | "host-copy" (torch_npu's own device-to-host copy) | "api-page" | "none"
    page_allowed: tuple[str, ...] | None  # the API page's list for the product (None: the page states none)
    kernel_ok: bool | None  # True: every documented main API takes it; False: one excludes it; None: silent
    kernel_apis: tuple[str, ...]  # the aclnn APIs whose docs spoke
    allowed: tuple[str, ...]  # the deciding source's allowed dtypes (cast targets)
    confidence: Confidence
    evidence: tuple[str, ...]

    @property
    def disagree(self) -> bool:
        page_ok = None if self.page_allowed is None else self.dtype in self.page_allowed
        return page_ok is not None and self.kernel_ok is not None and page_ok != self.kernel_ok

    def disagreement(self, product: str) -> str:
        """'the API page lists float16, float32; aclnnAddmm's doc lists bfloat16 on Atlas A2'."""
        values = {"page": ", ".join(self.page_allowed or ()), "apis": ", ".join(self.kernel_apis),
                  "dtype": self.dtype, "product": product}
        one = len(self.kernel_apis) == 1
        if self.kernel_ok:
            return Text(N_("the API page lists %(page)s; %(apis)s's doc lists %(dtype)s on %(product)s")
                           if one else N_("the API page lists %(page)s; the docs of %(apis)s list %(dtype)s on "
                                          "%(product)s"), values)
        return Text(N_("the API page lists %(page)s; %(apis)s's doc excludes %(dtype)s on %(product)s")
                       if one else N_("the API page lists %(page)s; the docs of %(apis)s exclude %(dtype)s on "
                                      "%(product)s"), values)


def dtype_kind(dtype: str) -> str:
    """'complex', 'float', 'int' or 'bool': a cast across kinds loses information (complex -> int drops the
    imaginary part and the fraction, float -> int the fraction)."""
    if dtype.startswith("complex"):
        return "complex"
    if dtype in FLOAT_DTYPES or dtype.startswith(("float", "hifloat")):
        return "float"
    return "bool" if dtype == "bool" else "int"


_WIDTH = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32, "int64": 64, "uint64": 64}


def cast_target(dtype: str, allowed: Iterable[str]) -> str | None:
    """A dtype of the same kind inside `allowed` to cast `dtype` to (float64 -> float32, int64 -> int32,
    complex128 -> complex64), or None: never across kinds (complex -> int, float -> int lose the data)."""
    allowed = tuple(allowed)
    kinds = ("bool", "int") if dtype == "bool" else (dtype_kind(dtype),)  # bool -> int8/int32 keeps every value
    same_kind = [d for d in allowed if dtype_kind(d) in kinds and d != dtype]
    for preferred in _PREFERENCE:
        if preferred in same_kind:
            return preferred
    return same_kind[0] if same_kind else None


def remedy(dtype: str, allowed: Iterable[str], training: bool = False) -> str:
    """Advice that fits the chip and keeps the data: bf16 where only fp16/fp32 run is 'fp16 or fp32', with loss
    scaling when the capture is a training step (a forward-only scan has no loss to scale); an integer narrowed
    (int64 -> int32) only where its values fit."""
    allowed = tuple(allowed)
    if dtype == "bfloat16" and "float16" in allowed and "float32" in allowed:
        return Text(N_("run it in float16 with loss scaling (torch_npu.npu.amp) or in float32") if training else
                    N_("run it in float16 (torch_npu.npu.amp autocast) or in float32"))
    target = cast_target(dtype, allowed)
    if target is None:
        return Text(N_("no dtype of the same kind is supported: compute it in another op or on the CPU"))
    if _WIDTH.get(target, 64) < _WIDTH.get(dtype, 0):
        bits = _WIDTH[target] - (0 if target.startswith("u") else 1)
        return Text(N_("cast to %(dtype)s only where every value fits (below 2^%(bits)s: e.g. indices into fewer "
                          "elements); else compute it in another op or on the CPU"), {"dtype": target, "bits": bits})
    return Text(N_("cast to %(dtype)s"), {"dtype": target})


def kernel_speaks(aten_ops: Iterable[str], product: Product, dtype: str,
                  facts: kernels.KernelFacts) -> tuple[bool | None, tuple[str, ...], tuple[str, ...], list[str], str]:
    """(takes it?, deciding APIs, their allowed dtypes, evidence, confidence) from the kernel facts."""
    takes, denies, allowed, evidence, confidences = [], [], None, [], []
    for aten in dict.fromkeys(aten_ops):
        verdict = facts.judge(aten, product.kernel, (dtype,))
        head = verdict.main_api if verdict else None
        if verdict is None or head is None or not head.documented or head.product_support is None:
            continue
        if dtype in {d for d, _ in head.excluded}:
            denies.append(head.api)
        elif dtype in head.native:
            takes.append(head.api)
        else:
            continue
        confidences.append(verdict.confidence)
        allowed = head.allowed if allowed is None else tuple(d for d in allowed if d in head.allowed)
        evidence.append(next((e for e in verdict.evidence if f"{head.api}." in e and dtype in e), verdict.evidence[0]))
    confidence = Confidence.weakest(confidences, default=Confidence.LOW)
    denies, takes = list(dict.fromkeys(denies)), list(dict.fromkeys(takes))
    if denies:
        return False, tuple(denies), allowed or (), evidence, confidence
    if takes:
        return True, tuple(takes), allowed or (), evidence, confidence
    return None, (), (), evidence, Confidence.LOW


def check_dtype(dtype: str, product: Product, page_allowed: tuple[str, ...] | None, aten_ops: Iterable[str],
                facts: kernels.KernelFacts, page_unparsed: bool = False, host_copies: tuple[str, ...] = (),
                page_excludes: bool = False) -> DtypeCheck:
    """The hierarchy for one dtype: kernel facts, then the API page (its list for the product), then nothing.
    `host_copies`: the ops that ran are torch_npu's own device-to-host copies (no CANN kernel); `page_excludes`: the
    page names this dtype as unsupported (not merely leaves it out of an allow-list)."""
    kernel_ok, apis, kernel_allowed, evidence, kernel_confidence = kernel_speaks(aten_ops, product, dtype, facts)
    page_ok = None if page_allowed is None else dtype in page_allowed
    if kernel_ok is not None:
        ok, by, allowed = kernel_ok, "kernel", kernel_allowed
    elif page_ok is False and host_copies and not page_excludes:
        # The kernel list registers torch_npu's own copy and no CANN kernel doc could limit its dtype: it runs;
        # the page's allow-list is a caveat (not verified), not a limit
        return DtypeCheck(dtype, True, "host-copy", page_allowed, None, host_copies, (), Confidence.LOW, ())
    elif page_allowed is not None:
        ok, by, allowed = dtype in page_allowed, "api-page", page_allowed
    else:
        ok, by, allowed = True, "none", ()
    if kernel_ok is not None and page_ok is not None:
        agree = Confidence.HIGH if kernel_ok == page_ok else Confidence.MEDIUM
        confidence = Confidence.weakest((kernel_confidence, agree))
    elif kernel_ok is not None or page_ok is not None:
        confidence = Confidence.MEDIUM
    else:
        confidence = Confidence.LOW
    if page_unparsed and by != "kernel":
        confidence = Confidence.LOW  # a conditional clause of the page the facts do not parse may decide this dtype
    return DtypeCheck(dtype, ok, by, page_allowed, kernel_ok, apis, tuple(allowed), confidence, tuple(evidence))


@dataclass(frozen=True)
class ProductCheck:
    """What the evidence says about one operator running on one product at all (before its dtypes and limits)."""

    page: bool | None  # the API page's mark for the product (None: no page row, or no mark for the product)
    kernel: bool | None  # True: the docs of the kernels that ran list the product; False: one marks it ✘; None: silent
    kernel_apis: tuple[str, ...]  # the aclnn APIs whose docs spoke (the ones that decided)
    aclop: bool  # a kernel that ran falls back to the aclop path where CANN lacks the aclnn API
    evidence: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """The verdict: the operator runs on the product. A doc's ✘ decides only where the page does not say ✔ and
        no aclop path exists; the page decides where the docs are silent."""
        if self.kernel is True:
            return True
        if self.kernel is False:
            return self.page is True or (self.page is None and self.aclop)
        return self.page is not False

    @property
    def decided_by(self) -> str:
        return "kernel" if self.kernel is not None else "api-page" if self.page is not None else "none"

    @property
    def disagree(self) -> bool:
        return self.page is not None and self.kernel is not None and self.page != self.kernel

    @property
    def confidence(self) -> Confidence | None:
        """'low' for a page ✘ overruled by the docs (not verified on the product), 'medium' for a doc's ✘ the page
        or an aclop path overrules; None when nothing disagrees (the other checks set the confidence)."""
        if self.disagree:
            return Confidence.LOW if self.kernel else Confidence.MEDIUM
        if self.kernel is False and self.ok:
            return Confidence.LOW
        return None

    def disagreement(self, product: str, page_product: str) -> str:
        """'the API page marks Ascend 950DT ✘; aclnnMm's doc lists Ascend 950: supported'."""
        values = {"page": page_product, "mark": "✔" if self.page else "✘", "apis": ", ".join(self.kernel_apis),
                  "product": product}
        if len(self.kernel_apis) == 1:
            return Text(N_("the API page marks %(page)s %(mark)s; %(apis)s's doc lists %(product)s: supported")
                           if self.kernel else
                           N_("the API page marks %(page)s %(mark)s; %(apis)s's doc lists %(product)s: not supported"),
                           values)
        return Text(N_("the API page marks %(page)s %(mark)s; the docs of %(apis)s list %(product)s: supported")
                       if self.kernel else
                       N_("the API page marks %(page)s %(mark)s; the docs of %(apis)s list %(product)s: not supported"),
                       values)


def check_product(page: bool | None, aten_ops: Iterable[str], product: Product,
                  facts: kernels.KernelFacts) -> ProductCheck:
    """The hierarchy for one product mark: the aclnn docs of the kernels that ran (their main API's ✔/✘ for the
    product; any ✘ counts against), then the API page's mark."""
    takes: list[str] = []
    denies: list[str] = []
    evidence: list[str] = []
    aclop = False
    for aten in dict.fromkeys(aten_ops):
        verdict = facts.judge(aten, product.kernel, ())
        head = verdict.main_api if verdict else None
        if verdict is None or head is None or not head.documented or head.product_support is None:
            continue
        (takes if head.product_support else denies).append(head.api)
        aclop = aclop or verdict.fallback_aclop or verdict.other_acl_op_path
        state = "supported" if head.product_support else "not supported (API-level)"
        evidence.append(f"{verdict.evidence[0]}; cann_aclnn_dtypes.tsv {head.api}: {state} on {product.kernel}")
    if denies:
        return ProductCheck(page, False, tuple(dict.fromkeys(denies)), aclop, tuple(evidence))
    if takes:
        return ProductCheck(page, True, tuple(dict.fromkeys(takes)), aclop, tuple(evidence))
    return ProductCheck(page, None, (), aclop, ())


@dataclass(frozen=True)
class BindingCheck:
    """An ATen op torch_npu does not register whose CANN kernel exists: the work is an op-plugin binding."""

    aten: str
    api: str  # the aclnn API named like the op ("aclnnLgamma")
    dtypes: tuple[str, ...]  # its data carrier's dtypes on the product
    evidence: str


def check_binding(aten: str, product: Product, facts: kernels.KernelFacts) -> BindingCheck | None:
    """The documented aclnn API named like `aten` that op-plugin has no row for, when its doc does not mark the
    product ✘ ('aten::lgamma' -> aclnnLgamma); None when op-plugin has a row, no such API exists, or the doc
    excludes the product (a binding would not help there)."""
    if facts.lookup(aten) is not None:
        return None
    api = facts.named_api(aten)
    if api is None:
        return None
    support, dtypes = facts.api_support(api, product.kernel)
    if support is False:
        return None
    entry = facts.api_entry(api)
    assert entry is not None  # named_api names only APIs with a doc entry
    doc: Sequence[str] = entry.get("doc") or ()  # [repository, path, commit, date]
    where = f" ({doc[0]} {doc[1]})" if len(doc) >= 2 else ""
    said = "supported" if support else "the doc does not name the product"
    name = kernels.overload_key(aten)
    return BindingCheck(aten, api, dtypes, f"cann_aclnn_dtypes.tsv {api}{where}: {said} on {product.kernel}; "
                                           f"op_plugin_aten_to_aclnn.tsv: no row for {name}")


def kernel_takes_param(param: str, aten_ops: Iterable[str], product: Product,
                       facts: kernels.KernelFacts) -> tuple[str, str] | None:
    """(aclnn API, its parameter) when a kernel that ran takes the parameter an API page calls unsupported: an API
    of its op-plugin row, documented and not ✘ on the product, with a parameter named like it ('scale_factor' ->
    aclnnUpsampleNearest2dV2's scalesH). None when no kernel fact speaks for the parameter."""
    stem = param.split("_")[0].lower()
    if len(stem) < 4:  # "dim", "out": too short to tell one parameter from another by name
        return None
    for aten in dict.fromkeys(aten_ops):
        found = facts.lookup(aten)
        entry = facts.aten_entry(found[0]) if found else None
        for api in (entry or {}).get("apis", ()):
            doc = facts.api_entry(api)
            if doc is None or facts.api_support(api, product.kernel)[0] is False:
                continue
            for p in doc.get("params", ()):
                if p.get("io", "").startswith(("input", "attr")) and p["name"].lower().startswith(stem):
                    return api, p["name"]
    return None


def verdict_confidence(checks: Sequence[str], codes: set[str], statuses: tuple[str, ...],
                       documented: bool) -> Confidence:
    """One signature's confidence from its dtype checks' (`checks`), else from what decided it: high when the
    sources that speak agree (or only view/metadata ops ran); medium when one source speaks or they disagree."""
    if checks:
        return Confidence.weakest(checks)
    if codes & {"custom-op", "extension", "autograd-function", "api-unsupported", "no-kernel", "replacement",
                 "binding"}:
        return Confidence.MEDIUM
    if (statuses and all(s in ("everywhere", "view") for s in statuses)) or "host-op" in codes:
        return Confidence.HIGH
    return Confidence.HIGH if documented and "kernel" in statuses else Confidence.MEDIUM


def evidence_order(target: str) -> str:
    """The report header's statement of the hierarchy for a target product ("" for a name the products do not
    know, e.g. an old assessment's)."""
    try:
        product = products.shipped().resolve(target)
    except KnowledgeBaseError:
        return ""
    page = "the torch_npu API page" if product.api_page else "the torch_npu API page (which has no column for it)"
    return f"Verdicts from: kernel facts (CANN aclnn docs) for {product.name}, then {page}, then the dispatcher."
