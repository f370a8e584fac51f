"""Memory per device: what one step holds in HBM (weights, gradients, optimizer states, activations at the
micro-batch, the KV cache of an inference pass), on one device and under a --parallel layout, against the product's
HBM.

Training, per parameter (time_model.toml [memory], assumptions as the LLM frameworks run mixed precision): the
weights and the gradients in the model's dtype, each optimizer state in float32 and, for a 16-bit model, a float32
master copy: a bf16 AdamW step holds 2 + 2 + 2 x 4 + 4 = 16 bytes per parameter. Worked example: 6.74e9 parameters
x 16 B = 100.4 GiB before activations, against Atlas A2's 64 GiB: it does not fit one device; under tp=8 it is
12.6 GiB per device.
Activations of a training step: every non-view output of the forward's calls (an upper bound: a fused kernel or
recomputation keeps less); of an inference pass: the largest call's inputs and outputs (what is live at once).
KV cache (inference): the keys and values the attention calls read, at the example's sequence length.

Under a layout (ParallelLayout): weights, gradients and optimizer states split over tp x pp (and over dp by the
ZeRO stage: 1 the optimizer states, 2 and the gradients, 3 and the weights); activations split over cp and over tp
(with sp all of them; without, a share stays whole, Korthikanti et al. 2022: sbh(10 + 24/t)); a 1F1B pipeline's first
stage holds min(pp, micro-batches) micro-batches of its 1/pp of the layers.
"""
from __future__ import annotations

from ..dtypes import element_bytes, numel
from ..options import ParallelLayout
from ..records import Inventory, OpNode
from ..trace.registrations import is_view
from .device import MemoryAssumptions, memory_assumptions
from .records import DeviceMemory

GIB = 1024 ** 3
ATTENTION_ATEN = frozenset({"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_flash_attention",
                            "aten::_scaled_dot_product_flash_attention_for_cpu",
                            "aten::_scaled_dot_product_efficient_attention"})


def optimizer_class(inventory: Inventory) -> str | None:
    """'AdamW' for a training step whose optimizer node is torch.optim.AdamW.step; None without one."""
    for operator in inventory.operators:
        if operator.kind == "optimizer" and operator.key.endswith(".step") and "GradScaler" not in operator.key:
            return operator.key.removesuffix(".step").rpartition(".")[2]
    return None


def _outputs(node: OpNode) -> int:
    if node.aten:
        return sum(numel(s) * element_bytes(d) for c in node.aten if not is_view(c.qualified)
                   for s, d in zip(c.output_shapes, c.output_dtypes, strict=False))
    return sum(numel(s) * element_bytes(d) for s, d in zip(node.output_shapes, node.output_dtypes, strict=False))


def _call_bytes(node: OpNode) -> int:
    return _outputs(node) + sum(numel(s) * element_bytes(d)
                                for s, d in zip(node.input_shapes, node.input_dtypes, strict=False))


def is_attention(node: OpNode) -> bool:
    return "scaled_dot_product_attention" in node.key or any(c.op in ATTENTION_ATEN for c in node.aten)


def _kv_bytes(node: OpNode) -> int:
    """The keys and values an attention call reads (its second and third inputs)."""
    return sum(numel(s) * element_bytes(d) for s, d in
               zip(node.input_shapes[1:3], node.input_dtypes[1:3], strict=False))


def step_memory(inventory: Inventory, hbm_bytes: float | None, layout: ParallelLayout | None = None,
                micro_batches: int = 1, assumed: MemoryAssumptions | None = None) -> DeviceMemory:
    """The memory of the captured step on one device, or per device under `layout` (`micro_batches` per step and
    replica: a 1F1B pipeline's first stage holds min(pp, micro_batches) of them)."""
    a = assumed or memory_assumptions()
    model = inventory.model
    params = float(model.parameters)
    size = element_bytes(model.dtype)
    nodes = [n for o in inventory.operators if o.kind != "optimizer" for n in o.nodes]
    lay = layout or ParallelLayout()
    split = lay.tp * lay.pp
    parts: dict[str, float] = {"weights": params * size / split / (lay.dp if lay.zero >= 3 else 1)}
    if inventory.capture.training:
        name = optimizer_class(inventory)
        states = a.optimizer_states.get(name or "", a.default_states)
        master = a.master_bytes if size < 4 else 0.0
        parts["gradients"] = params * size / split / (lay.dp if lay.zero >= 2 else 1)
        parts["optimizer"] = params * (states * a.state_bytes + master) / split / (lay.dp if lay.zero >= 1 else 1)
        activations = float(sum(_outputs(n) for n in nodes))
        whole = 0.0 if lay.sp else a.replicated_activation_share
        tp_share = whole + (1 - whole) / lay.tp
        held = min(lay.pp, max(1, micro_batches)) / lay.pp
        parts["activations"] = activations * tp_share / lay.cp * held
        basis = (f"{model.parameters:,} parameters x ({size} B weights + {size} B gradients + {states} optimizer "
                 f"state(s) x {a.state_bytes:g} B" + (f" + {master:g} B float32 master copy" if master else "") +
                 f") [{name or 'optimizer unknown'}], and every non-view output of the forward at the micro-batch "
                 f"(an upper bound)")
    else:
        parts["activations"] = float(max((_call_bytes(n) for n in nodes), default=0)) / lay.tp / lay.cp
        parts["kv_cache"] = float(sum(_kv_bytes(n) for n in nodes if is_attention(n))) / split / lay.cp
        basis = (f"{model.parameters:,} parameters x {size} B, the largest call's inputs and outputs, and the keys "
                 f"and values the attention calls read at the example's sequence length")
    if layout is not None:
        basis += f", per device under {layout.text()}"
    parts = {k: v for k, v in parts.items() if v > 0}
    return DeviceMemory(bytes=sum(parts.values()), hbm_bytes=hbm_bytes, breakdown=parts, basis=basis)
