"""The display's rows: an operator's row, the risk grid, the module rows and the rules' ranges, with the small
formatters they share (stars, scores, short names, heat bands); display/build.py puts them on the Display."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ...messages import say
from ...records import Capture, ClassifiedOp, Effort
from ...vocabulary import CATEGORIES, Category
from ..charts import _num
from ..document import Row
from ..i18n import N_
from ..reason_lines import cited, reason_rows, signature_rows
from ..sections.plan import (
    shown_source,
)
from ..text import bound, bounds_range, days, days_range, percent, share, step_text
from .records import (
    AtenRow,
    ImpactLabel,
    ModuleRow,
    OperatorRow,
    RiskCell,
    RiskGrid,
    RiskRow,
    RuleRange,
    ShownOp,
    SubscoreRow,
)

SHOWN_AS_ZERO = 0.05  # person-days days() writes as 0.0: such an operator is no top row (zero-cost, block share)
TOP_OPERATORS = 10  # operators listed as "top by effort" in the summary views
MODULE_ROWS = 40  # module rows shown in HTML/Markdown (all of them are in the JSON)
MODULES_PER_OP = 12  # module paths listed per operator in the evidence (all of them are in the JSON)
CELL_OPS = 30  # operators named in one risk-matrix cell of the HTML/Markdown grid (all of them are in the JSON)
CATEGORY_RANK = {category: rank for rank, category in enumerate(CATEGORIES)}  # sort order: direct < custom-dev
# The 20/80 badge marks the operators carrying 80% of the effort only when they are few: at most a third of the
# operator types (or 3): "22 of 31" marked says nothing.
PARETO_MARK_SHARE, PARETO_MARK_MIN = 1 / 3, 3
MODULE_MIN_SHARE = 0.01  # modules carrying less than 1% of the effort are left to the JSON
LIKELIHOOD_LABELS = {1: N_("rare"), 2: N_("unlikely"), 3: N_("possible"), 4: N_("likely"), 5: N_("almost certain")}
HEAT_MARKS = {"low": "\U0001F7E9", "moderate": "\U0001F7E8", "high": "\U0001F7E7", "critical": "\U0001F7E5"}  # squares
IMPACT_LABELS = {1: N_("negligible"), 2: N_("minor"), 3: N_("moderate"), 4: N_("major"), 5: N_("severe")}


# ------------------------------------------------------------------ small formatters


def _stars(stars: int) -> str:
    return "\u2605" * stars + "\u2606" * (5 - stars)


def _score(value: float) -> str:
    return f"{value:.2f}"


def short_name(op: str) -> str:
    """A compact label for charts: 'torch.nn.Conv2d' -> 'nn.Conv2d', 'torch.nn.functional.gelu' -> 'F.gelu'."""
    for prefix, replacement in (("torch.nn.functional.", "F."), ("torch.nn.", "nn.")):
        if op.startswith(prefix):
            return replacement + op[len(prefix):]
    return op


def heat(likelihood: int, impact: int) -> str:
    """The heat-map band of a risk cell by likelihood x impact: 1-4 low, 5-9 moderate, 10-14 high, 15-25 critical."""
    product = likelihood * impact
    if product <= 4:
        return "low"
    if product <= 9:
        return "moderate"
    if product <= 14:
        return "high"
    return "critical"


def _support_text(classified: ClassifiedOp | None, aten: str, backward: bool = False) -> str:
    support = (classified.backward_support if backward else classified.aten_support) if classified else {}
    if aten not in support:
        return N_("not checked")
    return N_("NPU kernel") if support[aten] else N_("no NPU kernel")


def _stand_ins_text(capture: Capture, _: Callable[[str], str] = str) -> str:
    """'Stand-ins (no GPU here): flash_attn (flash_attn.flash_attn_func); ...', or '' when none was used."""
    if not capture.stand_ins:
        return ""
    uncalled = _("imported, not called")
    used = "; ".join(f"{s.library} ({', '.join(s.symbols) or uncalled})" for s in capture.stand_ins)
    return _("Stand-ins (no GPU here; their calls are library operators): %(used)s.") % {"used": used}


# ------------------------------------------------------------------ builders


def _operator_row(row: Row, total_likely: float, training: bool = False,
                  _: Callable[[str], str] = str) -> OperatorRow:
    operator, classified, estimate = row.operator, row.classified, row.estimate
    category = classified.category if classified else "unclassified"
    categories = classified.signature_categories if classified else ()
    signatures = signature_rows(operator.signatures, categories, _)
    base: dict[str, Any] = {
        "rank": row.rank,
        "op": operator.key,
        "short": short_name(operator.key),
        "kind": operator.kind,
        "category": category,
        "known": classified.known if classified else True,
        "confidence": classified.confidence if classified else None,
        "count": operator.count,
        "signature_count": len(operator.signatures),
        "aten": tuple(operator.aten),
        "aten_rows": tuple(AtenRow(a, _(_support_text(classified, a))) for a in operator.aten),
        "category_rank": CATEGORY_RANK.get(category, -1),
        "reasons": reason_rows(classified.reasons, signatures, _) if classified else (),
        "replacement": classified.replacement if classified else None,
        "replacement_deprecated": classified.replacement_deprecated if classified else False,
        "replacement_successor": classified.replacement_successor if classified else None,
        "cann_op": classified.cann_op if classified else None,
        "sources": tuple(dict.fromkeys(shown_source(s) for s in operator.sources)),
        "modules": tuple(operator.modules),
        "modules_text": ", ".join(m or "(model)" for m in operator.modules),
        "modules_shown": tuple(m or "(model)" for m in operator.modules[:MODULES_PER_OP]),
        "modules_more": max(0, len(operator.modules) - MODULES_PER_OP),
        "signatures": signatures,
        "estimated": estimate is not None,
        "step_text": step_text(operator.kind, operator.backward_aten, training),
        "backward_rows": tuple(AtenRow(a, _(_support_text(classified, a, backward=True)))
                               for a in operator.backward_aten),
        "search": " ".join([operator.key, operator.kind, category, *operator.modules]).lower(),
    }
    if estimate is None:
        return OperatorRow(**base)
    score, effort, risk = estimate.score, estimate.person_days, estimate.risk
    return OperatorRow(
        **base,
        composite=round(float(score.composite), 4),
        composite_text=_score(score.composite),
        functional_text=_score(score.functional),
        performance_text=_score(score.performance),
        ecosystem_text=_score(score.ecosystem),
        subscores=tuple(SubscoreRow(s.dimension, s.criterion, _score(s.value), _score(s.weight), cited(s.signal, _))
                        for s in score.subscores),
        likely=round(float(effort.likely), 2),
        likely_text=days(effort.likely),
        range_text=days_range(effort),
        share_text=percent(share(effort.likely, total_likely)),
        stars=risk.stars,
        stars_text=_stars(risk.stars),
        likelihood=risk.likelihood,
        impact=risk.impact,
        risk_text=f"L{risk.likelihood} \u00d7 I{risk.impact}",
        risk_signals=tuple(say(signal, _) for signal in risk.signals),
        heat=heat(risk.likelihood, risk.impact),
        pareto=estimate.pareto,
    )


def _risk_grid(matrix: tuple[tuple[tuple[str, ...], ...], ...], _: Callable[[str], str] = str) -> RiskGrid:
    """Rows from likelihood 5 (top) down to 1, columns impact 1..5, as on a printed risk matrix (labels through
    the report language's gettext `_`)."""
    rows = []
    for likelihood in range(5, 0, -1):
        cells = []
        for impact in range(1, 6):
            ops = tuple(matrix[likelihood - 1][impact - 1]) if len(matrix) >= likelihood else ()
            band = heat(likelihood, impact)
            cells.append(RiskCell(
                likelihood=likelihood, impact=impact, ops=ops, shorts=tuple(short_name(op) for op in ops),
                shown=tuple(ShownOp(op, short_name(op)) for op in ops[:CELL_OPS]),
                more=max(0, len(ops) - CELL_OPS), more_title=", ".join(ops[CELL_OPS:]), count=len(ops),
                heat=band, mark=HEAT_MARKS[band],
                title=_("likelihood %(l)d (%(l_label)s), impact %(i)d (%(i_label)s): %(n)d operator(s)")
                % {"l": likelihood, "l_label": _(LIKELIHOOD_LABELS[likelihood]), "i": impact,
                   "i_label": _(IMPACT_LABELS[impact]), "n": len(ops)},
            ))
        rows.append(RiskRow(likelihood, _(LIKELIHOOD_LABELS[likelihood]), tuple(cells)))
    return RiskGrid(tuple(rows), tuple(ImpactLabel(i, _(IMPACT_LABELS[i])) for i in range(1, 6)))


def _module_rows(by_module: Mapping[str, Effort], module_types: Mapping[str, str], class_name: str,
                 total_likely: float) -> tuple[list[ModuleRow], int, int]:
    """The MODULE_ROWS largest modules of at least MODULE_MIN_SHARE, in tree order (children by effort, largest
    first), and how many were left out for being small and for being past the rows shown.

    The rows are chosen by effort, not by tree order: in a 32-layer decoder the first layers' sub-modules must not
    push the later layers, the embedding and the head off the table. A parent carries at least its child's effort,
    so (ties broken by depth) every shown row's parent is shown too."""
    children: dict[str, list[str]] = {}
    for path in by_module:
        if path == "":
            continue
        parent = path.rpartition(".")[0]
        while parent and parent not in by_module:  # attach to the nearest ancestor that has a row
            parent = parent.rpartition(".")[0]
        children.setdefault(parent, []).append(path)
    ordered: list[str] = []

    def visit(path: str) -> None:
        ordered.append(path)
        for child in sorted(children.get(path, []), key=lambda p: (-by_module[p].likely, p)):
            visit(child)

    if "" in by_module:
        visit("")
    else:
        for top_level in sorted(children.get("", []), key=lambda p: (-by_module[p].likely, p)):
            visit(top_level)
    large = [p for p in ordered if not p or share(by_module[p].likely, total_likely) >= MODULE_MIN_SHARE]
    chosen = set(sorted(large, key=lambda p: (-by_module[p].likely, p.count(".") + bool(p), p))[:MODULE_ROWS])
    shown = []
    for path in ordered:
        if path not in chosen:
            continue
        effort = by_module[path]
        part = share(effort.likely, total_likely)
        depth = 0 if path == "" else path.count(".") + 1
        shown.append(ModuleRow(
            path=path or "(model)", name=path.rpartition(".")[2] if path else "(model)",
            class_=class_name if path == "" else module_types.get(path, ""), depth=depth,
            indent=f"{depth * 1.2:.1f}", likely_text=days(effort.likely), range_text=days_range(effort),
            share_text=percent(part), bar_pct=_num(100 * part),
        ))
    return shown, len(ordered) - len(large), len(large) - len(shown)


def _stem(source: str) -> str:
    """'examples/resnet_like.py' -> 'resnet_like'; 'torchvision.models:resnet50' -> 'resnet50'; '.' (a source scan of
    the working folder) -> the folder's name."""
    name = source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    if name in ("", ".", ".."):
        name = Path(source).resolve().name
    return name[:-3] if name.endswith(".py") else (name or "report")


def rule_ranges(ranges: Mapping[str, tuple[float, float]] | None) -> tuple[RuleRange, ...]:
    """'3-5' per category from the weights' (low, high); the hardest category's range is open at the top ('10+'):
    its high is where the likely estimate tops out, not a ceiling on the work."""
    if not ranges:
        return ()
    return tuple(RuleRange(c, f"{bound(ranges[c][0])}+" if c == Category.CUSTOM_DEV else bounds_range(*ranges[c]))
                 for c in Category if c in ranges)
