"""Mixed precision: operators whose torch_npu kernel is not documented for the target dtype, and float64 anywhere
(NPU kernels reject it or cast it to float32). The knowledge base is asked one thing: an API's documented dtypes."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dtypes import FLOAT_DTYPES
from ..kb.store import KnowledgeBase
from ..messages import Message
from ..records import Finding, Operator
from .families import Survey, family


def _api_candidates(op: str) -> tuple[str, ...]:
    """Documented API names to ask the knowledge base about: the key itself, and for an export capture's
    'aten::silu' the Python APIs that reach it."""
    if op.startswith("aten::"):
        base = op[len("aten::"):]
        return (f"torch.nn.functional.{base}", f"torch.{base}", f"Tensor.{base}")
    return (op,)


def _allowed_dtypes(kb: KnowledgeBase, op: str, attrs: Mapping[str, Any], product: str,
                    torch_version: str | None) -> tuple[str, ...] | None:
    for name in _api_candidates(op):
        fact = kb.api(name, torch_version)
        if fact is not None and fact.limitation is not None:
            allowed = fact.limitation.allowed_dtypes(product, attrs)
            if allowed is not None:
                return allowed
    return None


def _kernel_takes(survey: Survey, operator: Operator, dtype: str) -> bool:
    """The evidence hierarchy (kb/evidence.py): the kernel facts for the product outrank the API page's list; an
    op that borrows only dtype and device from self (Tensor.new_ones) carries no data of self's."""
    from ..kb.evidence import kernel_speaks

    kb = survey.kb
    if kb.rules.options_only_of(operator.key) is not None:
        return True
    takes, *_ = kernel_speaks(operator.aten, kb.product(survey.product), dtype, kb.kernel_facts)
    return takes is True


@family("precision", order=40, kinds=("mixed-precision",))
def precision_findings(survey: Survey) -> list[Finding]:
    """Per operator: a kernel dtype gap for the target dtype (when one is given), and its float64 nodes."""
    graph = survey.graph
    book = graph.book
    dtype = survey.dtype if survey.dtype != "float32" else None
    effect = book.effects["mixed-precision"]
    findings = []
    for operator in survey.inventory.operators:
        floating = [n for n in operator.nodes if FLOAT_DTYPES.intersection((*n.input_dtypes, *n.output_dtypes))]
        if not floating or not operator.aten:  # no ATen op ran (nn.Identity): nothing on the device takes a dtype
            continue
        if dtype is not None and operator.key not in survey.natively:  # the verdict's kernel facts outrank the page
            allowed = _allowed_dtypes(survey.kb, operator.key, floating[0].attrs, survey.product,
                                      survey.torch_version)
            # A dtype rule that lists no floating type speaks of an index operand (nn.Embedding's ids): not this.
            if (allowed is not None and FLOAT_DTYPES.intersection(allowed) and dtype not in allowed
                    and not _kernel_takes(survey, operator, dtype)):
                names = tuple(n.name for n in floating)
                title = Message.of(book.precision_title_dtype, op=operator.key, allowed=", ".join(allowed),
                                   dtype=dtype, count=len(names))
                findings.append(Finding(kind="mixed-precision", title=title.text(), message=title, nodes=names,
                                        ops=(operator.key,),
                                        source=graph.first_source(names), npu_api=None, effect=effect,
                                        metrics={"occurrences": len(names)}))
        double = tuple(n.name for n in floating if "float64" in (*n.input_dtypes, *n.output_dtypes))
        if double:
            title = Message.of(book.precision_title_float64, op=operator.key, count=len(double))
            findings.append(Finding(kind="mixed-precision", title=title.text(), message=title, nodes=double,
                                    ops=(operator.key,),
                                    source=graph.first_source(double), npu_api=None, effect=effect,
                                    metrics={"occurrences": len(double)}))
    return findings


@family("refused", order=41, kinds=("dtype-refused",))
def refused_findings(survey: Survey) -> list[Finding]:
    """Per operator: a dtype PyTorch refuses for one of its ATen ops on every device (the capture's `refused`: the
    meta and CPU kernels both raised, trace/upcast.py): a finding about the model, whatever the target."""
    if not survey.inventory.capture.refused:
        return []
    return [f for operator in survey.inventory.operators for f in _refused(survey, operator)]


def _refused(survey: Survey, operator: Operator) -> list[Finding]:
    refused = [a for a in operator.aten if a.partition(".")[0] in survey.inventory.capture.refused]
    if not refused:
        return []
    book = survey.graph.book
    halves = sorted({d for n in operator.nodes for d in n.input_dtypes if d in ("bfloat16", "float16")})
    names = tuple(n.name for n in operator.nodes)
    title = Message.of(book.precision_title_refused, op=operator.key, dtype=", ".join(halves) or survey.dtype or "",
                       aten=", ".join(dict.fromkeys(a.partition(".")[0] for a in refused)), count=len(names))
    return [Finding(kind="dtype-refused", title=title.text(), message=title, nodes=names, ops=(operator.key,),
                    source=survey.graph.first_source(names), npu_api=None, effect=book.effects["dtype-refused"],
                    metrics={"occurrences": len(names)})]
