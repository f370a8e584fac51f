"""The record of a rendered replacement call: the op, its arguments, the adapter lines before it and what it fails."""
from __future__ import annotations

from dataclasses import dataclass

from ..messages import N_, Text


@dataclass(frozen=True)
class Argument:
    """One argument of the call: `name` "" for a positional one; `value` a Python expression."""

    name: str
    value: str

    def text(self) -> str:
        return f"{self.name}={self.value}" if self.name else self.value


@dataclass(frozen=True)
class Call:
    """`adapters` (lines to run first), then `api(arguments)` followed by `result` (e.g. "[0]": the op returns a
    tuple). `failures` name each documented constraint of the op this call does not meet; `notes` say what the
    mapping could not carry over (an argument with no counterpart, a value only known at run time)."""

    api: str
    arguments: tuple[Argument, ...]
    result: str = ""
    adapters: tuple[str, ...] = ()
    failures: tuple[Text, ...] = ()
    notes: tuple[Text, ...] = ()

    def text(self) -> str:
        """`torch_npu.npu_fusion_attention(query=q, key=k, value=v, head_num=8, input_layout="BSND", ...)[0]`."""
        return f"{self.api}({', '.join(a.text() for a in self.arguments)}){self.result}"

    def argument(self, name: str) -> str | None:
        """The value given for keyword `name` (None when the call does not pass it)."""
        return next((a.value for a in self.arguments if a.name == name), None)

    @property
    def fits(self) -> bool:
        """True when the call meets every documented constraint checked."""
        return not self.failures


def notes_of(call: Call) -> list[Text]:
    """What goes with a call, in reading order: each constraint it fails ("fails: ..."), its adapter lines ("first:
    ..."), then what the mapping could not carry over."""
    return [*(Text(N_("fails: %(constraint)s"), {"constraint": f}) for f in call.failures),
            *(Text(N_("first: %(code)s"), {"code": line}) for line in call.adapters), *call.notes]
