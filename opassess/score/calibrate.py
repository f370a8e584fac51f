"""Calibration: fit the category ranges of weights.toml to a team's recorded actuals and show the error before/after.

The actuals are a CSV with columns operator, category, person_days, and optionally composite (the operator's
composite score from a scan's JSON report). A row's prediction is the estimate's placed value,
low + composite x (high - low); without a composite column every row is placed at the middle of its range
(composite 0.5), since nothing else is known about it.

Fit per category, with at least calibration.min_rows actuals:
- composites that vary: least squares of person_days on composite, y = low + composite x (high - low);
- otherwise (or when least squares gives a range that runs backwards or below zero): the range that puts the
  prediction for the median composite on the median of the actuals (the value minimising the mean absolute
  error) and is as wide as the spread between the calibration.spread_quantiles (P10-P90 by default).
Proposed bounds are rounded to 0.1 person-day, and the error after is computed with the rounded values. A fitted
range whose mean absolute error is larger than the current range's (least squares minimises squared error, so an
outlier can pull it there) is not proposed: the category keeps its range and says why.
"""
from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..datafile import read_text
from ..errors import ConfigError
from ..vocabulary import CATEGORIES
from .weights import Weights
from .weights.load import MAX_DAYS

REQUIRED_COLUMNS = ("operator", "category", "person_days")
DEFAULT_COMPOSITE = 0.5  # the middle of the range, when the actuals carry no composite score


@dataclass(frozen=True)
class Actual:
    operator: str
    category: str
    person_days: float
    composite: float | None


@dataclass(frozen=True)
class CategoryFit:
    """One category's range before and after, and the mean absolute error of its predictions under each."""

    category: str
    rows: int
    before: tuple[float, float]  # (low, high) person-days
    after: tuple[float, float]
    mae_before: float | None  # None when the category has no actuals
    mae_after: float | None
    inside_before: float | None  # share of actuals inside [low, high]
    inside_after: float | None
    method: str  # how `after` was found, or why the range was kept

    @property
    def changed(self) -> bool:
        return self.after != self.before


@dataclass(frozen=True)
class Calibration:
    source: str  # the actuals file
    weights_source: str
    rows: int
    prediction: str  # how each row's prediction is made
    categories: tuple[CategoryFit, ...]  # in CATEGORIES order
    mae_before: float
    mae_after: float


def calibrate(actuals_csv: Path, weights: Weights) -> Calibration:
    """Propose category ranges fitted to recorded actuals, with the mean absolute error before and after."""
    actuals = _read(Path(actuals_csv))
    with_composite = all(a.composite is not None for a in actuals)
    fits = []
    for category in CATEGORIES:
        rows = [a for a in actuals if a.category == category]
        current = weights.effort.categories[category]
        fits.append(_fit(category, rows, (current.low, current.high), weights))
    before = [abs(_predict(a, _range(fits, a.category, "before")) - a.person_days) for a in actuals]
    after = [abs(_predict(a, _range(fits, a.category, "after")) - a.person_days) for a in actuals]
    return Calibration(
        source=str(actuals_csv),
        weights_source=weights.source,
        rows=len(actuals),
        prediction=("low + composite x (high - low), composite from the CSV" if with_composite else
                    f"low + {DEFAULT_COMPOSITE} x (high - low): the middle of the range (no composite column)"),
        categories=tuple(fits),
        mae_before=statistics.fmean(before),
        mae_after=statistics.fmean(after),
    )


def _range(fits: Sequence[CategoryFit], category: str, when: str) -> tuple[float, float]:
    fit = next(f for f in fits if f.category == category)
    return fit.before if when == "before" else fit.after


def _predict(actual: Actual, bounds: tuple[float, float]) -> float:
    composite = DEFAULT_COMPOSITE if actual.composite is None else actual.composite
    return bounds[0] + composite * (bounds[1] - bounds[0])


def _fit(category: str, rows: list[Actual], before: tuple[float, float], weights: Weights) -> CategoryFit:
    rules = weights.calibration
    if len(rows) < rules.min_rows:
        after, method = before, f"kept: {len(rows)} actual(s), fewer than calibration.min_rows = {rules.min_rows}"
    else:
        after, method = _fit_range(rows, weights)
        worse, current = _mae(rows, after), _mae(rows, before)
        assert worse is not None and current is not None  # rows holds at least min_rows >= 2 actuals here
        if worse > current + 1e-9:
            method = (f"kept: the fitted range {after[0]:g}-{after[1]:g} ({method}) would raise the mean absolute "
                      f"error ({worse:.2f} > {current:.2f})")
            after = before
    return CategoryFit(
        category=category,
        rows=len(rows),
        before=before,
        after=after,
        mae_before=_mae(rows, before),
        mae_after=_mae(rows, after),
        inside_before=_inside(rows, before),
        inside_after=_inside(rows, after),
        method=method,
    )


def _fit_range(rows: list[Actual], weights: Weights) -> tuple[tuple[float, float], str]:
    days = [a.person_days for a in rows]
    composites = [DEFAULT_COMPOSITE if a.composite is None else a.composite for a in rows]
    if len(set(composites)) > 1:
        # Least squares: slope = cov(c, y) / var(c); intercept = mean(y) - slope x mean(c).
        mean_c, mean_y = statistics.fmean(composites), statistics.fmean(days)
        var_c = sum((c - mean_c) ** 2 for c in composites)
        slope = sum((c - mean_c) * (y - mean_y) for c, y in zip(composites, days, strict=False)) / var_c
        low = mean_y - slope * mean_c
        if slope >= 0 and low >= 0:
            return (_round(low), _round(low + slope)), f"least squares on composite ({len(rows)} actuals)"
        reason = "least squares gave a range running backwards or below 0; "
    else:
        reason = ""
    # Median-centred: the prediction low + c x width for the median composite c lands on the median; width = the
    # quantile spread. Example: c 0.5, actuals 2, 3, 4, 6, 10: median 4, P10 2.4 and P90 8.4 (linear
    # interpolation), width 6: low = 4 - 0.5 x 6 = 1, high = 7.
    c = statistics.median(composites)
    q_low, q_high = weights.calibration.spread_quantiles
    width = _quantile(days, q_high) - _quantile(days, q_low)
    median = statistics.median(days)
    low = median - c * width
    if low < 0:  # keep the prediction on the median with low at 0: width = median / c
        low, width = 0.0, (median / c if c > 0 else width)
    return (_round(low), _round(low + width)), (
        f"{reason}median-centred, P{q_low * 100:g}-P{q_high * 100:g} wide ({len(rows)} actuals)")


def _quantile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default): P10 of 2, 3, 4, 6, 10 = 2 + 0.4 x 1 = 2.4."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


def _round(value: float) -> float:
    """To 0.1 person-day, halves up (0.65 -> 0.7), so hand arithmetic and the output agree."""
    return math.floor(value * 10 + 0.5 + 1e-9) / 10


def _mae(rows: Sequence[Actual], bounds: tuple[float, float]) -> float | None:
    if not rows:
        return None
    return statistics.fmean(abs(_predict(a, bounds) - a.person_days) for a in rows)


def _inside(rows: Sequence[Actual], bounds: tuple[float, float]) -> float | None:
    if not rows:
        return None
    return sum(1 for a in rows if bounds[0] <= a.person_days <= bounds[1]) / len(rows)


def _read(path: Path) -> list[Actual]:
    try:
        text = read_text(path, "actuals CSV", ConfigError, errors="strict")
        with io.StringIO(text, newline="") as handle:
            reader = csv.DictReader(handle)
            columns = [name.strip() for name in reader.fieldnames or ()]
            missing = [name for name in REQUIRED_COLUMNS if name not in columns]
            if missing:
                raise ConfigError(f"{path}: missing column(s) {', '.join(missing)}; expected "
                                  f"{', '.join(REQUIRED_COLUMNS)} (and optionally composite)")
            rows = []
            for row in reader:
                if None in row:  # DictReader files surplus fields under the key None
                    raise ConfigError(f"{path}:{reader.line_num}: {len(columns) + len(row[None])} fields, the "
                                      f"header has {len(columns)}")
                rows.append({(k or "").strip(): (v or "").strip() for k, v in row.items()})
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save the CSV as UTF-8") from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read actuals: {exc.strerror or exc}") from exc
    except csv.Error as exc:
        raise ConfigError(f"{path}: malformed CSV: {exc}") from exc
    if not rows:
        raise ConfigError(f"{path}: no actuals (the file has a header and no rows)")
    has_composite = "composite" in columns
    return [_actual(path, line, row, has_composite) for line, row in enumerate(rows, start=2)]


def _actual(path: Path, line: int, row: dict[str, str], has_composite: bool) -> Actual:
    category = row["category"]
    if category not in CATEGORIES:
        raise ConfigError(f"{path}:{line}: category {category!r} is not one of {', '.join(CATEGORIES)}")
    days = _number(path, line, "person_days", row["person_days"])
    if days > MAX_DAYS:  # the proposed ranges become weights, which accept at most this (1e308 would overflow)
        raise ConfigError(f"{path}:{line}: person_days {days:g} is above {MAX_DAYS:g}, the most a weights range "
                          f"accepts")
    composite = _number(path, line, "composite", row["composite"]) if has_composite else None
    if composite is not None and composite > 1:
        raise ConfigError(f"{path}:{line}: composite {composite:g} is above 1 (scores run from 0 to 1)")
    return Actual(operator=row["operator"], category=category, person_days=days, composite=composite)


def _number(path: Path, line: int, column: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise ConfigError(f"{path}:{line}: {column} {text!r} is not a number") from exc
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{path}:{line}: {column} {text!r} must be a number >= 0")
    return value
