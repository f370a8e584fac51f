"""Dynamic shapes: ops whose output size (or the Python control flow after them) depends on the data, and a
forward that branches on an input shape; each new shape costs the NPU a recompilation or a host round trip."""
from __future__ import annotations

import re

from ..messages import Message
from ..records import Finding
from .families import Survey, family


@family("dynamic", order=30, kinds=("dynamic-shape",))
def dynamic_findings(survey: Survey) -> list[Finding]:
    """One finding per role of `[dynamic.titles]` and operator, with how many ops downstream see that size; and
    one for a forward that branches on input shapes."""
    graph = survey.graph
    capture = survey.inventory.capture
    book = graph.book
    findings = []
    seen: set[str] = set()
    for role, template in book.dynamic_titles.items():
        by_op: dict[str, list[str]] = {}
        for node in graph.nodes:
            if node.name not in seen and graph.plays(node.name, (role,)):
                by_op.setdefault(node.key, []).append(node.name)
                seen.add(node.name)
        for op, names in by_op.items():
            downstream = graph.flow.descendants(names)
            title = Message.of(template, op=op, count=len(names), downstream=len(downstream))
            findings.append(Finding(kind="dynamic-shape", title=title.text(), message=title, nodes=tuple(names),
                                    ops=(op,),
                                    source=graph.first_source(names), npu_api=None,
                                    effect=book.effects["dynamic-shape"],
                                    metrics={"occurrences": len(names), "downstream": len(downstream)}))
    findings += _aclop_on_dynamic_shapes(survey, [n for n in seen if not graph.plays(n, ("host_sync",))])
    # FX proxies shapes as well as values: `if x.shape[1] > 8:` stops it with a control-flow error. When the
    # model then ran on the meta device (values unknown there), the branch was on a shape, not on data.
    for attempt in capture.attempts:
        if attempt.error and capture.device == "meta" and any(m in attempt.error for m in book.shape_branch_markers):
            title = Message.of(book.shape_branch_title, method=attempt.method)
            findings.append(Finding(kind="dynamic-shape", title=title.text(), message=title, nodes=(), ops=(),
                                    source=_error_source(attempt.error), npu_api=None,
                                    effect=book.effects["dynamic-shape"], metrics={"occurrences": 1}))
            break
    return findings


def _aclop_on_dynamic_shapes(survey: Survey, sources: list[str]) -> list[Finding]:
    """Ops downstream of a data-dependent size whose NPU kernel is aclop-only for the torch version (runs slowly:
    online compilation per shape); the operator's category does not change."""
    graph, kb = survey.graph, survey.kb
    if not sources or kb is None:
        return []
    version = kb.resolve_version(survey.torch_version)
    by_op: dict[tuple[str, str], list[str]] = {}
    for name in sorted(graph.flow.descendants(sources), key=graph.order.__getitem__):
        node = graph.node[name]
        for aten in dict.fromkeys((*node.entry, *(c.op for c in node.aten))):
            fact = kb.kernel_support(aten, version).fact
            if fact is not None and fact.paths(version) == ("aclop",):
                by_op.setdefault((node.key, aten), []).append(name)
    origin = ", ".join(dict.fromkeys(graph.node[n].key for n in sources))
    titles = {key: Message.of(graph.book.aclop_title, op=key[0], aten=key[1], count=len(names), sources=origin)
              for key, names in by_op.items()}
    return [Finding(kind="dynamic-shape", title=titles[op, aten].text(), message=titles[op, aten],
                    nodes=tuple(names), ops=(op,), source=graph.first_source(names), npu_api=None,
                    effect=graph.book.effects["dynamic-shape"], metrics={"occurrences": len(names)})
            for (op, aten), names in by_op.items()]


def _error_source(error: str) -> str | None:
    """'... (at tests/models/x.py:35)' or 'node n (tests/models/x.py:35): ...' -> 'tests/models/x.py:35'."""
    m = re.search(r"([\w./-]+\.py:\d+)", error)
    return m.group(1) if m else None
