"""The Pareto chart of the HTML report: operators by likely effort with the cumulative share, as SVG geometry."""
from __future__ import annotations

import math
from collections.abc import Sequence

from .display.records import OperatorRow, ParetoBar, ParetoChart, Tick
from .text import days, percent

PARETO_BARS = 20  # bars in the Pareto chart before the rest are grouped into one "others" bar
PARETO_LABEL = 30  # characters of a bar label: what fits in the 120 px under the axis, rotated by 40 degrees


def _num(value: float) -> str:
    """An SVG coordinate or a CSS width: one decimal is plenty and keeps golden files stable."""
    return f"{value:.1f}"


def _nice_step(maximum: float, ticks: int = 4) -> float:
    """Axis step from 1, 2, 5 x 10^k giving at most `ticks` intervals: max 37.5 -> step 10 (0, 10, 20, 30, 40)."""
    if maximum <= 0:
        return 1.0
    raw = maximum / ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 5, 10):
        if multiple * magnitude >= raw:
            return multiple * magnitude
    return 10 * magnitude  # pragma: no cover - the loop always returns


def pareto_chart(ops: Sequence[OperatorRow], total_likely: float) -> ParetoChart | None:
    """Inline-SVG geometry of the Pareto chart: effort bars (largest first) and the cumulative-share line. `ops` are
    the display's operator rows (their op, short, likely, category and estimated).

    Worked example: bars of 10, 6, 4 person-days (total 20) give cumulative shares 50%, 80%, 100%; with a plot
    200 px high starting at y=20, the line passes through y = 20 + 200 * (1 - 0.5) = 120, then 60, then 20.
    """
    estimated = [op for op in ops if op.estimated and op.likely > 0]  # zero-cost operators have no bar
    if not estimated or total_likely <= 0:
        return None
    bars = [(op.short, op.op, op.likely, op.category) for op in estimated[:PARETO_BARS]]
    rest = estimated[PARETO_BARS:]
    if rest:
        bars.append((f"{len(rest)} others", f"{len(rest)} other operators", sum(op.likely for op in rest),
                     "others"))
    width, height = 760.0, 330.0
    left, right, top, bottom = 56.0, 56.0, 16.0, 120.0
    plot_w, plot_h = width - left - right, height - top - bottom
    # The labels hang down-left of their bar (rotated 40 degrees, anchored at the end): the first one needs about
    # 4.8 px per character (11 px text, cos 40) left of its bar's centre; widen the chart on the left when the
    # margin and half a slot are less, so it is not cut at the edge: 30 characters need 150 px, not 56 + 40.
    room = left + plot_w / len(bars) / 2
    extra = max(0.0, min(len(bars[0][0]), PARETO_LABEL) * 4.8 + 6 - room)
    width, left = width + extra, left + extra
    step = _nice_step(max(b[2] for b in bars))
    axis_max = step * math.ceil(max(b[2] for b in bars) / step)
    slot = plot_w / len(bars)
    bar_w = slot * 0.7
    baseline = top + plot_h
    cumulative = 0.0
    bar_items, points = [], []
    for i, (label, full, likely, category) in enumerate(bars):
        cumulative += likely
        h = plot_h * likely / axis_max
        cx = left + slot * (i + 0.5)
        cy = top + plot_h * (1 - min(cumulative / total_likely, 1.0))
        points.append(f"{_num(cx)},{_num(cy)}")
        bar_items.append(ParetoBar(
            x=_num(cx - bar_w / 2), y=_num(baseline - h), width=_num(bar_w), height=_num(h),
            label=label if len(label) <= PARETO_LABEL else label[:PARETO_LABEL - 1] + "\u2026",
            title=f"{full}: {days(likely)} person-days, cumulative {percent(cumulative / total_likely)}",
            category=category, label_x=_num(cx), label_y=_num(baseline + 10), cx=_num(cx), cy=_num(cy),
        ))
    left_ticks = tuple(Tick(_num(baseline - plot_h * (k * step) / axis_max), f"{k * step:g}")
                       for k in range(int(round(axis_max / step)) + 1))
    right_ticks = tuple(Tick(_num(baseline - plot_h * s), percent(s)) for s in (0, 0.25, 0.5, 0.75, 1))
    return ParetoChart(
        width=_num(width), height=_num(height), view_box=f"0 0 {_num(width)} {_num(height)}",
        left=_num(left), right=_num(width - right), top=_num(top), baseline=_num(baseline),
        bars=tuple(bar_items), line=" ".join(points), left_ticks=left_ticks, right_ticks=right_ticks,
        ref_y=_num(top + plot_h * 0.2), ref_label_x=_num(width - right - 4),
        left_label_x=_num(14), right_label_x=_num(width - 14), mid_y=_num(top + plot_h / 2),
        tick_left_x=_num(left - 6), tick_right_x=_num(width - right + 6),
    )


