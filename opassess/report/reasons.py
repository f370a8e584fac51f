"""Reasons as the reports print them: each distinct reason once, with the signatures it covers (the JSON keeps one
reason per signature index)."""
from __future__ import annotations

from ..records import Reason
from .display_records import ReasonRow, SignatureRow

SIGNATURES_PER_REASON = 3  # signature texts shown beside a reason that covers some of them


def reason_rows(reasons: tuple[Reason, ...], signatures: tuple[SignatureRow, ...]) -> tuple[ReasonRow, ...]:
    """Each distinct reason once, in first-seen order, with the signatures it covers (a reason given once for
    the operator, without a signature index, covers the operator)."""
    groups: dict[tuple[str, str, str], list[int | None]] = {}
    for r in reasons:
        groups.setdefault((r.code, r.message, r.evidence), []).append(r.signature)
    rows = []
    for (code, message, evidence), indexes in groups.items():
        covered = () if None in indexes else tuple(sorted(set(indexes)))  # type: ignore[type-var]
        rows.append(ReasonRow(code, message, evidence, covered, _covers_text(covered, signatures)))
    return tuple(rows)


def _covers_text(covered: tuple[int, ...], signatures: tuple[SignatureRow, ...]) -> str:
    total = len(signatures)
    if not covered or total <= 1:
        return ""
    if len(covered) == total:
        return f"all {total} signatures"
    shown = "; ".join(signatures[i].text for i in covered[:SIGNATURES_PER_REASON] if i < total)
    more = f"; +{len(covered) - SIGNATURES_PER_REASON} more" if len(covered) > SIGNATURES_PER_REASON else ""
    return f"signature{'s' if len(covered) > 1 else ''} {', '.join(str(i + 1) for i in covered)} of {total}: " \
           f"{shown}{more}"
