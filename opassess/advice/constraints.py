"""The documented constraints of a replacement op, as the knowledge base's route row states them, and the checks of
one call against them.

tools/kb_source.py reads them from the row's words ("layouts BSH/SBH/BSND/BNSD/TND, dtypes fp16/bf16/fp32, head dim
1-768 (Dq=Dk>=Dv), Nq<=256 with Nq/Nkv integer (GQA)": third_party_kernel_libs.tsv, flash_attn (direct calls)),
keeping each with the words it came from; a failure quotes them and the row, so the reader can check the claim.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import N_, Text

# The row's short dtype names -> torch's
DTYPE_NAMES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "int8": "int8"}


@dataclass(frozen=True)
class Constraints:
    """What the row documents for the op (`facts`: name -> {"values": [...], "text": "the row's words"}) and the
    row it comes from (`cite`, e.g. "third_party_kernel_libs.tsv:3 flash_attn (direct calls)")."""

    cite: str
    facts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def values(self, name: str) -> list[Any]:
        return list(self.facts.get(name, {}).get("values", ()))

    def words(self, name: str) -> str:
        return str(self.facts.get(name, {}).get("text", ""))

    def _fails(self, name: str, what: str) -> Text:
        return Text(N_("%(what)s: the op documents %(words)s (%(cite)s)"),
                    {"what": what, "words": self.words(name), "cite": self.cite})

    def layout(self, layout: str) -> list[Text]:
        allowed = self.values("layouts")
        return [self._fails("layouts", f"input_layout {layout}")] if allowed and layout not in allowed else []

    def dtype(self, dtype: str | None) -> list[Text]:
        allowed = [DTYPE_NAMES.get(d, d) for d in self.values("dtypes")]
        if not allowed or dtype is None or dtype in allowed:
            return []
        return [self._fails("dtypes", f"dtype {dtype}")]

    def head_dim(self, dim: int | None) -> list[Text]:
        bounds = self.values("head_dim")
        if len(bounds) != 2 or dim is None or bounds[0] <= dim <= bounds[1]:
            return []
        return [self._fails("head_dim", f"head dim {dim}")]

    def heads(self, heads: int | None, kv_heads: int | None = None) -> list[Text]:
        out = []
        most = self.values("max_heads")
        if most and heads is not None and heads > most[0]:
            out.append(self._fails("max_heads", f"{heads} query heads"))
        if "gqa_ratio" in self.facts and heads and kv_heads and heads % kv_heads:
            out.append(self._fails("gqa_ratio", f"{heads} query heads over {kv_heads} key/value heads"))
        return out


def check_attention(constraints: Constraints | None, *, layout: str, head_dim: int | None = None,
                    heads: int | None = None, kv_heads: int | None = None, dtype: str | None = None
                    ) -> tuple[Text, ...]:
    """Every documented constraint of the attention op this call fails (none checked without constraints)."""
    if constraints is None:
        return ()
    return (*constraints.layout(layout), *constraints.dtype(dtype), *constraints.head_dim(head_dim),
            *constraints.heads(heads, kv_heads))
