"""Runs, but slowly: ops that reach the NPU only through a generic fallback where torch_npu has a fused op.

`torch._grouped_mm` has no NPU kernel: its CompositeExplicitAutograd kernel runs as one mm per expert (a loop of
small launches) where `torch_npu.npu_grouped_matmul` does the whole group in one kernel. In a model that has such
a mixture-of-experts block, the router's softmax + top-k and the token permutation have fused NPU ops too
(`npu_moe_gating_top_k_softmax`, `npu_moe_init_routing`). The operator stays direct: this is a performance
finding (performance.fusion in the score), emitted only when the knowledge base names the NPU op.
"""
from __future__ import annotations

from ..messages import N_, Message
from ..records import Finding
from .families import Survey, family

# ATen op that runs through a generic fallback -> (fused NPU op, what the fallback costs)
FALLBACKS = {
    "aten::_grouped_mm": ("npu_grouped_matmul", N_("no NPU kernel: the CompositeExplicitAutograd fallback runs one "
                                                   "mm per expert group")),
}
ROUTING = ("npu_moe_gating_top_k_softmax", "npu_moe_init_routing")
_ROUTING_OPS = ("torch.topk", "Tensor.topk", "aten::topk")


@family("slow", order=35, kinds=("slow-path",))
def slow_path_findings(survey: Survey) -> list[Finding]:
    """One finding per operator dispatching a fallback ATen op, and one for the MoE router when there is one."""
    kb, graph = survey.kb, survey.graph
    effect = graph.book.effects["slow-path"]
    findings = []
    for operator in survey.inventory.operators:
        for aten, (npu_op, cost) in FALLBACKS.items():
            nodes = [n for n in operator.nodes if any(c.op == aten for c in n.aten)]
            if not nodes or not kb.has_custom_op(npu_op):
                continue
            names = tuple(n.name for n in nodes)
            flops = sum(n.flops for n in nodes)
            title = Message.of(N_("{op} runs {aten} ({cost}) in {count} place(s): {api} runs each group in one "
                                  "kernel"), op=operator.key, aten=aten, cost=Message(cost), count=len(names),
                               api=f"torch_npu.{npu_op}")
            findings.append(Finding(
                kind="slow-path", title=title.text(), message=title, nodes=names, ops=(operator.key,),
                source=graph.first_source(names), npu_api=f"torch_npu.{npu_op}", effect=effect,
                metrics={"occurrences": len(names), "flops": flops}))
    if findings and all(kb.has_custom_op(op) for op in ROUTING):
        routers = [o for o in survey.inventory.operators if o.key in _ROUTING_OPS]
        names = tuple(n.name for o in routers for n in o.nodes)
        if names:
            title = Message.of(N_("mixture-of-experts routing (top-k over router scores, {count} place(s)): {gating} "
                                  "fuses softmax and top-k, {routing} the token permutation"), count=len(names),
                               gating=f"torch_npu.{ROUTING[0]}", routing=f"torch_npu.{ROUTING[1]}")
            findings.append(Finding(
                kind="slow-path", title=title.text(), message=title, nodes=names, ops=tuple(o.key for o in routers),
                source=graph.first_source(names),
                npu_api=f"torch_npu.{ROUTING[0]}", effect=effect, metrics={"occurrences": len(names)}))
    return findings
