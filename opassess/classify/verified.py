"""Results from the user's own hardware override the facts: the verified overlay (kb/verified.py) applied to the
classified operators.

A signature whose device test ran the operator itself and passed on the user's hardware becomes direct with high
confidence (the strongest evidence there is: it ran and matched the CPU); one whose test ran the replacement the report
recommends and passed keeps its category (the port still calls the replacement) with high confidence; a failure of
what was tested becomes custom-dev, with the failure quoted, except a failure of the original operator where the report
recommends a replacement: that one has no NPU kernel by the facts, and its failure says nothing of the replacement
(`verified-original`, the category unchanged). Each result adds a reason (`verified-passed` / `verified-failed` /
`verified-original`) naming the results file and test case, so the report says which verdicts came from recorded
results. Signatures without a result keep their category.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..kb.verified import ORIGINAL, signature_key
from ..records import N_, ClassifiedOp, Reason
from ..vocabulary import Category, Confidence


def _reason(entry: Mapping[str, object], index: int, replacement: str | None) -> Reason:
    tested = " ".join(f"{k} {entry[k]}" for k in ("product", "torch_npu", "cann") if entry.get(k))
    evidence = (f"verified.json: {entry.get('results')} {entry.get('case')} ({entry.get('recorded_at')}"
                + (f"; {tested}" if tested else "") + ")")
    latency = entry.get("latency_us")
    route = entry.get("route") or ORIGINAL
    values = {"n": index + 1, "device": entry.get("device"), "failure": entry.get("failure") or "no message",
              "route": route}
    if route == ORIGINAL and entry["status"] == "failed" and replacement:
        return Reason.of("verified-original", N_("signature %(n)s: the operator itself failed on %(device)s, as it has "
                                                 "no NPU kernel; the recommended %(replacement)s is what to verify "
                                                 "(%(failure)s)"), {**values, "replacement": replacement},
                         evidence, index)
    if route != ORIGINAL and entry["status"] == "passed":
        return Reason.of("verified-passed", N_("signature %(n)s ran on %(device)s through %(route)s and matched the "
                                               "CPU reference in the verification harness"), values, evidence, index)
    if route != ORIGINAL:
        return Reason.of("verified-failed", N_("signature %(n)s failed the verification harness on %(device)s through "
                                               "%(route)s: %(failure)s"), values, evidence, index)
    if entry["status"] == "passed" and isinstance(latency, (int, float)):
        return Reason.of("verified-passed", N_("signature %(n)s ran on %(device)s and matched the CPU reference in the "
                                               "verification harness, %(us)s us"), {**values, "us": f"{latency:.1f}"},
                         evidence, index)
    if entry["status"] == "passed":
        return Reason.of("verified-passed", N_("signature %(n)s ran on %(device)s and matched the CPU reference in the "
                                               "verification harness"), values, evidence, index)
    return Reason.of("verified-failed", N_("signature %(n)s failed the verification harness on %(device)s: "
                                           "%(failure)s"), values, evidence, index)


def apply_verified(classified: Sequence[ClassifiedOp], verified: Mapping[str, Mapping[str, Mapping[str, object]]]
                   ) -> tuple[ClassifiedOp, ...]:
    """The classified operators with the verified results applied (unchanged when there are none)."""
    if not verified:
        return tuple(classified)
    out = []
    for op in classified:
        results = verified.get(op.operator.key)
        if not results:
            out.append(op)
            continue
        categories = list(op.signature_categories)
        reasons = list(op.reasons)
        seen, noted = [], False
        for index, signature in enumerate(op.operator.signatures):
            entry = results.get(signature_key(signature.attrs, signature.input_shapes, signature.input_dtypes))
            if entry is None or index >= len(categories):
                continue
            reasons.append(_reason(entry, index, op.replacement))
            noted = True
            route = entry.get("route") or ORIGINAL
            if route == ORIGINAL and entry["status"] == "failed" and op.replacement:
                continue  # no kernel by the facts: the replacement is what decides
            if entry["status"] == "failed":
                categories[index] = Category.CUSTOM_DEV
            elif route == ORIGINAL:
                categories[index] = Category.DIRECT
            seen.append(entry["status"])
        if not seen:
            out.append(replace(op, reasons=tuple(reasons)) if noted else op)
            continue
        all_passed = len(seen) == len(categories) and all(s == "passed" for s in seen)
        confidence = Confidence.HIGH if all_passed or "failed" in seen else op.confidence
        out.append(replace(op, signature_categories=tuple(categories), reasons=tuple(reasons),
                           category=Category.worst(c for c in categories if c), confidence=confidence))
    return tuple(out)
