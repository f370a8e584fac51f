"""How a number is written for a person: person-days, ranges, shares, signed changes. The one place that decides.

Every report, digest and CLI message takes its numbers from here, so "4.5 person-days", "3.0–6.0" and "38%"
read the same in the HTML page, the Markdown, the terminal, the SARIF messages and the portfolio plan.
"""
from __future__ import annotations

import re

from ..records import Effort
from .i18n import N_

DASH = "\u2013"  # en dash for ranges in prose and tables: "3.0–6.0"
HYPHEN = "-"  # plain hyphen for ranges in machine-read text (SARIF messages, JUnit details): "3.0-6.0"
MISSING = "n/a"

# Characters that end a line or change how the text around them reads, in any text format: C0 controls (CR, LF,
# TAB, ESC...), DEL, C1 controls (NEL ends a line too), the Unicode line and paragraph separators, and the
# bidirectional embeddings, overrides and isolates (which reorder what a reader sees).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def inert(value: object, newline: str | None = None) -> str:
    r"""Model-supplied text made safe for one line of a text report: every control, line-separator or bidi
    character is shown as its escape (a carriage return as the two characters \r, ESC as \x1b, U+202E as \u202e),
    so a module named "x<CR># All checks passed" cannot start a heading, a table row or a terminal sequence of its
    own. With `newline`, a line feed becomes that text instead (' ' where a wrapped message may carry one)."""
    text = str(value)
    if newline is not None:
        text = text.replace("\n", newline)
    return _CONTROL.sub(_visible, text)


def days(value: float) -> str:
    """Person-days with one decimal: 4.45 -> '4.5'."""
    return f"{value:.1f}"


def days_or(effort: Effort | None, missing: str = MISSING) -> str:
    """The likely person-days of `effort`, or `missing` when there is none."""
    return days(effort.likely) if effort is not None else missing


def days_range(effort: Effort, dash: str = DASH) -> str:
    """low–high person-days: Effort(3, 4, 6) -> '3.0–6.0'."""
    return f"{days(effort.low)}{dash}{days(effort.high)}"


def signed_days(value: float, *, zero_sign: bool = False) -> str:
    """A change in person-days, always signed and with one decimal: +12.0, -3.5, and 0.0 (or '+0.0' with
    zero_sign, as the one-line CLI account writes it)."""
    text = f"{value:+.1f}"
    return "0.0" if text in ("+0.0", "-0.0") and not zero_sign else text


def percent(share: float) -> str:
    """A share as a whole percentage: 0.384 -> '38%'."""
    return f"{share * 100:.0f}%"


def share(part: float, whole: float) -> float:
    """part / whole, 0 when there is no whole."""
    return part / whole if whole else 0.0


def bound(value: float) -> str:
    """A range bound from the weights as written there: 10.0 -> '10', 0.5 -> '0.5'."""
    return f"{value:g}"


def bounds_range(low: float, high: float) -> str:
    """A weights range: (3.0, 5.0) -> '3-5'."""
    return f"{bound(low)}{HYPHEN}{bound(high)}"


def step_text(kind: str, backward: object, training: bool) -> str:
    """Which part of the step an operator belongs to: 'optimizer', 'forward + backward' (a --train capture that
    recorded backward ATen ops for it) or 'forward'."""
    if kind == "optimizer":
        return N_("optimizer")
    return N_("forward + backward") if training and backward else N_("forward")


def days_detail(likely: float, low: float, high: float, unit: str = "") -> str:
    """'12.0 (10.0-16.0)': likely person-days with the range, for one-line messages ('12.0 person-days (...)' with
    unit=' person-days')."""
    return f"{days(likely)}{unit} ({days(low)}{HYPHEN}{days(high)})"
