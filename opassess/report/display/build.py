"""The display: the facts of one assessment formatted for people, as typed records, built once for every format.

Numbers are already written (through report/text.py: "4.5", "3.0–6.0", "38%"), bar widths and the Pareto chart's
SVG geometry already computed, so templates and the terminal reporter only place values. Strings that came from
the model (op keys, module paths, file names, class names) stay plain strings: the HTML environment autoescapes
them, the Markdown one escapes them. Records are read by attribute (`op.likely_text`), in Python and templates alike.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from ...assessment import Assessment
from ...messages import say
from ...records import Effort
from ...score.records import Estimate
from ...vocabulary import CATEGORIES, NO_CAPTURE, Category, CostBasis
from ..charts import _num, pareto_chart
from ..document import Row
from ..i18n import DEFAULT, N_, number, translations
from ..prose import call_text, capture_step_text, device_note_text, evidence_text, headline_text, note_text
from ..reading import DocumentPart
from ..reason_lines import reason_text
from ..sections.graph import graph_actions, graph_section
from ..sections.job import with_job
from ..sections.operators import SummaryPart
from ..sections.plan import (
    action_items,
    activity_rows,
    decision_rows,
    finding_title,
    group_repeats,
    origin_rows,
    shorten_paths,
    shown_source,
)
from ..sections.reach import reach_text
from ..sections.routes import onnx_section, serving_section
from ..sections.source import is_work, shown_sites, source_section
from ..sections.time import gain_text, slow_card, time_section
from ..sections.versions import version_lines
from ..text import days, days_range, percent, share
from .page import Display
from .records import (
    Attempt,
    Card,
    CategoryRow,
    FindingRow,
    ModelHeader,
    ModuleRow,
    OperatorRow,
    ParetoSummary,
    PieSlice,
    Totals,
)
from .rows import (
    MODULE_ROWS,
    PARETO_MARK_MIN,
    PARETO_MARK_SHARE,
    SHOWN_AS_ZERO,
    TOP_OPERATORS,
    _module_rows,
    _operator_row,
    _risk_grid,
    _stand_ins_text,
    _stars,
    _stem,
    rule_ranges,
)


def build_display(assessment: Assessment, rows: Sequence[Row], document: DocumentPart,
                  language: str = DEFAULT) -> Display:
    """The display of an assessment in `language`, from its joined rows and its JSON document (built once, beside
    it). Operator names, APIs and paths are placed into the translated sentences as they are."""
    _ = translations(language).gettext
    model, capture, est = assessment.model, assessment.capture, assessment.estimate
    total = est.total if est else None
    total_likely = total.likely if total else 0.0
    ops = tuple(_operator_row(r, total_likely, capture.training, _) for r in rows)
    summary = document.summary
    said = {r.message: reason_text(r, _) for c in assessment.classified for r in c.reasons}  # reasons, translated
    if est is not None:  # the decisions' titles and plans, the operators' cost notes: the action items quote them
        said.update({text: say(text, _) for d in est.decisions for text in (d.title, *d.plan)})
        said.update({e.basis: say(e.basis, _) for e in est.ops if e.basis})
    headline = headline_text(round(est.p10, 2), round(est.p50, 2), round(est.p90, 2), _) if est else ""
    unknown = tuple(op for op in ops if not op.known)
    categories = _category_rows(ops, est, total_likely)
    pareto, pareto_statement = _pareto(est, summary, len(ops), _)
    modules: list[ModuleRow] = []
    modules_small = modules_cut = 0
    if est is not None:
        grouped, types = group_repeats(est.by_module, capture.module_types)
        modules, modules_small, modules_cut = _module_rows(grouped, types, model.class_name, total_likely)

    return Display(
        title=_("Ascend NPU migration assessment: %s") % model.class_name,
        tool_version=assessment.tool_version,
        model=_model_header(assessment, document, language, _),
        target=assessment.target,
        torch_npu=assessment.torch_version,
        kb_version=assessment.kb_version,
        weights_source=document.weights_source,
        estimated=est is not None,
        totals=Totals(likely_text=days(total.likely), range_text=days_range(total), low_text=days(total.low),
                      high_text=days(total.high), p50_text=days(est.p50), p90_text=days(est.p90),
                      method=say(est.method, _), p10_text=days(est.p10), headline_text=headline)
        if est and total else None,
        cards=_cards(assessment, document, ops, unknown, headline, _),
        categories=categories,
        pie=tuple(PieSlice(c.name, c.types) for c in categories if c.types),
        pareto=pareto,
        pareto_statement=pareto_statement,
        pareto_marked=pareto is not None and pareto.count <= max(PARETO_MARK_MIN, len(ops) * PARETO_MARK_SHARE),
        pareto_chart=pareto_chart(ops, sum(op.likely for op in ops if op.estimated)),  # operators' own effort
        risk_grid=_risk_grid(est.risk_matrix, _) if est else None,
        operators=ops,
        top_operators=tuple(op for op in ops if not op.estimated or op.likely >= SHOWN_AS_ZERO)[:TOP_OPERATORS],
        modules=tuple(modules),
        modules_hidden=modules_small + modules_cut,
        modules_small=modules_small,
        modules_cut=modules_cut,
        module_rows=MODULE_ROWS,
        findings=tuple(FindingRow(kind=f.kind, title=finding_title(f, _), ops=tuple(f.ops),
                                  source=shown_source(f.source) if f.source else "",
                                  npu_api=call_text(f, _) or f.npu_api or "", effect=_(f.effect),
                                  time_text=gain_text(doc.time, _))
                       for f, doc in zip(assessment.findings, document.findings, strict=True)),
        unknown=unknown,
        suggested_html=f"{_stem(model.source)}.html",
        effort_ranges=rule_ranges(assessment.effort_ranges),
        profile=summary.profile or "",
        assumptions=note_text(summary.assumptions, _),
        band_text=note_text(summary.band, _),
        activities=activity_rows(est, _) if est else (),
        decisions=decision_rows(est, _) if est else (),
        origins=origin_rows(est, _) if est else (),
        zero_cost=tuple((summary.cost_bases or {}).get(CostBasis.ZERO_COST, ())),
        validation_block=tuple((summary.cost_bases or {}).get(CostBasis.VALIDATION_BLOCK, ())),
        actions=action_items(document, assessment.findings, _, said) + graph_actions(
            document.graph_mode, shown_source, _, assessment.graph_mode),
        evidence_order=evidence_text(assessment.target, _),
        source=source_section(document.source_findings, document.source, _),
        time=with_job(time_section(document.performance, document.operators, _), document.performance, _),
        graph=graph_section(document.graph_mode, _, shown_source, assessment.graph_mode),
        versions=version_lines(document.versions, _),
        source_only=capture.method == NO_CAPTURE,
        onnx=onnx_section(document.onnx, _, tuple(dict.fromkeys(
            op for f in document.findings if f.kind == "dynamic-shape" for op in f.ops))),
        serving=serving_section(document.serving, _),
    )


def _category_rows(ops: Sequence[OperatorRow], est: Estimate | None, total_likely: float
                   ) -> tuple[CategoryRow, ...]:
    """Types, calls and effort per category, every category (an empty one too), easiest first."""
    categories = []
    for category in Category:
        members = [op for op in ops if op.category == category]
        effort = est.by_category.get(category, Effort(0.0, 0.0, 0.0)) if est else None
        part = share(effort.likely, total_likely) if effort else 0.0
        categories.append(CategoryRow(
            name=category, types=len(members), occurrences=sum(op.count for op in members),
            likely_text=days(effort.likely) if effort else "", range_text=days_range(effort) if effort else "",
            share_text=percent(part) if effort else "", bar_pct=_num(100 * part),
            ops=tuple(op.op for op in members),
        ))
    return tuple(categories)


def _pareto(est: Estimate | None, summary: SummaryPart, types: int, _: Callable[[str], str]
            ) -> tuple[ParetoSummary | None, str]:
    """The 20/80 operators and their sentence; none without an estimate or with no operator carrying effort."""
    if est is None or not est.pareto_ops:  # no operator, no effort: "0 of 0 types carry 0%" would say nothing
        return None, ""
    share_types = est.pareto_share_of_types
    share_effort = summary.pareto.share_of_effort if summary.pareto else 0.0
    names = tuple(est.pareto_ops)
    # the sentence names the largest; a flat model can have 160 names here (the JSON has them all)
    pareto = ParetoSummary(ops=names, count=len(names), share_types_text=percent(share_types),
                           share_effort_text=percent(share_effort), shown=names[:TOP_OPERATORS],
                           more=max(0, len(names) - TOP_OPERATORS))
    return pareto, _("%(n)d of %(total)d operator types (%(types)s) carry %(effort)s of the operators' estimated "
                     "effort") % {"n": len(names), "total": types, "types": percent(share_types),
                                  "effort": percent(share_effort)}


def _cards(assessment: Assessment, document: DocumentPart, ops: Sequence[OperatorRow],
           unknown: Sequence[OperatorRow], headline: str, _: Callable[[str], str]) -> tuple[Card, ...]:
    """The summary cards: effort, operator types (source sites for a source scan), custom development, unknown
    operators, the highest risk, and the slowest operator with a time model."""
    est = assessment.estimate
    total = est.total if est else None
    summary = document.summary
    source_only = assessment.capture.method == NO_CAPTURE
    # The sites the source section counts as work (is_work: not the precision notes and no-ops it lists after them)
    sites = [s for s in shown_sites(document.source_findings) if is_work(s)]
    scanned = document.source.files if document.source else ()
    # The sites priced in the total count with the operators: every work site of a source-only report (it has no
    # operators), the reached ones of `scan --source` (a present site is costed apart, out of the total), except a
    # site whose call is a captured operator's (covered_by: that operator counts it; shown_sites leaves it out).
    priced = [s for s in sites if s.reached is not False and s.risk]
    counts = {c: (0 if source_only else summary.categories[c]) + sum(1 for s in priced if s.category == c)
              for c in CATEGORIES}
    ranked = [((op.stars, op.likely), op.stars_text, op.op) for op in ops if op.estimated] + [
        ((s.risk.stars, s.person_days.likely if s.person_days else 0.0), _stars(s.risk.stars),
         f"{s.file}:{s.line} {s.subject}") for s in priced if s.risk]
    worst = max(ranked, key=lambda item: item[0], default=None)
    return (
        Card(_("Estimated effort"), headline if est else _("not estimated"),
             _("P50 with its P10-P90 band; sum of the most likely values %(likely)s, of the lows and highs %(range)s")
             % {"likely": days(total.likely), "range": days_range(total)} if est and total else ""),
        *((Card(_("Source sites"), str(len(sites)), _("%(n)d files scanned") % {"n": len(scanned)}),)
          if source_only else (Card(_("Operator types"), str(len(ops)),
                                    _("%d calls in the forward pass") % summary.occurrences),)),
        Card(_("Custom development"), str(counts[Category.CUSTOM_DEV]),
             _("%(pc)d param-converted, %(d)d direct") % {"pc": counts[Category.PARAM_CONVERTED],
                                                          "d": counts[Category.DIRECT]}),
        Card(_("Unknown to the knowledge base"), str(len(unknown)),
             ", ".join(op.op for op in unknown[:3]) + (" ..." if len(unknown) > 3 else "")
             if unknown else _("every operator has a known fact")),
        Card(_("Highest risk"), worst[1] if worst else (_("none") if est is not None else _("not estimated")),
             worst[2] if worst else (_("no operator to port") if est is not None else "")),
        *slow_card(document.performance, document.operators, _),
    )


def _model_header(assessment: Assessment, document: DocumentPart, language: str, _: Callable[[str], str]
                  ) -> ModelHeader:
    """The model and its capture: the methods tried (errors and device note as the JSON holds them: scrubbed of the
    machine's absolute paths), the step captured, the stand-ins used."""
    model, capture = assessment.model, assessment.capture
    written = document.model.capture
    errors = [a.error for a in written.attempts]
    errors = errors if len(errors) == len(capture.attempts) else [a.error for a in capture.attempts]
    attempts = tuple(Attempt(method=a.method,
                             status=N_("used") if a.method == capture.method and a.error is None
                             else (N_("ok") if a.error is None else N_("failed")),
                             error=shorten_paths(error or ""), seconds_text=f"{a.seconds:.2f} s")
                     for a, error in zip(capture.attempts, errors, strict=True))
    return ModelHeader(class_name=model.class_name, source=document.model.source, entry=model.entry,
                       parameters_text=number(model.parameters, language), dtype=model.dtype,
                       inputs_text=", ".join(model.inputs), capture_method=capture.method, device=capture.device,
                       device_note=device_note_text(written.device_note or capture.device_note or "", _),
                       attempts=attempts,
                       step_text=capture_step_text(capture, _), training=capture.training,
                       stand_ins_text=_stand_ins_text(capture, _), reach_text=reach_text(document.reach, _))
