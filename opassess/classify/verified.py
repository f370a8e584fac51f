"""Results from the user's own hardware override the facts: the verified overlay (kb/verified.py) applied to the
classified operators.

A signature whose device test passed on the user's hardware becomes direct with high confidence (the strongest
evidence there is: it ran and matched the CPU); one whose test failed becomes custom-dev, with the failure quoted.
Each override adds a reason (`verified-passed` / `verified-failed`) naming the results file and test case, so the
report says why the verdict differs from the facts. Signatures without a result keep their category.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..kb.verified import signature_key
from ..records import N_, ClassifiedOp, Reason
from ..vocabulary import Category, Confidence


def _reason(entry: Mapping[str, object], index: int) -> Reason:
    evidence = f"verified.json: {entry.get('results')} {entry.get('case')} ({entry.get('recorded_at')})"
    latency = entry.get("latency_us")
    values = {"n": index + 1, "device": entry.get("device"), "failure": entry.get("failure") or "no message"}
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
        seen = []
        for index, signature in enumerate(op.operator.signatures):
            entry = results.get(signature_key(signature.attrs, signature.input_shapes, signature.input_dtypes))
            if entry is None or index >= len(categories):
                continue
            categories[index] = Category.DIRECT if entry["status"] == "passed" else Category.CUSTOM_DEV
            reasons.append(_reason(entry, index))
            seen.append(entry["status"])
        if not seen:
            out.append(op)
            continue
        all_passed = len(seen) == len(categories) and all(s == "passed" for s in seen)
        confidence = Confidence.HIGH if all_passed or "failed" in seen else op.confidence
        out.append(replace(op, signature_categories=tuple(categories), reasons=tuple(reasons),
                           category=Category.worst(c for c in categories if c), confidence=confidence))
    return tuple(out)
