"""Runs, but slowly: ops that reach the NPU only through a generic fallback where torch_npu has a fused op.

`torch._grouped_mm` has no NPU kernel: its CompositeExplicitAutograd kernel runs as one mm per expert (a loop of
small launches) where `torch_npu.npu_grouped_matmul` does the whole group in one kernel. In a model that has such
a mixture-of-experts block, the router's softmax + top-k and the token permutation have fused NPU ops too
(`npu_moe_gating_top_k_softmax`, `npu_moe_init_routing`). The operator stays direct: this is a performance
finding (performance.fusion in the score), emitted only when the knowledge base names the NPU op.
"""
from __future__ import annotations

from ..records import Finding
from .families import Survey, family

# ATen op that runs through a generic fallback -> (fused NPU op, what the fallback costs)
FALLBACKS = {
    "aten::_grouped_mm": ("npu_grouped_matmul", "no NPU kernel: the CompositeExplicitAutograd fallback runs one "
                                                "mm per expert group"),
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
            findings.append(Finding(
                kind="slow-path", title=f"{operator.key} runs {aten} ({cost}) in {len(names)} place(s): "
                f"torch_npu.{npu_op} runs each group in one kernel", nodes=names, ops=(operator.key,),
                source=graph.first_source(names), npu_api=f"torch_npu.{npu_op}", effect=effect,
                metrics={"occurrences": len(names), "flops": flops}))
    if findings and all(kb.has_custom_op(op) for op in ROUTING):
        routers = [o for o in survey.inventory.operators if o.key in _ROUTING_OPS]
        names = tuple(n.name for o in routers for n in o.nodes)
        if names:
            findings.append(Finding(
                kind="slow-path", title=f"mixture-of-experts routing (top-k over router scores, {len(names)} "
                f"place(s)): torch_npu.{ROUTING[0]} fuses softmax and top-k, torch_npu.{ROUTING[1]} the token "
                f"permutation", nodes=names, ops=tuple(o.key for o in routers), source=graph.first_source(names),
                npu_api=f"torch_npu.{ROUTING[0]}", effect=effect, metrics={"occurrences": len(names)}))
    return findings
