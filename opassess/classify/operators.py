"""Classify stage: give every operator a migration category (direct / param-converted / custom-dev) with its reasons.

Each signature (one distinct attribute/shape/dtype combination) is judged on its own, from the facts:
  1. a project's own op (kind "custom") is custom-dev unless a replacement exists (then param-converted);
     an autograd.Function whose traced forward only dispatches ATen ops with NPU kernels is param-converted
     (its hand-written backward was not traced and must be checked);
  2. one evidence hierarchy (kb/evidence.py) for every kind of fact: the kernel facts for the target product (the
     aclnn docs of the kernels that ran: product support, dtypes, exclusions) decide, the torch_npu API page where
     they are silent; a disagreement lowers the confidence and is said in the reason, never raises the category.
     So an API page ✘ is custom-dev only where the kernel docs do not list the product (else direct, confidence
     low, "not verified"); a supported API is direct unless this signature trips a documented limit (a dtype
     outside the allowed list, a parameter value outside its rule, an input rank) - then param-converted; a
     limitation saying it always falls back to the CPU is custom-dev;
  3. the ATen ops the node dispatched (aten.py): each needs an NPU kernel for the torch version, or runs on every
     backend (a view), or is covered as the dispatcher of the torch in use runs it: the composite kernel torch
     registers (CompositeImplicitAutograd, CompositeExplicitAutograd, CompositeExplicitAutogradNonFunctional) is run
     on meta and what it calls is judged in turn (a structured op's functional calls its out variant:
     softplus_backward -> softplus_backward.grad_input; select_backward -> zeros, select, copy_). Composites
     torch_npu takes whole (scaled_dot_product_attention, lstm) are judged by their own kernel; the CPU/meta
     decomposition seen while tracing is not judged. An ATen op with none of these whose CANN aclnn kernel is
     documented for the product is param-converted, reason "binding" (an op-plugin registration, not a kernel:
     lgamma -> aclnnLgamma); else custom-dev (it would fall back to the CPU), unless a replacement exists;
  4. kernel argument checks add float64 / int64 cast findings for the dtypes this signature carries;
  5. an operator nothing in the knowledge base speaks for is custom-dev, "not in the knowledge base";
  6. a training step (--train): the ATen ops its backward dispatched are judged the same way (one without an NPU
     kernel is custom-dev, or param-converted when the operator's NPU replacement brings its own backward), and an
     optimizer step that the NPU also runs as one fused kernel says how to ask for it (rules.toml: fused_step).
The operator's category is the worst of its signatures.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..kb.evidence import ProductCheck, check_product, verdict_confidence
from ..kb.facts import ApiFact
from ..kb.products import Product
from ..kb.rules import Composite, FusedStep, Replacement
from ..kb.store import KnowledgeBase
from ..kb.versions import Version, format_version
from ..messages import N_, Text
from ..reasons import (
    API_SUPPORTED,
    API_UNDOCUMENTED,
    API_UNSUPPORTED,
    BINDING,
    DECOMPOSES,
    HOST_OP,
    KERNEL,
    KERNEL_PRODUCT,
    KERNEL_UNSUPPORTED,
    NO_KERNEL,
    NOT_IN_KB,
    REPLACEMENT,
    VIEW_OP,
)
from ..records import AtenCall, ClassifiedOp, Inventory, Operator, Reason, Signature
from ..vocabulary import PROJECT_KINDS, Category, Confidence
from .aten import AtenJudge, AtenVerdict, binding_reason, kernel_ops
from .checks import kernel_checks
from .collective import classify_collective, collective_name, nested_collectives
from .judgement import Judgement
from .library import classify_library
from .limits import SignatureChecks
from .project import judge_project_op, unbuilt_reasons
from .scope import backward_of, deprecation, judge_backward, taken_whole

_NON_ATEN = ("aten", "prims")


# Reasons that already say why an operator nothing in the knowledge base speaks for is what it is.
_SAYS_WHY_UNKNOWN = ("custom-op", "host-op", "extension", "decomposes", "register-composite")


@dataclass
class _Scope:
    """What one operator is judged against, found once for all its signatures (step 1 of `classify`)."""

    composite: Composite | None  # a composite torch_npu runs whole (rules.toml)
    api: ApiFact | None  # its torch_npu API page (None for a project's own op)
    required: Replacement | None  # the replacements the facts name for it, by when they apply
    optional: Replacement | None
    on_limit: Replacement | None
    verdicts: dict[str, AtenVerdict]  # the ATen ops judged, each with its verdict
    aten_support: dict[str, bool]  # every ATen op it dispatched -> runs on the NPU
    known: bool  # something in the knowledge base speaks for it
    shared: list[Reason] = field(default_factory=list)  # reasons that hold for every signature
    whole: tuple[str, ...] = ()  # entry ops torch_npu runs whole
    decomposition: tuple[str, ...] = ()  # their CPU/meta decomposition's ATen ops (not judged)


class _Classifier(AtenJudge, SignatureChecks):
    def __init__(self, kb: KnowledgeBase, product: Product, version: Version, trained: bool = False,
                 registered: Mapping[str, tuple[str, ...]] | None = None,
                 references: Mapping[str, tuple[str, ...]] | None = None,
                 unbuilt: Mapping[str, str] | None = None) -> None:
        self.kb = kb
        self.unbuilt = dict(unbuilt or {})  # the project's own extensions not built here -> the line building them
        self.target = product
        self.product = product.name  # as reports print it
        self.page = product.api_page or product.name  # the API pages' and their limitations' product name
        self.facts = kb.kernel_facts
        self.trained = trained  # the capture ran backward(): an autograd.Function's backward was traced
        # the composite keys the worker saw registered for the non-ATen ops (a library's torch.library ops)
        self.registered = dict(registered or {})
        # the ATen ops a project op's CPU reference implementation ran, measured by the worker
        self.references = dict(references or {})
        self.version = version
        self.version_text = format_version(version)
        self._verdicts: dict[str, AtenVerdict] = {}
        self.samples: dict[str, AtenCall] = {}  # qualified ATen op -> a recorded call of it (of the current operator)

    # -------------------------------------------------------------- one operator

    def classify(self, op: Operator) -> ClassifiedOp:
        """The module docstring's steps, one call each."""
        if op.kind == "library":  # a stand-in's record of GPU-only library code: judged from the source facts
            return classify_library(op)
        collective = classify_collective(op, self.target.kernel)  # HCCL runs it: judged from the HCCL facts
        if collective is not None:
            return collective
        for node in op.nodes:
            for call in (*node.aten, *node.backward):
                self.samples.setdefault(call.qualified, call)
        scope = self._scope(op)
        if op.kind == "extension":
            scope.shared += unbuilt_reasons(op, self.unbuilt)
        judgements = [self._judge(op, index, sig, scope)  # an operator with no signature is judged once
                      for index, sig in enumerate(op.signatures or (None,))]
        backward_support = self._backward(op, judgements, scope) if op.backward_aten else {}
        fused = self.kb.rules.fused_step(op.key) if op.kind == "optimizer" else None
        if fused and fused.aten not in op.aten:
            scope.shared.append(Reason.of("fused-step", N_("optional: %(setting)s runs this step as one NPU kernel "
                                                           "(%(aten)s) instead of one kernel per _foreach_ operation"),
                                          {"setting": fused.setting, "aten": fused.aten}, fused.evidence))
        if not scope.known:
            _not_in_kb(op, judgements)
        return self._verdict(op, judgements, scope, backward_support, fused)

    def _scope(self, op: Operator) -> _Scope:
        """Which ATen ops are judged (a composite taken whole is judged by its own kernel, the CPU/meta decomposition
        of an op taken whole is not), their verdicts, the API page, the replacements, and the reasons that say what
        was left out."""
        kb = self.kb
        composite = kb.rules.composite_for_api(op.key)
        host_factory = op.key in kb.rules.host_factories and _from_python_data(op)
        api = kb.api(op.key, self.version_text) if op.kind not in PROJECT_KINDS and not host_factory else None
        replacements = kb.replacements_for(op.key)
        judged = [composite.aten] if composite else [a for a in op.aten if not kb.rules.cpu_only_of(a)]
        skipped = ([a for a in op.aten if a != composite.aten] if composite
                   else [a for a in op.aten if kb.rules.cpu_only_of(a)])
        whole = () if composite or op.kind in PROJECT_KINDS else taken_whole(kb, self.version, op)
        verdicts = {a: self.aten_verdict(a, self.samples.get(a)) for a in dict.fromkeys((*whole, *judged))
                    if a.split("::")[0] in _NON_ATEN}
        # The CPU/meta decomposition of an op taken whole is not judged: its verdicts leave `verdicts`.
        removed = {a: verdicts.pop(a) for a in [a for a, v in verdicts.items() if whole and not v.supported]}
        decomposition = list(removed)
        skipped += decomposition
        aten_support = {a: v.supported for a, v in verdicts.items()}
        for a in skipped:
            aten_support.setdefault(a, (removed[a] if a in removed else self.aten_verdict(a, self.samples.get(a))
                                        ).supported)
        shared: list[Reason] = []
        if host_factory:
            shared.append(Reason.of("host-factory", N_("%(op)s fills its tensor from Python data on the host and "
                                                       "copies it to the device: no device kernel computes it, so its "
                                                       "API page's product mark does not apply"), {"op": op.key},
                                    f"rules.toml: host_factories ({kb.rules.host_factory_evidence})"))
        if composite:
            whole_text = N_("torch_npu runs %(op)s whole; the decomposition traced here (%(traced)s) is not judged") \
                if skipped else N_("torch_npu runs %(op)s whole")
            shared.append(Reason.of("composite", whole_text, {"op": composite.aten, "traced": ", ".join(
                dict.fromkeys(skipped))}, f"rules.toml: composite {composite.aten} ({composite.evidence})"))
            if kb.rules.fallback_of(composite.aten, self.target.kernel) is not None:
                shared.append(Reason.of("composite", N_("on %(product)s torch_npu's kernel for %(op)s runs no fused "
                                                        "NPU kernel but PyTorch's decomposition %(fallback)s: the ops "
                                                        "it calls are judged, and run unfused"),
                                        {"product": self.product, "op": composite.aten, "fallback": composite.fallback},
                                        f"rules.toml: composite {composite.aten} fallback "
                                        f"({composite.fallback_evidence})"))
        if decomposition:
            shared.append(Reason.of("taken-whole", N_("torch_npu runs %(ops)s whole (the op called has an NPU kernel); "
                                                      "%(skipped)s, seen in the CPU/meta decomposition, is not judged"),
                                    {"ops": ", ".join(whole), "skipped": ", ".join(decomposition)},
                                    "; ".join((verdicts.get(a) or removed[a]).evidence for a in whole)))
        if not composite:
            for a in dict.fromkeys(a for a in skipped if a not in decomposition):
                owner = kb.rules.cpu_only_of(a)
                assert owner is not None  # `skipped` holds only the CPU-only ops of a composite here
                shared.append(Reason.of("cpu-only-decomposition", N_("%(op)s is the CPU decomposition of %(owner)s, "
                                                                     "which the NPU runs whole; not judged"),
                                        {"op": a, "owner": owner.aten}, f"rules.toml: composite {owner.aten}"))
        # The NPU kernel list is exhaustive, so an ATen op absent from it is a known gap, not an unknown.
        known = bool(api or verdicts or replacements or op.key in kb.rules.third_party or op.key in kb.rules.host_ops
                     or any(collective_name(a) for a in op.aten))  # a collective it ran: the HCCL facts speak
        required, optional, on_limit = (next((r for r in replacements if r.when == when), None)
                                        for when in ("required", "optional", "on-limit"))
        return _Scope(composite, api, required, optional, on_limit, verdicts=verdicts, aten_support=aten_support,
                      known=known, shared=shared, whole=whole, decomposition=tuple(decomposition))

    def _judge(self, op: Operator, index: int, sig: Signature | None, scope: _Scope) -> Judgement:
        """One signature: a project's own op, or a native API with its ATen ops; then the kernels' argument checks."""
        j = Judgement(index)
        if op.kind in PROJECT_KINDS:
            reference = {a: self.aten_verdict(a, None) for a in self.references.get(op.key, ())}
            judge_project_op(op, j, scope.verdicts, scope.required, self.trained, self.registered, reference)
        else:
            self._native(op, sig, j, scope.api, scope.verdicts, scope.required)
            dtype = next((d for d in sig.input_dtypes if d), None) if sig is not None else None
            for category, reason in nested_collectives(op, index if sig is not None else None, dtype,
                                                       self.target.kernel):
                j.take(category, reason)
        kernel_checks(self.kb, sig, j, scope.verdicts)
        return j

    def _backward(self, op: Operator, judgements: list[Judgement], scope: _Scope) -> dict[str, bool]:
        """With --train: the ATen ops op's backward dispatched, judged (scope.py); op -> runs on the NPU."""
        decomposed = [a for a in op.backward_aten if backward_of(a, scope.decomposition)]
        verdicts = {a: self.aten_verdict(a, self.samples.get(a)) for a in op.backward_aten if a not in decomposed}
        return judge_backward(judgements, verdicts, scope.composite, scope.required, self.version_text,
                              (scope.whole, decomposed))

    def _verdict(self, op: Operator, judgements: list[Judgement], scope: _Scope, backward_support: dict[str, bool],
                 fused: FusedStep | None) -> ClassifiedOp:
        """The operator's record: the worst signature's category, the weakest confidence, the replacement to name,
        its nature, and every reason once."""
        kb, shared, verdicts = self.kb, scope.shared, scope.verdicts
        required, optional, on_limit = scope.required, scope.optional, scope.on_limit
        family = kb.rules.nature(op.key)
        within_limits = all(j.category == Category.DIRECT for j in judgements)
        if family and family.nature == Category.PARAM_CONVERTED and within_limits:
            shared.append(Reason.of("nature", N_("its parameters map onto a CANN operator's attributes; this model's "
                                                 "values are within the documented limits"), {},
                                    f"rules.toml: family ({family.evidence})"))
        category = Category.worst(j.category for j in judgements) if judgements else Category.DIRECT
        statuses = tuple("view" if v.view else v.status for v in verdicts.values())
        confidence = Confidence.weakest((verdict_confidence(j.confidences, {r.code for r in j.reasons}, statuses,
                                                            scope.api is not None) for j in judgements),
                                        default=Confidence.HIGH)
        if not scope.known:
            confidence = Confidence.LOW
        replacement = required or optional or (on_limit if category != Category.DIRECT else None)
        if on_limit and category != Category.DIRECT:
            shared.append(Reason.of("replacement", N_("if the model cannot stay within the limits: %(api)s (%(note)s)"),
                                    {"api": on_limit.api, "note": on_limit.note}, on_limit.evidence))
        if optional and not required and category == Category.DIRECT:
            shared.append(Reason.of("replacement", N_("optional: %(api)s is a fused NPU kernel for this (%(note)s)"),
                                    {"api": optional.api, "note": optional.note}, optional.evidence))
        reasons = _dedupe(tuple(shared) + tuple(r for j in judgements for r in j.reasons))
        signature_categories = tuple(j.category for j in judgements[: len(op.signatures)])
        return ClassifiedOp(
            operator=op, category=category, signature_categories=signature_categories, reasons=reasons,
            replacement=replacement.api if replacement else (_fused_route(fused) if fused else None),
            cann_op=self._cann_op(op, verdicts), known=scope.known, aten_support=scope.aten_support,
            backward_support=backward_support, confidence=confidence,
            **deprecation(kb, replacement))

    def _cann_op(self, op: Operator, verdicts: dict[str, AtenVerdict]) -> str | None:
        name = self.kb.cann_op(op.key)
        if name:
            return name
        for aten in verdicts:
            name = self.kb.cann_op(aten)
            if name:
                return name
        return None

    # -------------------------------------------------------------- native APIs and ATen ops

    def _native(self, op: Operator, sig: Signature | None, j: Judgement, api: ApiFact | None,
                verdicts: dict[str, AtenVerdict], required) -> None:
        kb = self.kb
        documented = api.supported(self.page) if api else None
        mark = check_product(documented, kernel_ops(verdicts), self.target, self.facts)
        if not mark.ok:
            self._unsupported(op, j, api, mark, required)
            return
        if mark.confidence is not None:
            j.confidences.append(mark.confidence)
        if mark.disagree or mark.kernel is False:
            said = mark.disagreement(self.product, self.page) if mark.disagree else Text(
                N_("%(apis)s marked not supported on %(product)s in its doc"),
                {"apis": ", ".join(mark.kernel_apis), "product": self.product})
            verdict = (Text(N_("the kernel facts decide; not verified on %(product)s"), {"product": self.product})
                       if mark.kernel else Text(N_("the API page decides")) if mark.page else
                       Text(N_("the kernel falls back to the aclop path there")))
            j.add_message(KERNEL_PRODUCT, N_("%(said)s: %(verdict)s"), {"said": said, "verdict": verdict},
                          "; ".join((*mark.evidence, api.evidence() if api else "")).strip("; "), per_signature=False)
        if api is not None and documented:
            j.add_message(API_SUPPORTED, N_("%(api)s is documented as supported on %(product)s (torch %(version)s)"),
                          {"api": api.api, "product": self.product, "version": api.doc_version}, api.evidence(),
                          per_signature=False)
        if api is not None and documented is not None:  # the page's limits hold where the page speaks at all
            if api.limitation is not None and sig is not None:
                self._limits(op, sig, j, api, kernel_atens=kernel_ops(verdicts))
            called = kb.api(kb.rules.calls[op.key], self.version_text) if op.key in kb.rules.calls else None
            if called is not None and called.limitation is not None and sig is not None:
                # The module's forward calls this functional: its parameter and shape limits apply too.
                self._limits(op, sig, j, called, dtypes=False, kernel_atens=kernel_ops(verdicts))
        if sig is not None:
            self._dtypes(op, sig, j, api, verdicts)
        if api is not None and documented is None:
            j.add_message(API_UNDOCUMENTED,
                          N_("%(api)s has no support mark for %(product)s; judged by its ATen kernels"),
                          {"api": api.api, "product": self.product}, api.evidence(), per_signature=False)

        missing = [v for v in verdicts.values() if not v.supported and v.status != "binding"]
        bindings = [v for v in verdicts.values() if v.status == "binding"]
        for v in verdicts.values():
            if v.status == "kernel":
                j.add_message(KERNEL, N_("%(op)s has an NPU kernel for torch %(version)s"),
                              {"op": v.op, "version": self.version_text}, v.evidence, per_signature=False)
            elif v.status == "everywhere":
                j.add_message(VIEW_OP, N_("%(op)s runs on every backend (composite/view kernel)"), {"op": v.op},
                              v.evidence, per_signature=False)
            elif v.status == "decomposes":
                j.add_message(DECOMPOSES, N_("%(op)s has no NPU kernel of its own but decomposes into ops that do; "
                                             "expect extra kernel launches"), {"op": v.op}, v.evidence,
                              per_signature=False)
        if bindings and (missing or documented or required is None):
            j.add_message(BINDING, *binding_reason(bindings),
                          category=None if missing or documented else Category.PARAM_CONVERTED)
        elif bindings:
            missing += bindings
        if missing:
            names = ", ".join(v.op for v in missing)
            if documented:
                assert api is not None  # documented: the API page said so
                j.add_message(NO_KERNEL, N_("%(ops)s not in the NPU kernel list although %(api)s is documented as "
                                              "supported; trusting the documentation"), {"ops": names, "api": api.api},
                              "; ".join(v.evidence for v in missing), per_signature=False)
            elif required is not None:
                j.add_message(REPLACEMENT, N_("%(ops)s has no NPU kernel; use %(api)s (%(note)s)"),
                              {"ops": names, "api": required.api, "note": required.note}, required.evidence,
                              category=Category.PARAM_CONVERTED)
            elif any(v.lacking for v in missing):  # a composite judged by what its kernel calls
                callees = ", ".join(dict.fromkeys(c for v in missing for c in v.lacking))
                j.add_message(NO_KERNEL, N_("%(ops)s has no NPU kernel for torch %(version)s, and its composite "
                                              "kernel calls %(called)s, which has none: it would fall back to the "
                                              "CPU"), {"ops": names, "version": self.version_text, "called": callees},
                              "; ".join(v.evidence for v in missing), category=Category.CUSTOM_DEV)
            else:
                j.add_message(NO_KERNEL, N_("%(ops)s has no NPU kernel for torch %(version)s and no decomposition: "
                                              "it would fall back to the CPU"), {"ops": names,
                                                                                 "version": self.version_text},
                              "; ".join(v.evidence for v in missing), category=Category.CUSTOM_DEV)
        if api is None and not verdicts and sig is not None:
            if op.key in kb.rules.host_ops or not op.aten:
                j.add_message(HOST_OP, N_("%(op)s dispatched no ATen operator (Python-level indexing or metadata)"),
                              {"op": op.key},
                              kb.rules.host_evidence if op.key in kb.rules.host_ops else "trace: no ATen op dispatched",
                              category=Category.DIRECT)

    def _unsupported(self, op: Operator, j: Judgement, api: ApiFact | None, mark: ProductCheck, required) -> None:
        """The hierarchy says the operator does not run on the product: a replacement, else custom-dev."""
        if required is not None:
            j.add_message(REPLACEMENT, N_("%(op)s is not supported on %(product)s; use %(api)s (%(note)s)"),
                          {"op": op.key, "product": self.product, "api": required.api, "note": required.note},
                          required.evidence, category=Category.PARAM_CONVERTED)
        elif mark.page is False:
            assert api is not None  # the page spoke: there is one
            text = N_("%(api)s is marked unsupported (✘) for %(product)s in the torch %(version)s support list; "
                      "%(apis)s's doc agrees") if mark.kernel is False else \
                N_("%(api)s is marked unsupported (✘) for %(product)s in the torch %(version)s support list")
            j.add_message(API_UNSUPPORTED, text, {"api": api.api, "product": self.product, "version":
                                                    api.doc_version, "apis": ", ".join(mark.kernel_apis)},
                          "; ".join((api.evidence(), *mark.evidence)), category=Category.CUSTOM_DEV)
        else:
            j.add_message(KERNEL_UNSUPPORTED, N_("%(apis)s is marked not supported on %(product)s in its doc and the "
                                                   "kernel has no aclop fallback"),
                          {"apis": ", ".join(mark.kernel_apis), "product": self.product}, "; ".join(mark.evidence),
                          category=Category.CUSTOM_DEV)


def _fused_route(fused) -> str:
    """'torch.optim.AdamW(fused=True)' for the fused step 'torch.optim.AdamW.step'."""
    return f"{fused.step.removesuffix('.step')}({fused.setting})"


def _not_in_kb(op: Operator, judgements: list[Judgement]) -> None:
    """Step 5: an operator nothing in the knowledge base speaks for is custom-dev (unless a reason says why)."""
    for j in judgements:
        if any(r.code in _SAYS_WHY_UNKNOWN for r in j.reasons):
            continue
        text = N_("%(op)s is not in the knowledge base: no documented API, no NPU kernel for %(aten)s, no "
                  "replacement") if op.aten else N_("%(op)s is not in the knowledge base: no documented API, no NPU "
                                                    "kernel for its ATen ops, no replacement")
        j.add_message(NOT_IN_KB, text, {"op": op.key, "aten": ", ".join(op.aten)}, "knowledge base: no entry",
                      category=Category.CUSTOM_DEV)


def _from_python_data(op: Operator) -> bool:
    """Every call of `op` was given Python data, no tensor (torch.tensor([1.0, 2.0]), not torch.as_tensor(x))."""
    return all(not any(sig.input_dtypes) for sig in op.signatures)


def _dedupe(reasons: tuple[Reason, ...]) -> tuple[Reason, ...]:
    seen, out = set(), []
    for reason in reasons:
        key = (reason.code, reason.message, reason.evidence, reason.signature)
        if key not in seen:
            seen.add(key)
            out.append(reason)
    return tuple(out)


def classify(inventory: Inventory, kb: KnowledgeBase, *, target: str | None = None,
             torch_version: str | None = None) -> tuple[ClassifiedOp, ...]:
    """Classify every operator of the inventory against `target` and the torch version (defaults: the KB's)."""
    product = kb.product(kb.default_product if target is None else target)
    classifier = _Classifier(kb, product, kb.resolve_version(torch_version),
                             trained=inventory.capture.training,
                             registered={r.op: r.kinds for r in inventory.capture.registrations},
                             references={r.op: r.reference for r in inventory.capture.registrations if r.reference},
                             unbuilt={s.library: s.built_by for s in inventory.capture.stand_ins if s.built_by})
    return tuple(classifier.classify(op) for op in inventory.operators)


__all__ = ["classify"]
