"""Collectives a model calls in its forward or training step, judged against the HCCL facts
(hccl_distributed_support.tsv) for the target instead of their c10d ATen ops, which have no NPU kernel entry
because HCCL, not a kernel, runs them: `dist.all_reduce(...)` (captured as a function operator) and the functional
collectives (`_c10d_functional::all_reduce`, ... as ops of that namespace; their waits and autograd wrappers direct):
  - a float64/uint64 tensor before the product generation the facts name (Ascend 950): param-converted (a cast);
  - gather (the compatible implementation on A2/A3) and a dtype the collective's documented list lacks:
    param-converted;
  - otherwise direct: HCCL runs it (the row is cited).
The reduce op is not in the capture's attributes: the source scan's reduce-op sites judge it at the same line.
A functional collective torch's own code runs inside another operator (DTensor's Redistribute) is judged the same way,
as a reason of that operator (`nested_collectives`).
"""
from __future__ import annotations

from ..kb.routes import RouteFacts, load_route_facts
from ..records import N_, ClassifiedOp, Operator, Reason
from ..source.distributed import COLLECTIVES, DIST
from ..vocabulary import Category, Confidence

FUNCTIONAL = "_c10d_functional::"  # the functional collectives (torch.distributed._functional_collectives, DTensor)
# functional collective -> the torch.distributed collective whose HCCL row judges it
FUNCTIONAL_COLLECTIVES = {
    "all_reduce": "all_reduce", "all_reduce_coalesced": "all_reduce", "all_gather_into_tensor": "all_gather",
    "all_gather_into_tensor_coalesced": "all_gather", "reduce_scatter_tensor": "reduce_scatter",
    "reduce_scatter_tensor_coalesced": "reduce_scatter", "all_to_all_single": "all_to_all_single",
    "broadcast": "broadcast"}
# their plumbing: waiting on a collective's result, wrapping it for autograd (no device work of their own)
FUNCTIONAL_PLUMBING = ("wait_tensor", "_wrap_tensor_autograd")


def collective_name(key: str) -> str | None:
    """'torch.distributed.distributed_c10d.all_reduce' / '_c10d_functional::all_reduce' -> 'all_reduce';
    '_c10d_functional::wait_tensor' -> 'wait_tensor'; None for anything else."""
    if key.startswith(FUNCTIONAL):
        short = key[len(FUNCTIONAL):].split(".")[0]
        return FUNCTIONAL_COLLECTIVES.get(short) or (short if short in FUNCTIONAL_PLUMBING else None)
    name = key.replace(".distributed_c10d.", ".")
    short = name[len(DIST):] if name.startswith(DIST) else ""
    return short if short in COLLECTIVES else None


def _judge(name: str, dtype: str | None, kernel: str, facts: RouteFacts, index: int | None) -> tuple[Category, Reason]:
    if name in FUNCTIONAL_PLUMBING:
        return Category.DIRECT, Reason.of("hccl", N_("%(name)s: waits on or wraps a functional collective's result, "
                                                     "which is judged as its collective"), {"name": name},
                                          "torch._c10d_functional", index)
    fact = facts.hccl(DIST + name)
    gate = facts.hccl_feature("collective dtypes")
    if dtype and gate and dtype in gate.gated_dtypes and kernel != gate.gated_from:
        return Category.PARAM_CONVERTED, Reason.of(
            "hccl", N_("%(name)s on a %(dtype)s tensor: HCCL runs %(dtypes)s collectives only from Ascend %(from)s on; "
                       "cast around the call"), {"name": name, "dtype": dtype, "dtypes": ", ".join(gate.gated_dtypes),
                                                  "from": gate.gated_from}, gate.cite, index)
    if fact is None:
        return Category.DIRECT, Reason.of("hccl", N_("%(name)s: HCCL runs it (no restriction in the facts)"),
                                          {"name": name}, "hccl_distributed_support.tsv: no row", index)
    if fact.status == "conditional":
        return Category.PARAM_CONVERTED, Reason("hccl", f"{name}: {fact.detail}", fact.cite, index)
    if dtype and fact.dtypes and dtype not in fact.dtypes and not (gate and dtype in gate.gated_dtypes):
        return Category.PARAM_CONVERTED, Reason.of(
            "hccl", N_("%(name)s on a %(dtype)s tensor: the documented dtypes are %(dtypes)s"),
            {"name": name, "dtype": dtype, "dtypes": ", ".join(fact.dtypes)}, fact.cite, index)
    return Category.DIRECT, Reason.of("hccl", N_("%(name)s: HCCL runs it (%(how)s)"), {
        "name": name, "how": fact.status + ("; " + fact.detail if fact.detail else "")}, fact.cite, index)


def classify_collective(op: Operator, kernel: str, facts: RouteFacts | None = None) -> ClassifiedOp | None:
    """The ClassifiedOp of a captured torch.distributed collective for the product's kernel column ("A2", "950"),
    or None when the operator is not one."""
    name = collective_name(op.key) if op.kind in ("function", "custom") else None
    if name is None:
        return None
    facts = facts or load_route_facts()
    judged = [_judge(name, next((d for d in sig.input_dtypes if d), None), kernel, facts, i)
              for i, sig in enumerate(op.signatures)] or [_judge(name, None, kernel, facts, None)]
    categories = tuple(category for category, _ in judged)
    return ClassifiedOp(operator=op, category=Category.worst(categories),
                        signature_categories=tuple(str(c) for c in categories) if op.signatures else (),
                        reasons=tuple(reason for _, reason in judged), replacement=None, cann_op=None, known=True,
                        aten_support={}, confidence=Confidence.MEDIUM)


def nested_collectives(op: Operator, index: int | None, dtype: str | None,
                       kernel: str) -> list[tuple[Category, Reason]]:
    """The functional collectives an operator's calls ran (DTensor's Redistribute runs _c10d_functional::all_reduce),
    each judged by the HCCL facts as when the model calls it itself."""
    names = dict.fromkeys(name for name in map(collective_name, op.aten) if name is not None)
    if not names:
        return []
    facts = load_route_facts()
    return [_judge(name, dtype, kernel, facts, index) for name in names]
