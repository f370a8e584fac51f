"""Per operator, per NPU graph back-end: a verdict from the captured ATen calls and signatures and the facts."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..kb.graph_facts import GraphFacts, data_dependent, host_sync, op_arguments, op_tags
from ..kb.store import KnowledgeBase
from ..kb.versions import Version
from ..messages import N_, Message
from ..records import ClassifiedOp, Operator
from ..vocabulary import PROJECT_KINDS
from .records import VERDICTS, BackendVerdict

# Schema arguments that make an op's randomness optional (a dropout probability, a training flag): such an op draws
# random numbers only in a training step (aten::scaled_dot_product_attention's dropout_p, aten::lstm's dropout).
_OPTIONAL_RNG = frozenset({"dropout_p", "dropout", "train"})

# torchair's converter statuses that leave an overload without a working converter.
_NO_CONVERTER = frozenset({"not_implemented", "not_supported", "not_supported_redundant_out_variant"})
# ... as a reason says them (the status with spaces)
STATUSES = {"not_implemented": N_("not implemented"), "not_supported": N_("not supported"),
            "not_supported_redundant_out_variant": N_("not supported redundant out variant")}


def _verdict(backend: str, verdict: str, template: str, evidence: tuple[str, ...] = (), decided: tuple[str, ...] = (),
             /, **values: Any) -> BackendVerdict:
    """A verdict whose reason is `template` (a message id, marked N_) filled with `values`; `decided`: the ATen ops
    that decided it."""
    message = Message.of(template, **values)
    return BackendVerdict(backend, verdict, message.text(), evidence, decided, message)


def graph_ops(op: Operator, kb: KnowledgeBase, functionalize: bool = True) -> tuple[str, ...]:
    """The ATen ops a compiler sees for `op`: what it dispatched, less CPU-only decompositions of ops torch_npu runs
    whole, plus the composite op itself (the same rule classify applies); in-place ops as their functional form
    (aot_autograd functionalizes the graph before the inductor or a GE converter sees it)."""
    composite = kb.rules.composite_for_api(op.key)
    dispatched = tuple(functional(a) if functionalize else a for a in op.aten if not kb.rules.cpu_only_of(a))
    return tuple(dict.fromkeys((composite.aten, *dispatched))) if composite else tuple(dict.fromkeys(dispatched))


def functional(aten: str) -> str:
    """'aten::add_.Tensor' -> 'aten::add.Tensor' when torch has the functional overload; else `aten` unchanged."""
    base, dot, overload = aten.partition(".")
    if not base.endswith("_") or base.endswith("__") or not base.startswith("aten::"):
        return aten
    candidate = f"{base[:-1]}{dot}{overload}"
    return candidate if op_tags(candidate) or _exists(candidate) else aten


def _exists(aten: str) -> bool:
    import torch

    base, _, overload = aten.removeprefix("aten::").partition(".")
    return hasattr(getattr(torch.ops.aten, base, None), overload or "default")


def kernel_ops(op: Operator, kb: KnowledgeBase, version: Version) -> tuple[str, ...]:
    """The ATen ops whose NPU kernels run for `op`: an op called by the user that has an NPU kernel of its own is
    taken whole (aten::lstm_cell, not its CPU decomposition), else what the compiler sees."""
    dispatched = set(op.aten)
    whole = tuple(e for e in op.entry if e not in dispatched and kb.kernel_support(e, version).supported)
    return whole or graph_ops(op, kb, functionalize=False)


def _worst(backend: str, found: list[BackendVerdict], default: BackendVerdict) -> BackendVerdict:
    """The worst verdict found, its reasons and evidence merged over the ATen ops that share it."""
    if not found:
        return default
    order = VERDICTS[backend]
    rank = max(order.index(v.verdict) for v in found)
    worst = [v for v in found if order.index(v.verdict) == rank]
    messages = tuple(dict.fromkeys(v.message or Message(v.reason) for v in worst))
    joined = Message.join(messages, "; ")
    return BackendVerdict(backend, order[rank], joined.text(),
                          tuple(dict.fromkeys(e for v in worst for e in v.evidence)),
                          tuple(dict.fromkeys(a for v in worst for a in v.aten)), joined)


# ------------------------------------------------------------------ inductor


def inductor_verdict(op: Operator, facts: GraphFacts, kb: KnowledgeBase) -> BackendVerdict:
    """eager-fallback when torch_npu's inductor lowering list falls back for an ATen op of it, else lowered."""
    if op.kind in PROJECT_KINDS:
        return _verdict("inductor", "eager-fallback", N_("{op} is a project op: the inductor calls it as an opaque "
                                                         "kernel, nothing is fused across it"), op=op.key)
    found = []
    for aten in graph_ops(op, kb):
        entry = facts.inductor_fallback(aten)
        if entry is not None:
            when = f" ({entry['condition']})" if entry.get("condition") else ""
            found.append(_verdict("inductor", "eager-fallback", N_("torch_npu's inductor runs {aten} as its eager "
                                                                   "kernel, unfused ({list})"),
                                  (facts.cite("inductor_fallback", entry["row"]),), (aten,), aten=aten,
                                  list=f"{entry['list']}{when}"))
    verified = facts.verified(op.key)
    evidence = (f"{facts.cite('verified', verified)} (verified in a torch.compile graph)",) if verified else ()
    return _worst("inductor", found, _verdict("inductor", "lowered", N_("no ATen op of it is on torch_npu's inductor "
                                                                        "fallback list"), evidence))


# ------------------------------------------------------------------ aclgraph (npugraph_ex)


def aclgraph_verdict(classified: ClassifiedOp, facts: GraphFacts, kb: KnowledgeBase, version: Version,
                     train: bool = False) -> BackendVerdict:
    """not-capturable for a host read, a data-dependent size, an RNG op, an op without an NPU
    kernel or with an aclop-only kernel; needs-update-handler for an op replayed through an update handler."""
    op = classified.operator
    backend = "npugraph_ex"
    found = []
    handler = facts.update_handler(_npu_name(op.key)) or (
        facts.update_handler(_npu_name(classified.replacement)) if classified.replacement else None)
    if handler:
        found.append(_verdict(backend, "needs-update-handler", N_("replayed through an update handler (host-side "
                                                                  "values refreshed before each replay)"),
                              (f"{facts.cite('capture', handler['row'])} ({handler['path']})",)))
    if op.kind in PROJECT_KINDS and not op.aten:
        found.append(_verdict(backend, "not-capturable", N_("{op} is a project op with no known aclnn kernel (only "
                                                            "aclnn kernels are captured)"),
                              (facts.capture_cite("aclnn_only"),), op=op.key))
    calls = [call for node in op.nodes for call in node.aten]
    for aten in dict.fromkeys(c.qualified for c in calls if host_sync(c)):
        found.append(_verdict(backend, "not-capturable", N_("{aten} reads a device value on the host (a stream sync "
                                                            "inside the capture)"),
                              (facts.capture_cite("no_sync"),), (aten,), aten=aten))
    for aten in dict.fromkeys(c.qualified for c in calls if data_dependent(c)):
        found.append(_verdict(backend, "not-capturable", N_("{aten}'s output size depends on the data (a captured "
                                                            "graph replays fixed shapes)"),
                              (facts.capture_cite("recapture_limit"),), (aten,), aten=aten))
    for aten in kernel_ops(op, kb, version):
        tags = op_tags(aten)
        support = kb.kernel_support(aten, version) if aten.startswith("aten::") else None
        if "data_dependent_output" in tags or "dynamic_output_shape" in tags:
            continue  # judged per call above
        if "nondeterministic_seeded" in tags and (train or not op_arguments(aten) & _OPTIONAL_RNG):
            found.append(_verdict(backend, "not-capturable", N_("{aten} draws random numbers (no RNG-op capture)"),
                                  (facts.capture_cite("no_rng"),), (aten,), aten=aten))
        elif support is not None and not classified.aten_support.get(aten, support.supported):
            found.append(_verdict(backend, "not-capturable", N_("{aten} has no NPU kernel: it runs on the CPU (a host "
                                                                "copy inside the capture)"),
                                  (support.evidence,), (aten,), aten=aten))
        elif support is not None and support.fact is not None and support.fact.paths(version) == ("aclop",):
            found.append(_verdict(backend, "not-capturable", N_("{aten}'s NPU kernel is aclop-only (only aclnn "
                                                                "kernels are captured)"),
                                  (support.evidence, facts.capture_cite("aclnn_only")), (aten,), aten=aten))
    return _worst(backend, found, _verdict(backend, "capturable", N_("every NPU kernel it runs is an aclnn kernel")))


def _npu_name(name: str | None) -> str:
    """'torch_npu.npu_fused_infer_attention_score' / 'npu::x' -> 'npu::...' (the capture facts' names)."""
    if not name:
        return ""
    return name if "::" in name else f"npu::{name.rsplit('.', 1)[-1]}"


# ------------------------------------------------------------------ torchair GE


def ge_verdict(op: Operator, facts: GraphFacts, kb: KnowledgeBase) -> BackendVerdict:
    """no-converter when an ATen op has no working converter (the graph build fails: GE has no per-op fallback);
    partial when a converter states a restriction or the signature's dtype or attributes fall outside the
    converter's declared dtypes or the documented GE API list; else supported."""
    backend = "ge"
    found = []
    signatures = op.signatures or ()
    dtypes = {d for sig in signatures for d in sig.input_dtypes[:1] if d}
    documented = facts.ge_api(op.key)  # the GE API list names the call itself: its word outranks the heuristic
    for aten in graph_ops(op, kb):
        entry = facts.ge_converter(aten)
        if entry is None and documented:
            name, api = documented
            found.append(_verdict(backend, "supported", N_("{name} is a documented GE API ({aten} has no converter "
                                                           "row of its own)"),
                                  (f"{facts.cite('ge_apis', api['row'])} ({name})",), (aten,), name=name, aten=aten))
            continue
        if entry is None:
            found.append(_verdict(backend, "no-converter", N_("no GE converter is registered for {aten}"),
                                  (f"{facts.data['sources']['ge_converters']['table']}: no row for {aten}",), (aten,),
                                  aten=aten))
            continue
        cite = f"{facts.cite('ge_converters', entry['row'])} ({aten}: {entry['status']})"
        if entry["status"] in _NO_CONVERTER and documented:
            name, api = documented
            found.append(_verdict(backend, "supported", N_("{name} is a documented GE API (the converter status of "
                                                           "{aten}, {status}, is a text heuristic)"),
                                  (f"{facts.cite('ge_apis', api['row'])} ({name})", cite), (aten,), name=name,
                                  aten=aten, status=entry["status"]))
        elif entry["status"] in _NO_CONVERTER:
            found.append(_verdict(backend, "no-converter", N_("torchair's converter for {aten} is {status}"), (cite,),
                                  (aten,), aten=aten, status=Message(STATUSES[entry["status"]])))
        elif entry["status"] != "implemented":
            restriction = entry.get("restriction") or N_("status unknown")
            found.append(_verdict(backend, "partial", "{aten}: {restriction}", (cite,), (aten,), aten=aten,
                                  restriction=Message(restriction)))
        outside = sorted(dtypes - set(entry.get("dtypes") or dtypes))
        if outside:
            found.append(_verdict(backend, "partial", N_("{aten}'s converter declares {declared}, the capture has "
                                                         "{captured}"), (cite,), (aten,), aten=aten,
                                  declared=", ".join(entry["dtypes"]), captured=", ".join(outside)))
        found += _api_checks(op, aten, facts, dtypes)
    return _worst(backend, found, _verdict(backend, "supported", N_("every ATen op has a GE converter")))


def _api_checks(op: Operator, aten: str, facts: GraphFacts, dtypes: set[str]) -> list[BackendVerdict]:
    """The documented GE API list applied to the captured signatures: dtypes and `attr=value` constraints."""
    hit = facts.ge_api(op.key, aten, aten.split(".")[0])
    if hit is None:
        return []
    name, entry = hit
    cite = f"{facts.cite('ge_apis', entry['row'])} ({name})"
    out = []
    outside = sorted(dtypes - set(entry["dtypes_forward"] or dtypes))
    if outside:
        documented = ", ".join(entry["dtypes_forward"])
        out.append(_verdict("ge", "partial", N_("{name} is documented in GE for {documented}, the capture has "
                                                "{captured}"), (cite,), (aten,), name=name, documented=documented,
                            captured=", ".join(outside)))
    attrs: Mapping[str, Any] = {k: v for sig in op.signatures for k, v in sig.attrs.items()}
    for check in entry.get("checks", ()):
        value = attrs.get(check["param"])
        if value is not None and bool(value) != check["equals"]:
            out.append(_verdict("ge", "partial", N_("{name} is documented in GE only with {param}={equals}, the "
                                                    "model has {value}"), (cite,), (aten,), name=name,
                                param=check["param"], equals=check["equals"], value=value))
    return out


def operator_verdicts(classified: ClassifiedOp, facts: GraphFacts, kb: KnowledgeBase, version: Version,
                      train: bool = False) -> tuple[BackendVerdict, ...]:
    """The three verdicts of one operator, in BACKENDS order (`train`: the capture is a training step)."""
    op = classified.operator
    return (inductor_verdict(op, facts, kb), aclgraph_verdict(classified, facts, kb, version, train),
            ge_verdict(op, facts, kb))
