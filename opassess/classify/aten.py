"""How one ATen op runs on the NPU, as the classifier judges it: its own NPU kernel, a view every backend runs, or the
dispatcher's structure (what the composite kernel torch registers calls, judged in turn); an op missing all of
these whose CANN aclnn kernel is documented is a binding to write (kb/evidence.check_binding)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..kb.catalog import CALLING, CALLING_OUT, DISPATCHED, FALLS_BACK
from ..kb.evidence import check_binding
from ..messages import N_
from ..records import AtenCall
from .decompose import composite_calls, dispatch_kinds, has_backend_kernel, is_view, returns_to_host, torch_version_text

if TYPE_CHECKING:
    from ..kb.kernels import KernelFacts
    from ..kb.products import Product
    from ..kb.rules import Composite
    from ..kb.store import KnowledgeBase
    from ..kb.versions import Version

_MAX_DEPTH = 3  # composites calling composites: select_backward -> zeros -> zero_


@dataclass(frozen=True)
class AtenVerdict:
    """How one ATen op would run on the NPU."""

    op: str
    status: str  # "kernel" | "everywhere" | "decomposes" | "binding" | "missing"
    evidence: str
    supported: bool
    kernels: tuple[str, ...] = ()  # the NPU kernels it runs when not its own (a composite's callees, an out variant)
    binding: str | None = None  # status "binding": the CANN aclnn API an op-plugin registration would bind
    # torch_npu's own kernel (no CANN path, no op-plugin row) for an op that returns only to the host: a
    # device-to-host copy (aten::_local_scalar_dense), whose dtypes no CANN kernel doc limits
    host_copy: bool = False
    view: bool = False  # it runs, and its schema makes it a view (reads no data: no dtype limit applies)
    lacking: tuple[str, ...] = ()  # status "missing" for a composite: the ops its kernel calls that have no NPU kernel
    # a composite run through its fallback decomposition (rules.toml [[composite]] fallback): (the dtype of the call it
    # was run with, the kernel ops among its callees that read data in that dtype); PyTorch's math attention casts
    # bf16 to float32 first, so only the cast reads bf16
    reads: tuple[str, tuple[str, ...]] | None = None

    @property
    def kernel_ops(self) -> tuple[str, ...]:
        """The ATen ops whose kernel facts speak for this one (for the product, dtype and limit checks)."""
        return self.kernels or ((self.op,) if self.status == "kernel" else ())


@dataclass(frozen=True)
class _Call:
    """A composite's callee as recorded while its kernel ran: what the next level is run with."""

    input_shapes: tuple
    output: tuple | None

    @property
    def example(self) -> tuple:
        return tuple(self.input_shapes), self.output


def _example(call) -> tuple:
    """(inputs as (shape, dtype) pairs, first output shape) of a recorded call, for composite_calls."""
    if call is None:
        return (), None
    if isinstance(call, _Call):
        return call.example
    inputs = tuple((tuple(s), d) for s, d in zip(call.input_shapes, call.input_dtypes, strict=False) if s is not None)
    output = call.output_shapes[0] if call.output_shapes else None
    return inputs, (tuple(output) if output is not None else None)


class AtenJudge:
    """Mixed into the classifier (operators.py), whose state (kb, version, target, facts, registered, _verdicts) it
    reads."""

    kb: KnowledgeBase
    version: Version
    target: Product
    facts: KernelFacts
    registered: dict[str, tuple[str, ...]]
    _verdicts: dict[str, AtenVerdict]

    def aten_verdict(self, aten: str, call: AtenCall | _Call | None = None, depth: int = 0) -> AtenVerdict:
        """How `aten` runs on the NPU: its own kernel, a view everywhere, or (the dispatcher's structure) what its
        composite kernel calls, judged in turn (`call`: a recorded call whose shapes the composite is run with);
        a missing op whose CANN kernel exists is a binding to write."""
        if aten not in self._verdicts:  # the first call seen decides: a decomposition does not vary with shapes
            verdict = self._aten_verdict(aten, _example(call), depth)
            if verdict.supported and is_view(aten):
                verdict = replace(verdict, view=True)
            if not verdict.supported:
                binding = check_binding(aten, self.target, self.facts)
                if binding is not None:
                    verdict = AtenVerdict(aten, "binding", f"{binding.evidence}; {support_line(verdict)}", False,
                                          binding=binding.api)
            self._verdicts[aten] = verdict
        return self._verdicts[aten]

    def _aten_verdict(self, aten: str, example, depth: int) -> AtenVerdict:
        support = self.kb.kernel_support(aten, self.version)
        rule = self.kb.rules.fallback_of(aten, self.target.kernel) if support.supported else None
        if rule is not None and depth < _MAX_DEPTH:
            fell = self._fallback(aten, rule, example, depth, support.evidence)
            if fell is not None:
                return fell
        if support.supported:
            own = support.fact is not None and support.fact.paths(self.version) == ("torch_npu",)
            host = own and self.facts.lookup(aten) is None and returns_to_host(aten)
            return AtenVerdict(aten, "kernel", support.evidence, True, host_copy=host)
        if aten in self.kb.rules.everywhere:
            evidence = f"rules.toml: everywhere ({self.kb.rules.everywhere_evidence})"
            return AtenVerdict(aten, "everywhere", evidence, True)
        kinds = dispatch_kinds(aten) or self.registered.get(aten, ())  # a library op: what the worker saw
        if not kinds:
            return AtenVerdict(aten, "missing", support.evidence, False)
        dispatcher = f"PyTorch {torch_version_text()} dispatcher: "
        where = dispatcher + DISPATCHED % {"op": aten, "kind": kinds[0]}
        calls = composite_calls(aten, *example) if depth < _MAX_DEPTH else None
        if calls is None:  # the composite could not be run on an example: its registration alone decides
            return self._registered(aten, kinds, where, support.evidence)
        parts = [self.aten_verdict(name, _Call(ins, out), depth + 1) for name, ins, out in calls]
        called = ", ".join(dict.fromkeys(v.op for v in parts)) or "nothing"
        lacking = [v for v in parts if not v.supported]
        if lacking:
            return AtenVerdict(aten, "missing", f"{support.evidence}; {dispatcher}"
                               f"{CALLING % {'op': aten, 'kind': kinds[0], 'called': called}}: "
                               + "; ".join(dict.fromkeys(v.evidence for v in lacking)), False,
                               lacking=tuple(dict.fromkeys(v.op for v in lacking)))
        if not calls.complete:  # the calls seen all run, but what came after the one that stopped is not known
            return self._registered(aten, kinds, where, support.evidence)
        kernels = tuple(dict.fromkeys(k for v in parts for k in v.kernel_ops))
        base = aten.partition(".")[0]
        if len(parts) == 1 and parts[0].status == "kernel" and parts[0].op.partition(".")[0] == base:
            return AtenVerdict(aten, "kernel", f"{dispatcher}"
                               f"{CALLING_OUT % {'op': aten, 'kind': kinds[0], 'out': parts[0].op}}: "
                               f"{parts[0].evidence}", True, kernels)
        status = "everywhere" if kinds[0] == "CompositeExplicitAutograd" and all(
            v.status == "everywhere" or v.kernel_ops for v in parts) else "decomposes"
        calling = CALLING % {"op": aten, "kind": kinds[0], "called": called}
        return AtenVerdict(aten, status, dispatcher + calling, True, kernels)

    def _fallback(self, aten: str, rule: Composite, example, depth: int, evidence: str) -> AtenVerdict | None:
        """`aten` on a product where its NPU kernel runs PyTorch's decomposition `rule.fallback`: judged by what that
        calls, run with the recorded shapes (key and value heads matched to the query's when the call was grouped-
        query, as enable_gqa does); None when the decomposition cannot be run on them (its own kernel decides)."""
        assert rule.fallback is not None
        calls = composite_calls(rule.fallback, *example) or composite_calls(rule.fallback, *_heads_matched(example))
        if calls is None or not calls.complete:
            return None
        parts = [self.aten_verdict(name, _Call(ins, out), depth + 1) for name, ins, out in calls]
        called = ", ".join(dict.fromkeys(v.op for v in parts)) or "nothing"
        said = FALLS_BACK % {"product": self.target.name, "fallback": rule.fallback, "why": rule.fallback_evidence,
                             "called": called}
        lacking = [v for v in parts if not v.supported]
        if lacking:
            return AtenVerdict(aten, "missing", f"{evidence}; {said}: " + "; ".join(dict.fromkeys(
                v.evidence for v in lacking)), False, lacking=tuple(dict.fromkeys(v.op for v in lacking)))
        dtype = example[0][0][1] if example[0] else None
        reading = tuple(dict.fromkeys(k for (_, ins, _), v in zip(calls, parts, strict=True)
                                      if any(d == dtype for _, d in ins) for k in v.kernel_ops))
        return AtenVerdict(aten, "kernel", f"{evidence}; {said}", True,
                           tuple(dict.fromkeys(k for v in parts for k in v.kernel_ops)),
                           reads=(dtype, reading) if dtype else None)

    @staticmethod
    def _registered(aten: str, kinds: tuple[str, ...], where: str, support: str) -> AtenVerdict:
        """The verdict the composite's registration alone gives, when its calls cannot be (fully) known."""
        if kinds[0] == "CompositeImplicitAutograd":
            return AtenVerdict(aten, "decomposes", where, True)
        if kinds[0] == "CompositeExplicitAutograd" or not has_backend_kernel(aten):
            return AtenVerdict(aten, "everywhere", where, True)
        return AtenVerdict(aten, "missing", f"{support}; {where} (it calls the backend's kernels)", False)


def _heads_matched(example: tuple) -> tuple:
    """An attention call's example with the key's and value's head dimension (-3) set to the query's: [B, Hkv, S, D]
    -> [B, Hq, S, D], what grouped-query attention repeats them to."""
    inputs, output = example
    if len(inputs) < 3 or any(len(shape) < 3 for shape, _ in inputs[:3]):
        return example
    heads = inputs[0][0][-3]
    matched = tuple((shape[:-3] + (heads,) + shape[-2:], dtype) for shape, dtype in inputs[1:3])
    return (inputs[0], *matched, *inputs[3:]), output


def support_line(verdict: AtenVerdict) -> str:
    """The kernel list's line of a verdict ('npu_aten_ops: no row for lgamma'), without the dispatcher's."""
    return verdict.evidence.split("; ")[0]


def kernel_ops(verdicts: dict[str, AtenVerdict]) -> list[str]:
    """The ATen ops whose kernel facts speak for the verdicts: their own kernels, their composites' callees."""
    return list(dict.fromkeys(k for v in verdicts.values() for k in v.kernel_ops))


def reading_ops(verdicts: dict[str, AtenVerdict], dtype: str) -> list[str]:
    """kernel_ops, a fallback's narrowed to the callees that read data in `dtype` (AtenVerdict.reads)."""
    return list(dict.fromkeys(k for v in verdicts.values()
                              for k in (v.reads[1] if v.reads and v.reads[0] == dtype else v.kernel_ops)))


def binding_reason(bindings: list[AtenVerdict]) -> tuple[str, dict[str, str], str]:
    """(message id, its values, evidence) for ATen ops torch_npu does not register whose CANN aclnn kernel exists."""
    names = ", ".join(v.op for v in bindings)
    apis = ", ".join(dict.fromkeys(v.binding or "" for v in bindings))
    return (N_("%(ops)s has no torch_npu registration, but CANN has the kernel (%(apis)s): register it through "
               "op-plugin (a binding to write, not a new kernel)"), {"ops": names, "apis": apis},
            "; ".join(v.evidence for v in bindings))
