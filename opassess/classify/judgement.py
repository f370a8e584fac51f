"""One signature's judgement while the classifier builds it: its category so far and the reasons that decided it."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..reasons import ReasonCode
from ..records import Reason
from ..vocabulary import Category, Confidence


@dataclass
class Judgement:
    """Category and reasons of one signature while it is being judged."""

    index: int
    category: Category = Category.DIRECT
    reasons: list[Reason] = field(default_factory=list)
    confidences: list[Confidence] = field(default_factory=list)  # what each deciding check was worth

    def add(self, code: ReasonCode, message: str, evidence: str, *, category: Category | None = None,
            per_signature: bool = True) -> None:
        """A reason (a registered code: opassess/reasons.py), raising the category to `category` when it decides."""
        if category is not None:
            self.category = Category.worst((self.category, category))
        self.reasons.append(Reason(code.code, message, evidence, self.index if per_signature else None))

    def take(self, category: Category, reason: Reason) -> None:
        """A reason built elsewhere (classify/collective.py), raising the category to `category`."""
        self.category = Category.worst((self.category, category))
        self.reasons.append(reason)

    def add_message(self, code: ReasonCode, template: str, params: Mapping[str, Any], evidence: str, *,
                    category: Category | None = None, per_signature: bool = True) -> None:
        """`add` with the message as a catalog message id and its values (Reason.of): said in the reader's language."""
        if category is not None:
            self.category = Category.worst((self.category, category))
        self.reasons.append(Reason.of(code.code, template, params, evidence, self.index if per_signature else None))
