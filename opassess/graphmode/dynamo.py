"""torch._dynamo run on the model (--graph-mode dynamo): in the worker only, since it runs model code; the result is
a plain DynamoRun record the parent checks (isolation/wire.py) before it joins the breaks of the capture."""
from __future__ import annotations

import logging
import re
import time
import warnings
from typing import Any

from ..records import DynamoBreak, DynamoRun

MAX_BREAKS = 200  # breaks kept per run (a model that breaks in every layer repeats itself)
MAX_REASON = 500  # characters of one reason


def _where(stack: Any) -> str | None:
    """The innermost frame of a break's user stack as '/path/file.py:12' (the parent matches it to the capture's
    own spelling of the file)."""
    if not stack:
        return None
    frame = stack[-1]
    return f"{frame.filename}:{frame.lineno}"


def _reason(text: str) -> str:
    """The first line of dynamo's reason and its Explanation line: 'Dynamic shape operator: Operator ... data.'"""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    explanation = next((line.removeprefix("Explanation:").strip() for line in lines[1:]
                        if line.startswith("Explanation:")), "")
    text = f"{lines[0]}: {explanation}" if explanation else (lines[0] if lines else "")
    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)[:MAX_REASON]  # '<function M.forward at 0x7f..>': per run


def run_dynamo(module: Any, args: tuple, kwargs: dict) -> DynamoRun:
    """torch._dynamo.explain on one forward pass in eval mode and without gradients: its graphs, ops and breaks,
    or the error that stopped it (the breaks found up to then are kept)."""
    import torch
    import torch._dynamo as dynamo
    from torch._dynamo.utils import counters

    started = time.perf_counter()
    dynamo.reset()
    counters.clear()
    module.eval()
    logging.getLogger("torch._dynamo").setLevel(logging.ERROR)  # its break warnings are the result, not noise
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. the capture's global module hooks: noise here
            explained = dynamo.explain(module)(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - model code: whatever it raises is reported, not raised
        text = str(exc).splitlines()[0][:MAX_REASON] if str(exc) else ""
        return DynamoRun(0, 0, (), time.perf_counter() - started, error=f"{type(exc).__name__}: {text}")
    finally:
        dynamo.reset()
    breaks = tuple(DynamoBreak(_reason(str(item.reason)), _where(getattr(item, "user_stack", None)))
                   for item in explained.break_reasons[:MAX_BREAKS])
    if not explained.graph_count and not breaks:
        # No graph and no break: dynamo skipped the whole frame (torch.compiler.disable, an exception while
        # tracing); explain keeps no reason for that, its counters do (the parent judges the missing graph).
        skipped = [*counters.get("graph_break", {}), *counters.get("unimplemented", {})]
        breaks = tuple(DynamoBreak(_reason(str(text)), None) for text in skipped[:MAX_BREAKS])
    return DynamoRun(int(explained.graph_count), int(explained.op_count), breaks, time.perf_counter() - started)
