"""What a training step is asked to run (--train, --amp): the one record the capture registry names, kept apart from
the step's code so the registry can name it without importing the step."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TrainOptions:
    """How to run the training step: mixed precision (None, "bf16" or "fp16")."""

    amp: str | None = None
