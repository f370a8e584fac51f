"""Advice for the exact call: the replacement a finding names, written out with this call's own arguments.

A finding that says "use npu_fusion_attention" leaves the lead asking what to type. This package renders the call
(`call.Call`): the torch_npu op with its arguments mapped from the source call's arguments (`flash.flash_call`) or
from the captured signature (shapes, dtypes, head count, window, mask, scale: `captured`), the adapter lines the
arguments need (a mask to build, a packed tensor to split), and each documented constraint of the op the call
fails, named (`constraints`: head dim, layouts, dtypes and head counts read from the knowledge base's route row,
never written here). It sits beside the source scan (which renders its sites' calls) and below the findings.
"""
from __future__ import annotations

from .call import Argument, Call, notes_of
from .captured import AttentionFacts, attention_call, rms_norm_call, rotary_call, swiglu_call
from .constraints import Constraints, check_attention
from .flash import FLASH_CALLS, flash_call

__all__ = ["FLASH_CALLS", "Argument", "AttentionFacts", "Call", "Constraints", "attention_call", "check_attention",
           "flash_call", "notes_of", "rms_norm_call", "rotary_call", "swiglu_call"]
