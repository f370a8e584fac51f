"""What PyTorch's dispatcher says about an ATen op in this process: its composite kernels and torch's version."""
from __future__ import annotations

from functools import cache


@cache
def dispatch_kinds(qualified: str) -> tuple[str, ...]:
    """Composite dispatch keys PyTorch registers for an op ('aten::zeros' -> ('CompositeExplicitAutograd',))."""
    import torch

    kinds = []
    for key in ("CompositeExplicitAutograd", "CompositeImplicitAutograd"):
        try:
            if torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key):
                kinds.append(key)
        except RuntimeError:  # the op is not registered in this process
            return ()
    return tuple(kinds)


def torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]
