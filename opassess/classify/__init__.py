"""Classify stage: give every operator a migration category (direct / param-converted / custom-dev) with its reasons.

operators.py holds the classifier and its numbered steps (scope, one judgement per signature, backward, not in the
knowledge base, verdict); judgement.py one signature's judgement; aten.py judges one ATen op (kernel, view,
composite, binding); library.py the stand-ins of GPU-only libraries; project.py a project's own ops; scope.py entry
ops, deprecated replacements and backward ops; decompose.py asks the PyTorch dispatcher.
"""
from __future__ import annotations

from .operators import AtenVerdict, classify

__all__ = ["AtenVerdict", "classify"]
