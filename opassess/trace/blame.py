"""Whose fault a failed capture is: the meta backend's (retry on the CPU), opassess's own hooks' (an internal
error), or the model's (its forward raised, whatever the device).

The meta backend: an ATen op that raised while its tensors were on meta is marked by the recorder's dispatch mode
(`mark_meta_failure`). Its meta kernel may check what the CPU kernel does not (`_grouped_mm`'s meta kernel wants
bfloat16, its CPU kernel takes float32 too), may be missing, or the op may need values (`.item()`, `nonzero`): the
CPU, with real weights, is the judge, since a model whose forward is truly wrong fails there as well.

opassess's hooks: every call a hook makes into the model's or torch's code goes through `call_out`. A failure whose
innermost frame is inside opassess, and not that call, was raised by opassess's own code: a bug, reported as such.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

from ..load import OPASSESS_DIR
from ..standins.calls import pass_on

_META_OP = "opassess_meta_op"  # the attribute mark_meta_failure sets on the exception


def call_out(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """Call the model's or torch's fn from a capture hook: an exception raised here is theirs, not opassess's."""
    return fn(*args, **kwargs)


def mark_meta_failure(exc: BaseException, op: str) -> None:
    """Note on exc that ATen op `op` raised it with its tensors on the meta device."""
    try:
        setattr(exc, _META_OP, op)
    except (AttributeError, TypeError):  # an exception type without a __dict__: the text heuristics still apply
        pass


def chain(exc: BaseException | None) -> Iterator[BaseException]:
    """exc and what caused it: a NodeFailure's cause, `raise ... from`, and the exception being handled."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(seen) < 20:
        seen.add(id(exc))
        yield exc
        exc = getattr(exc, "cause", None) or exc.__cause__ or exc.__context__


def meta_failure(exc: BaseException | None) -> tuple[str, BaseException] | None:
    """(the ATen op whose meta kernel raised, the exception it raised) in exc's chain; None when no meta kernel did."""
    for link in chain(exc):
        op = getattr(link, _META_OP, None)
        if isinstance(op, str):
            return op, link
    return None


def meta_failure_op(exc: BaseException | None) -> str | None:
    """The ATen op whose meta kernel raised exc (or one of its causes), None when no meta kernel did."""
    found = meta_failure(exc)
    return found[0] if found else None


def is_meta_problem(exc: BaseException | None) -> bool:
    """exc comes from the meta backend rather than from the model: a meta kernel raised it, or its text says it is
    about meta tensors or data-dependent values (torch.export and symbolic tracing fail without running a kernel)."""
    if exc is None:
        return False
    if meta_failure_op(exc) is not None:
        return True
    text = " ".join(f"{type(link).__name__}: {link}" for link in chain(exc)).lower()
    return "meta" in text or "data-dependent" in text or "item()" in text or "cannot copy out" in text


def is_internal(exc: BaseException) -> bool:
    """exc was raised by opassess's own code during a capture (not on purpose: no OpassessError, no Skipped)."""
    from ..errors import OpassessError
    from .nodes import NodeFailure
    from .registry import Skipped

    root = exc.cause if isinstance(exc, NodeFailure) else exc
    if isinstance(root, (OpassessError, Skipped)) or root.__traceback__ is None:
        return False
    innermost = root.__traceback__
    while innermost.tb_next is not None:
        innermost = innermost.tb_next
    code = innermost.tb_frame.f_code
    return os.path.realpath(code.co_filename).startswith(OPASSESS_DIR) and \
        code not in (call_out.__code__, pass_on.__code__)
