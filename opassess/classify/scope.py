"""What the classifier judges beyond an operator's own forward ATen ops: entry ops the NPU takes whole,
deprecated replacements, and (with --train) the ATen ops its backward dispatched. Plain functions of the knowledge
base and the verdicts the classifier gives them."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..kb.rules import Composite, Replacement
from ..kb.store import KnowledgeBase
from ..kb.versions import Version
from ..messages import N_, Text
from ..reasons import BACKWARD, BACKWARD_NO_KERNEL, BINDING, TAKEN_WHOLE
from ..records import Operator
from ..vocabulary import Category
from .aten import AtenVerdict
from .judgement import Judgement

_PLAIN_OVERLOADS = ("input", "Tensor", "default", "self")  # an unnamed entry op's likely overload
# Python indexing names aten::index / index_put as its entry op, but torch translates it into views (select, slice)
# and index ops in C++ before any kernel is chosen, the same on the NPU: what it dispatched is what runs there.
_PYTHON_INDEXING = ("Tensor.__getitem__", "Tensor.__setitem__")


def taken_whole(kb: KnowledgeBase, version: Version, op: Operator) -> tuple[str, ...]:
    """Entry ops (what the user called, before decomposition) that have an NPU kernel of their own but were
    decomposed on this backend: torch_npu runs them whole (aten::_weight_norm, not _weight_norm_interface)."""
    out: list[str] = []
    if op.key in _PYTHON_INDEXING:
        return ()
    for entry in op.entry:
        if entry in op.aten or entry.split("::")[0] != "aten":
            continue
        if kb.kernel_support(entry, version).supported:
            out.append(entry)
            continue
        if "." in entry.partition("::")[2]:  # the overload the dispatcher ran (trace/keys.py): no other one speaks
            continue
        variants = [f.name for f in kb.kernels_for_base(entry) if f.supports(version)
                    and "." in f.name and not f.name.endswith(".out")]
        if variants:  # the entry op has no overload: prefer the plain-tensor one (lstm.input, not lstm.data)
            out.append(f"aten::{min(variants, key=lambda n: (n.partition('.')[2] not in _PLAIN_OVERLOADS, n))}")
    return tuple(out)

def deprecation(kb: KnowledgeBase, replacement: Replacement | None) -> dict[str, Any]:
    """Whether the facts mark the replacement deprecated, and its successor ('(no replacement)' -> None)."""
    fact = kb.custom_op(replacement.npu_op) if replacement else None
    if fact is None or not fact.deprecated:
        return {}
    successor = fact.deprecated.strip()
    return {"replacement_deprecated": True,
            "replacement_successor": None if successor.startswith("(") or not successor else successor}

def backward_of(aten: str, decomposition: Sequence[str]) -> bool:
    """Whether a backward ATen op is the derivative of an op of a CPU/meta decomposition (by PyTorch's naming of
    derivative kernels: aten::_weight_norm_interface -> aten::_weight_norm_interface_backward)."""
    name = aten.partition(".")[0]
    return any(name == f"{op.partition('.')[0]}_backward" for op in decomposition)


def judge_backward(judgements: Sequence[Judgement], verdicts: Mapping[str, AtenVerdict], composite: Composite | None,
                   required: Replacement | None, version_text: str,
                   decomposed: tuple[Sequence[str], Sequence[str]] = ((), ())) -> dict[str, bool]:
    """Judge the ATen ops an operator's backward dispatched (`verdicts`, one per op); returns op -> runs on the
    NPU. `decomposed`: the entry ops taken whole and the backward ops of their CPU/meta decomposition, not judged
    (a weight-norm parametrization: torch_npu runs aten::_weight_norm, so the backward of the CPU's fused
    _weight_norm_interface never runs there)."""
    whole, skipped = decomposed
    missing = [v.op for v in verdicts.values() if not v.supported]
    bindings = [v for v in verdicts.values() if v.status == "binding"]
    evidence = "; ".join(v.evidence for v in verdicts.values() if not v.supported)
    for j in judgements:
        if skipped:
            j.add_message(TAKEN_WHOLE, N_("torch_npu runs %(ops)s whole; %(skipped)s, the backward of its CPU/meta "
                                            "decomposition, is not judged"),
                          {"ops": ", ".join(whole), "skipped": ", ".join(skipped)},
                          Text(N_("trace: backward ATen ops; the decomposition's derivative kernels")),
                          per_signature=False)
        if not verdicts:
            continue
        if missing and len(bindings) == len(missing) and not composite and required is None:
            apis = ", ".join(dict.fromkeys(v.binding or "" for v in bindings))
            j.add_message(BINDING, N_("its backward dispatches %(ops)s, which has no torch_npu registration but a "
                                        "CANN kernel (%(apis)s): register it through op-plugin (a binding to write, "
                                        "not a new kernel)"), {"ops": ", ".join(missing), "apis": apis}, evidence,
                          category=Category.PARAM_CONVERTED, per_signature=False)
        elif not missing:
            j.add_message(BACKWARD, N_("its backward dispatches only ops the NPU runs (%(ops)s)"),
                          {"ops": ", ".join(verdicts)}, Text(N_("trace: backward ATen ops; npu_aten_ops")),
                          per_signature=False)
        elif composite:
            j.add_message(BACKWARD, N_("torch_npu runs %(op)s whole, its backward included; the backward traced "
                                         "here (%(ops)s) is not judged"), {"op": composite.aten,
                                                                           "ops": ", ".join(missing)},
                          f"rules.toml: composite {composite.aten}", per_signature=False)
        elif required is not None:
            j.add_message(BACKWARD_NO_KERNEL, N_("its backward dispatches %(ops)s, which has no NPU kernel; %(api)s "
                                                   "replaces the operator with its own backward"),
                          {"ops": ", ".join(missing), "api": required.api}, evidence, category=Category.PARAM_CONVERTED,
                          per_signature=False)
        else:
            j.add_message(BACKWARD_NO_KERNEL, N_("its backward dispatches %(ops)s, with no NPU kernel for torch "
                                                   "%(version)s and no decomposition: training would fall back to the "
                                                   "CPU"), {"ops": ", ".join(missing), "version": version_text},
                          evidence, category=Category.CUSTOM_DEV, per_signature=False)
    return {a: v.supported for a, v in verdicts.items()}

