"""The checks of one signature against the documented limits (the classifier's steps 2 and 4): the API page's
dtype, parameter and rank limits, the data-carrying tensor's dtype judged with the kernel facts first, and the
kernels' argument checks (float64 / int64 casts). Each adds its reason, from a message id, to the signature's
Judgement."""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..kb.evidence import check_dtype, kernel_takes_param, remedy
from ..kb.facts import ApiFact, Limitation
from ..messages import N_, Text
from ..reasons import (
    CPU_FALLBACK,
    DTYPE,
    DTYPE_CAST,
    HOST_COPY,
    KERNEL_DTYPE,
    KERNEL_PARAM,
    OPTIONS_ONLY,
    PARAM_LIMIT,
    SHAPE_LIMIT,
)
from ..records import Operator, Signature
from ..vocabulary import Category, Confidence
from .aten import reading_ops
from .judgement import Judgement

if TYPE_CHECKING:
    from ..kb.kernels import KernelFacts
    from ..kb.products import Product
    from ..kb.store import KnowledgeBase
    from .aten import AtenVerdict


class SignatureChecks:
    """The limit checks of the classifier (a mixin of classify/operators._Classifier, which sets these)."""

    kb: KnowledgeBase
    target: Product
    product: str  # as reports print it
    page: str  # the API pages' product name
    facts: KernelFacts
    trained: bool  # the capture is a training step (a bf16 remedy then scales the loss)

    def _limits(self, op: Operator, sig: Signature, j: Judgement, api: ApiFact, dtypes: bool = True,
                kernel_atens: Sequence[str] = ()) -> None:
        """The API page's limits for this signature; a parameter the page calls unsupported but a kernel that ran
        takes is decided by the kernel facts (kb/evidence.kernel_takes_param)."""
        lim: Limitation | None = api.limitation
        assert lim is not None  # called only for an API with a limitation
        evidence = api.evidence()
        if api.api != op.key:
            evidence = f"{evidence}; rules.toml: calls {op.key} -> {api.api}"
        attrs = dict(sig.attrs)
        allowed = lim.allowed_dtypes(self.page, attrs) if dtypes else None
        if allowed is not None:  # the first tensor is judged with the kernel facts (_dtypes); float64 elsewhere here
            first = next((d for d in sig.input_dtypes if d), None)
            for dtype in dict.fromkeys(d for d in sig.input_dtypes if d == "float64" and d != first):
                if dtype not in allowed:
                    j.add_message(DTYPE, N_("input dtype %(dtype)s is not supported by %(api)s on %(product)s "
                                              "(allowed: %(allowed)s); %(remedy)s"),
                                  {"dtype": dtype, "api": api.api, "product": self.product,
                                   "allowed": ", ".join(allowed), "remedy": remedy(dtype, allowed, self.trained)},
                                  evidence, category=Category.PARAM_CONVERTED)
        outputs = {d for node in _nodes_of(op, sig) for d in node.output_dtypes if d}
        for cast in lim.dtype_casts:
            if dtypes and cast.get("from") == "float64" and ("float64" in outputs or "float64" in sig.input_dtypes):
                j.add_message(DTYPE_CAST, N_("the NPU returns %(dtype)s where this model expects float64; keep the "
                                               "model in float32 or compute this step on the CPU"),
                              {"dtype": cast["to"]}, evidence, category=Category.PARAM_CONVERTED)
            elif cast.get("from") == "int64" and cast.get("when_param") and attrs.get(cast["when_param"]) is True:
                what = cast.get("output") or Text(N_("the indices"))
                j.add_message(DTYPE_CAST, N_("with %(param)s=True the NPU returns %(output)s as %(dtype)s (int64 "
                                               "elsewhere); cast where the model relies on int64"),
                              {"param": cast["when_param"], "output": what, "dtype": cast["to"]}, evidence,
                              category=Category.PARAM_CONVERTED)
        for rule in lim.param_rules_for(self.page):
            if rule.param not in attrs:
                continue
            value = attrs[rule.param]
            taken = kernel_takes_param(rule.param, kernel_atens, self.target, self.facts) \
                if rule.rule == "unsupported" else None
            if taken is not None and rule.violated_by(value):  # the kernel facts speak for the parameter
                j.confidences.append(Confidence.MEDIUM)
                j.add_message(KERNEL_PARAM, N_("%(param)s=%(value)s: the API page says %(rule)s; %(api)s's doc "
                                                 "takes %(taken)s: the kernel facts decide"),
                              {"param": rule.param, "value": repr(value), "rule": rule.describe(), "api": taken[0],
                               "taken": taken[1]}, f"{evidence}; cann_aclnn_dtypes.tsv {taken[0]}.{taken[1]}")
            elif rule.violated_by(value):
                j.add_message(PARAM_LIMIT, N_("%(param)s=%(value)s: %(rule)s on the NPU (silently changed at run "
                                                "time)") if rule.auto_fixed else
                              N_("%(param)s=%(value)s: %(rule)s on the NPU"),
                              {"param": rule.param, "value": repr(value), "rule": rule.describe()}, evidence,
                              category=Category.PARAM_CONVERTED)
        for ndim_rule in lim.ndim_rules:
            if ndim_rule.param not in ("input", "self") or not sig.input_shapes or sig.input_shapes[0] is None:
                continue
            ndim = len(sig.input_shapes[0])
            if ndim_rule.violated_by(ndim):
                j.add_message(SHAPE_LIMIT, N_("input rank %(ndim)s: %(rule)s"),
                              {"ndim": ndim, "rule": ndim_rule.describe()}, evidence, category=Category.PARAM_CONVERTED)
        if not dtypes:
            return
        if lim.cpu_only or lim.cpu_fallback == "always":
            j.add_message(CPU_FALLBACK, N_("%(api)s runs on the CPU, not the NPU"), {"api": api.api}, evidence,
                          category=Category.CUSTOM_DEV)
        elif lim.cpu_fallback == "may":
            j.add_message(CPU_FALLBACK, N_("%(api)s may fall back to the CPU for some inputs (a performance risk)"),
                          {"api": api.api}, evidence, per_signature=False)

    def _dtypes(self, op: Operator, sig: Signature, j: Judgement, api: ApiFact | None,
                verdicts: dict[str, AtenVerdict]) -> None:
        """The data-carrying tensor's dtype: kernel facts for the product, then the API page (kb/evidence.py)."""
        dtype = next((d for d in sig.input_dtypes if d), None)
        if dtype is None or not op.aten:  # no ATen op ran (nn.Identity, Dropout in eval): no kernel reads the data
            return
        borrower = self.kb.rules.options_only_of(op.key)
        if borrower is not None:
            j.add_message(OPTIONS_ONLY, N_("%(op)s borrows only dtype and device from self: a dtype limit on self "
                                             "does not apply to the data"), {"op": op.key},
                          f"rules.toml: options_only ({borrower})", per_signature=False)
            return
        verdicts = _verdicts_of(op, sig, verdicts, dtype)
        # the page's limits hold where the page speaks for the product at all (a product it has no mark for is
        # judged by the kernel facts alone: the page's list was written for the products it covers)
        lim = api.limitation if api is not None and api.supported(self.page) is not None else None
        page = lim.allowed_dtypes(self.page, dict(sig.attrs)) if lim is not None else None
        unparsed = bool(lim and any("dtype" in tag for tag in lim.unparsed))
        hosts = tuple(v.op for v in verdicts.values() if v.host_copy) if verdicts and all(
            v.host_copy for v in verdicts.values()) else ()
        check = check_dtype(dtype, self.target, page, reading_ops(verdicts, dtype), self.facts, unparsed, hosts,
                            bool(lim and lim.excludes(dtype, self.page)))
        if check.decided_by in ("none", "api-page") and verdicts and all(
                v.view or v.status == "everywhere" for v in verdicts.values()):
            # only views ran (Tensor.detach): no kernel reads the data, so neither a missing dtype fact nor the API
            # page's list is a limit this signature crosses
            return
        j.confidences.append(check.confidence)
        evidence = "; ".join(check.evidence) if check.decided_by == "kernel" else (api.evidence() if api else "")
        if check.decided_by == "host-copy":
            j.add_message(HOST_COPY, N_("%(dtype)s is not in the API page's list for %(api)s (%(allowed)s), but "
                                          "%(ops)s is torch_npu's own device-to-host copy, with no CANN kernel whose "
                                          "doc limits its dtype: it runs; not verified for %(dtype)s on %(product)s"),
                          {"dtype": dtype, "api": api.api if api else op.key, "allowed": ", ".join(page or ()),
                           "ops": ", ".join(hosts), "product": self.product},
                          "; ".join((evidence, *(v.evidence for v in verdicts.values()))))
        elif check.ok and check.disagree:
            j.add_message(KERNEL_DTYPE, N_("%(dtype)s runs natively: %(disagreement)s; the kernel facts decide"),
                          {"dtype": dtype, "disagreement": check.disagreement(self.product)}, evidence)
        elif not check.ok:
            who = ", ".join(check.kernel_apis) if check.decided_by == "kernel" else api.api if api else \
                Text(N_("its API"))
            text = N_("input dtype %(dtype)s is not supported by %(api)s on %(product)s (allowed: %(allowed)s); "
                      "%(remedy)s (%(disagreement)s; the kernel facts decide)") if check.disagree else \
                N_("input dtype %(dtype)s is not supported by %(api)s on %(product)s (allowed: %(allowed)s); "
                   "%(remedy)s")
            j.add_message(DTYPE, text, {"dtype": dtype, "api": who, "product": self.product,
                                          "allowed": ", ".join(check.allowed) or Text(N_("none")),
                                          "remedy": remedy(dtype, check.allowed, self.trained),
                                          "disagreement": check.disagreement(self.product) if check.disagree else ""},
                          evidence, category=Category.PARAM_CONVERTED)


def _verdicts_of(op: Operator, sig: Signature, verdicts: dict[str, AtenVerdict],
                 dtype: str | None = None) -> dict[str, AtenVerdict]:
    """The verdicts of the ATen ops this signature's calls dispatched that read the data in `dtype` (a call on a
    float32 copy, as nn.MultiheadAttention's bf16 path computes its scores, or on a bool mask, does not), and of the
    entry ops judged whole: another signature's kernel (F.interpolate's nearest mode beside its bilinear one) or a
    kernel fed another dtype states no limit of this one."""
    calls = [c for n in _nodes_of(op, sig) for c in n.aten]
    if not calls:
        return verdicts
    mine = {c.qualified for c in calls if dtype is None or dtype in c.input_dtypes or not any(c.input_dtypes)}
    return {a: v for a, v in verdicts.items() if a in mine or a not in op.aten}


def _nodes_of(op: Operator, sig: Signature):
    return [n for n in op.nodes if dict(n.attrs) == dict(sig.attrs) and tuple(n.input_shapes) == tuple(sig.input_shapes)
            and tuple(n.input_dtypes) == tuple(sig.input_dtypes)]
