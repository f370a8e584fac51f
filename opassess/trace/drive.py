"""Drive the data-dependent branches an example run with random weights skips, while the capture runs.

- FCOS's and RetinaNet's `score_thresh` set to 0: with random weights no box passes the default threshold,
  batched_nms returns early and torchvision::nms is never dispatched; at 0 every candidate box goes on to NMS (on the
  CPU over 4000 boxes that is the per-class loop; the reach record shows the coordinate-trick call the NPU, under
  100,000 boxes, would take).
- A Mixture-of-Experts router (a module named like `MixtralTopKRouter`, with `num_experts` and `top_k`) has its
  chosen experts spread over every expert: token t takes experts (t*k + j) mod E, so no expert is left without
  tokens by a random router (its path, and its share of the calls, are captured).
Both change what the outputs are, never which ops the model has; each change is said in the report
(Capture.driven) and undone after the capture. `scan --no-drive` captures the plain run.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_DETECTION = "torchvision.models.detection"
# the detectors whose sigmoid scores random weights leave under the default threshold, so NMS never runs; Faster
# R-CNN's RPN (threshold 0) and SSD's softmax scores (over 0.01) reach NMS as they are, and are left alone
_THRESHOLDED = ("FCOS", "RetinaNet")


def _spread(module: Any, args: Any, output: Any) -> Any:
    """A router's output with its expert indices spread over every expert (same shape, dtype and device), made with
    the capture's modes set aside: building them is not the model's work."""
    import torch
    from torch.utils._python_dispatch import _disable_current_modes

    experts, k = int(module.num_experts), int(module.top_k)

    def spread(value: Any) -> Any:
        if isinstance(value, torch.Tensor) and not value.is_floating_point() and value.dim() == 2 \
                and value.shape[-1] == k and k <= experts:
            tokens = value.shape[0]
            with _disable_current_modes(), torch._C.DisableTorchFunction():
                return (torch.arange(tokens * k, device=value.device) % experts).view(tokens, k).to(value.dtype)
        return value

    if isinstance(output, tuple):
        return tuple(spread(v) for v in output)
    return spread(output)


@contextmanager
def driven(root: Any, on: bool = True) -> Iterator[list[str]]:
    """Drive the branches of `root` for the block; the list it gives names each change ('FCOS.score_thresh 0.2 ->
    0', 'model.layers.0.mlp.gate: every expert routed')."""
    notes: list[str] = []
    if not on:
        yield notes
        return
    restore: list[tuple[Any, str, Any]] = []
    hooks = []
    for name, module in root.named_modules():
        kind = type(module)
        value = getattr(module, "score_thresh", None)
        if kind.__module__.startswith(_DETECTION) and kind.__name__ in _THRESHOLDED and isinstance(value, float) \
                and value > 0:
            restore.append((module, "score_thresh", value))
            module.score_thresh = 0.0
            notes.append(f"{name or kind.__name__}.score_thresh {value:g} -> 0")
        elif kind.__name__.lower().endswith("topkrouter") and isinstance(getattr(module, "num_experts", None), int) \
                and isinstance(getattr(module, "top_k", None), int):
            hooks.append(module.register_forward_hook(_spread))
            notes.append(f"{name}: every expert routed")
    try:
        yield notes
    finally:
        for handle in hooks:
            handle.remove()
        for module, attribute, value in restore:
            setattr(module, attribute, value)
