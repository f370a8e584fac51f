"""Signatures and reasons as the reports print them: each signature as one line of text, each distinct reason once
with the signatures it covers (the JSON keeps one reason per signature index)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..kb.catalog import CITED_PHRASES, said_quotes
from ..messages import Text, said_within, say
from ..records import Reason, Signature
from ..source.catalog import said_contexts
from .display.records import ReasonRow, SignatureRow
from .document import jsonable

SIGNATURES_PER_REASON = 3  # signature texts shown beside a reason that covers some of them


def _tensor_text(shape: tuple[int, ...] | None, dtype: str | None) -> str:
    dims = ",".join(str(d) for d in shape) if shape is not None else ""
    return f"{dtype or '?'}[{dims}]"


def _inputs_text(shapes: Iterable, dtypes: Iterable, _: Callable[[str], str] = str) -> str:
    parts = [_tensor_text(shape, dtype) for shape, dtype in zip(shapes, dtypes, strict=False) if shape is not None]
    return ", ".join(parts) if parts else _("no tensor inputs")


def _attrs_text(attrs: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={jsonable(value)}" for key, value in attrs.items())


def signature_rows(signatures: Sequence[Signature], categories: Sequence[str],
                   _: Callable[[str], str] = str) -> tuple[SignatureRow, ...]:
    """'stride=[1, 1]; float32[1,3,224,224]' per signature, with its count and category."""
    return tuple(SignatureRow(text="; ".join(p for p in (_attrs_text(s.attrs),
                                                         _inputs_text(s.input_shapes, s.input_dtypes, _)) if p),
                              count=s.count, category=categories[i] if i < len(categories) else "")
                 for i, s in enumerate(signatures))


def reason_text(reason: Reason, _: Callable[[str], str] = str) -> str:
    """A reason's message in the reader's language: its template through the catalog, filled with its values
    (identifiers as they are); a reason built without a template reads as written."""
    if reason.template and not isinstance(reason.message, Text):
        return _(reason.template) % dict(reason.params)
    return say(reason.message, _)


def cited(text: str, _: Callable[[str], str] = str) -> str:
    """A text that quotes citations (a reason's evidence, a sub-score's signal) in the reader's language: its message,
    the rules.toml texts, the kernel-library contexts and the code's citation phrases inside it said through `_`,
    identifiers as they are."""
    return said_within(said_contexts(said_quotes(say(text, _), _), _), CITED_PHRASES, _)


def reason_rows(reasons: tuple[Reason, ...], signatures: tuple[SignatureRow, ...],
                _: Callable[[str], str] = str) -> tuple[ReasonRow, ...]:
    """Each distinct reason once, in first-seen order, with the signatures it covers (a reason given once for
    the operator, without a signature index, covers the operator)."""
    groups: dict[tuple[str, str, str], list[int | None]] = {}
    said: dict[tuple[str, str, str], str] = {}
    for r in reasons:
        groups.setdefault((r.code, r.message, r.evidence), []).append(r.signature)
        said.setdefault((r.code, r.message, r.evidence), reason_text(r, _))
    rows = []
    for key, indexes in groups.items():
        code, _message, evidence = key
        covered = () if None in indexes else tuple(sorted({i for i in indexes if i is not None}))
        rows.append(ReasonRow(code, said[key], cited(evidence, _), covered,
                              _covers_text(covered, signatures, _)))
    return tuple(rows)


def _covers_text(covered: tuple[int, ...], signatures: tuple[SignatureRow, ...], _: Callable[[str], str] = str
                 ) -> str:
    """'all 3 signatures', 'signatures 1, 2 of 3: <their texts>' (shown after 'for ')."""
    total = len(signatures)
    if not covered or total <= 1:
        return ""
    if len(covered) == total:
        return _("all %(n)s signatures") % {"n": total}
    shown = "; ".join(signatures[i].text for i in covered[:SIGNATURES_PER_REASON] if i < total)
    more = _("; +%(n)s more") % {"n": len(covered) - SIGNATURES_PER_REASON} \
        if len(covered) > SIGNATURES_PER_REASON else ""
    text = _("signatures %(which)s of %(n)s: %(shown)s") if len(covered) > 1 else \
        _("signature %(which)s of %(n)s: %(shown)s")
    return text % {"which": ", ".join(str(i + 1) for i in covered), "n": total, "shown": shown + more}
