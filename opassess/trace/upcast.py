"""The CPU fallback's half-precision stand-in: an ATen op the CPU refuses in bfloat16 or float16 (torchvision's nms,
Dirichlet sampling, slogdet) runs in float32 and its result is cast back, so a half-precision model that cannot run
on meta is still captured, each call recorded in the dtype the model asked for (the recorder sits above this mode:
it sees the call as the model made it). The ops it stood in for are said in the capture's device note.

Without it the whole scan failed on the CPU kernel's refusal, although the NPU (or a cast the report then advises)
runs the op: the fallback must never change the question the scan answers.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..messages import N_

# How the capture's device note says it (the worker sends English; the reports read it back through this id).
UPCAST_NOTE = N_("on the CPU, %(ops)s refused %(dtype)s: run in float32 there, and judged in %(dtype)s as the model "
                 "asked")
_REFUSALS = ("not implemented for 'BFloat16'", "not implemented for 'Half'", "Low precision dtypes not supported")


@contextlib.contextmanager
def upcast_refused(ops: dict[str, str], everywhere: set[str] | None = None) -> Iterator[None]:
    """While active, an ATen op the CPU refuses for a half-precision input runs on float32 copies and returns its
    floating results in that half dtype; `ops` collects 'ns::op' -> dtype for each op stood in for, and `everywhere`
    those whose meta kernel refuses the dtype too: the meta kernel is the device-independent check every backend
    shares (linalg.slogdet: 'Low precision dtypes not supported'), so PyTorch refuses the op in that dtype on every
    device, the NPU included (torchvision's nms and Dirichlet sampling refuse it on the CPU only)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten, tree_map

    half = (torch.bfloat16, torch.float16)

    class Upcast(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            try:
                return func(*args, **kwargs)
            except (RuntimeError, NotImplementedError) as exc:
                dtype = next((t.dtype for t in tree_flatten((args, kwargs))[0]
                              if isinstance(t, torch.Tensor) and t.dtype in half), None)
                if dtype is None or not any(r in str(exc) for r in _REFUSALS):
                    raise
            up_args, up_kwargs = tree_map(lambda t: t.float() if isinstance(t, torch.Tensor) and t.dtype == dtype
                                          else t, (args, kwargs))
            out = func(*up_args, **up_kwargs)
            if func._schema.is_mutable:  # an in-place or out= op: its written arguments get the results back
                for original, copy in zip(tree_flatten((args, kwargs))[0], tree_flatten((up_args, up_kwargs))[0],
                                          strict=True):
                    if original is not copy and isinstance(original, torch.Tensor):
                        original.copy_(copy)
            name = func._schema.name
            ops.setdefault(name, str(dtype).removeprefix("torch."))
            if everywhere is not None and name not in everywhere and _meta_refuses(func, args, kwargs):
                everywhere.add(name)
            return tree_map(lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.float32 else t,
                            out)

    with Upcast():
        yield


def _meta_refuses(func, args: tuple, kwargs: dict) -> bool:
    """Whether the op's meta kernel refuses the same arguments' dtype (on meta copies of them)."""
    import torch
    from torch.utils._pytree import tree_map

    on_meta = tree_map(lambda t: torch.empty_like(t, device="meta") if isinstance(t, torch.Tensor) else t,
                       (args, kwargs))
    try:
        func(*on_meta[0], **on_meta[1])
    except (RuntimeError, NotImplementedError) as exc:
        return any(r in str(exc) for r in _REFUSALS)
    except Exception:  # noqa: BLE001 - a meta kernel failing otherwise says nothing about the dtype
        return False
    return False


def upcast_note(ops: dict[str, str]) -> str | None:
    """'on the CPU, torchvision::nms refused bfloat16: ...' (None when no op was stood in for)."""
    if not ops:
        return None
    dtype = next(iter(ops.values()))
    return UPCAST_NOTE % {"ops": ", ".join(ops), "dtype": dtype}
