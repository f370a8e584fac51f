"""What a reader does with an assessment: source paths they can open, the model-level activities, effort by origin,
repeated structure grouped in the module roll-up, and the action items that end every report.

Pure functions over records and the JSON document; report/display/build.py puts their results on the Display.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from ...findings.patterns import IMPACT, shipped_patterns
from ...messages import say
from ...reasons import REASONS
from ...records import Effort, Finding

# SITE_PACKAGES: '.../site-packages/' + the package (group 1)
from ...score.cost import MODEL_LEVEL, PRICED_CHANGE, PROJECT, SITE_PACKAGES, SOURCE_FINDING
from ...score.decisions import basis_text
from ...score.records import Estimate
from ...score.weights.decisions import CHANGE_TIERS
from ...vocabulary import Category, CostBasis
from ..display.records import ActionItem, ActivityRow, DecisionRow, OriginRow
from ..parts import EffortPart
from ..paths import portable, shorten_paths  # noqa: F401 - shorten_paths: the display's, re-exported
from ..prose import Translate, origin_who
from ..reading import DocumentPart
from ..text import days, days_range, percent, share
from .operators import ReasonPart
from .source import SitePart
from .time import us_text

_NUMBERED = re.compile(r"^\d+$")


# ----------------------------------------------------------------------------------- paths


def is_library_source(source: str | None) -> bool:
    """True for a 'file:line' inside an installed package (site-packages / dist-packages)."""
    return source is not None and SITE_PACKAGES.search(source) is not None


def shown_source(source: str) -> str:
    """A source line as a reader can use it: relative to the project as recorded, a library file relative to its
    site-packages ('/venv/.../site-packages/transformers/x.py:3' -> 'transformers/x.py:3')."""
    source = source.replace("\\", "/")
    match = SITE_PACKAGES.search(source)
    return source[match.start(1):] if match else portable(source)


def project_source(source: str | None, fallback: str) -> str | None:
    """Where a result belongs in the project: the source line itself unless it lies in an installed package, else
    `fallback` (the nearest project frame 'file.py:line' the trace recorded, or the model file); None when that is
    not a project file either ('pkg.mod:factory'). A path outside the working directory stays absolute (the project
    was scanned from elsewhere)."""
    if source and not is_library_source(source):
        return source
    path, _, line = fallback.rpartition(":")
    path = path if line.isdigit() and path else fallback
    if path.endswith(".py") and not is_library_source(path):
        return fallback
    return None


# ------------------------------------------------------------------------------ estimate


def activity_rows(estimate: Estimate, _: Translate = str) -> tuple[ActivityRow, ...]:
    return tuple(ActivityRow(title=_(a.title), likely_text=days(a.person_days.likely),
                             range_text=days_range(a.person_days), basis=say(a.basis, _)) for a in estimate.activities)


def decision_rows(estimate: Estimate, _: Translate = str) -> tuple[DecisionRow, ...]:
    """The estimate's decisions, each with its operators and plan, in the reader's language (a Text through the
    catalog; a plain title, plan line or basis the catalog has; the rest as written)."""
    return tuple(DecisionRow(title=say(d.title, _), likely_text=days(d.person_days.likely),
                             range_text=days_range(d.person_days),
                             basis=basis_text(d.once, d.check, d.members, _) if any(d.members) else say(d.basis, _),
                             operators=d.operators, plan=tuple(say(line, _) for line in d.plan))
                 for d in estimate.decisions)


def origin_rows(estimate: Estimate, _: Translate = str) -> tuple[OriginRow, ...]:
    """Effort by origin, largest first; an upstream library says who would change its code."""
    total = estimate.total.likely
    rows = []
    for origin, effort in sorted(estimate.by_origin.items(), key=lambda item: (-item[1].likely, item[0])):
        who = origin_who(origin, PROJECT, MODEL_LEVEL, _)
        rows.append(OriginRow(origin=origin, who=who, likely_text=days(effort.likely), range_text=days_range(effort),
                              share_text=percent(share(effort.likely, total))))
    return tuple(rows)


# --------------------------------------------------------------------------- module roll-up


def group_repeats(by_module: Mapping[str, Effort], module_types: Mapping[str, str]
                  ) -> tuple[dict[str, Effort], dict[str, str]]:
    """Numbered siblings of one class ('layers.0' .. 'layers.31', all LlamaDecoderLayer) become one row
    'layers.[0-31]' carrying their summed effort, class 'x32 (LlamaDecoderLayer)'; their sub-modules are summed
    the same way ('layers.[0-31].self_attn'). Paths without such siblings are kept as they are."""
    siblings: dict[tuple[str, str], list[int]] = {}
    for path in by_module:
        parent, _, last = path.rpartition(".")
        if _NUMBERED.match(last):
            siblings.setdefault((parent, module_types.get(path, "")), []).append(int(last))
    ranges = {key: (f"[{min(numbers)}-{max(numbers)}]", len(numbers)) for key, numbers in siblings.items()
              if len(numbers) > 1}
    grouped: dict[str, Effort] = {}
    types: dict[str, str] = {}
    for path, effort in by_module.items():
        parts = path.split(".") if path else []
        count = 0
        for index, part in enumerate(parts):
            original = ".".join(path.split(".")[:index + 1])
            key = (original.rpartition(".")[0], module_types.get(original, ""))
            if _NUMBERED.match(part) and key in ranges:
                parts[index], count = ranges[key]
            elif index == len(parts) - 1:
                count = 0
        name = ".".join(parts)
        grouped[name] = grouped.get(name, Effort(0.0, 0.0, 0.0)) + effort
        kind = module_types.get(path, "")
        types[name] = f"x{count} ({kind})" if count else kind
    return grouped, types


# ------------------------------------------------------------------------------ action items


def _time_text(gain_us: float, days_likely: float | None, _: Translate = str) -> str:
    """'recovers ~12.00 ms per step (estimate), 6.00 ms per person-day' (the rate only when the item is costed)."""
    text = _("recovers ~%(time)s per step (estimate)") % {"time": us_text(gain_us)}
    return text + (_(", %(time)s per person-day") % {"time": us_text(gain_us / days_likely)} if days_likely else "")


def _by_time_recovered(items: list[tuple[ActionItem, float, float | None]]) -> tuple[ActionItem, ...]:
    """Items that recover time and are costed first, by time recovered per person-day; then those that recover time
    with no cost of their own, by time recovered; then the rest in their order (the time model's estimates)."""
    def key(entry: tuple[int, tuple[ActionItem, float, float | None]]) -> tuple:
        index, (_item, gain, days_likely) = entry
        if gain >= MIN_GAIN_US and days_likely:
            return (0, -gain / days_likely, index)
        if gain >= MIN_GAIN_US:
            return (1, -gain, index)
        return (2, 0.0, index)
    return tuple(item for _, (item, _g, _d) in sorted(enumerate(items), key=key))


MIN_GAIN_US = 0.05  # below this an item recovers nothing the time model can tell


def action_items(document: DocumentPart, findings: Sequence[Finding], _: Translate = str,
                 said: Mapping[str, str] | None = None) -> tuple[ActionItem, ...]:
    """One item per operator that needs work (not direct, or costed on its own), per source site that needs a hand
    edit or a port, and per performance finding, with what to do: the replacement, the route, the kernel to write,
    who owns the code; a model-level decision is one item (its operators none of their own). With a time model,
    ordered by the estimated time each recovers per person-day. `said` maps a reason's English message to the
    reader's language (reasons built from message ids)."""
    said = said or {}
    decisions = document.summary.decisions or ()
    items: list[tuple[ActionItem, float, float | None]] = [
        (ActionItem(kind="decision", subject=said.get(d.title) or _(d.title),
                    action="; ".join(said.get(line) or _(line) for line in d.plan),
                    days_text=_("%(days)s person-days") % {"days": days(_likely(d.person_days))}), 0.0, None)
        for d in decisions]
    decided = {key for d in decisions for key in d.operators}
    precision = {key for d in decisions if d.name == "precision" for key in d.operators}
    for op in document.operators:
        category = op.category
        if category in (None, Category.DIRECT) and op.cost != CostBasis.PER_OPERATOR:
            continue
        if op.cost == SOURCE_FINDING:  # the same call as a source site: its item is the site's, below
            continue
        note = op.cost_note or ""
        if op.op in decided and not any(f": {tier} " in note for tier in CHANGE_TIERS):
            continue  # the decision's item says what to do
        days_text = _("%(days)s person-days") % {"days": days(op.person_days.likely)} if op.person_days else ""
        if op.cost == PRICED_CHANGE or op.op in decided:
            action = said.get(note, note) or _("change one argument")
        elif op.replacement:
            action = _("use %(api)s") % {"api": op.replacement}
        elif category == Category.CUSTOM_DEV:
            action = _("write an NPU kernel (Ascend C) or change the model to avoid it")
        elif category == Category.PARAM_CONVERTED:
            reasons = op.reasons or (ReasonPart(),)
            reason = next((r for r in reasons if _decides(r.code)), reasons[0]).message
            action = said.get(reason, reason).rstrip(".") or _("convert its parameters")
        else:
            last = (op.reasons or (ReasonPart(),))[-1].message or ""
            action = _("check it numerically: %(reason)s") % {"reason": said.get(last, last).rstrip(".")}
        origin = op.origin or PROJECT
        owner = "" if origin == PROJECT else _(" (in %(origin)s: upstream code)") % {"origin": origin}
        gain = op.estimated_time.at_risk_us if op.estimated_time else 0.0
        likely = op.person_days.likely if op.person_days else None
        items.append((ActionItem(kind=category or "unclassified", subject=op.op, action=action + owner,
                                 days_text=days_text, time_text=_time_text(gain, likely, _) if gain >= MIN_GAIN_US
                                 else ""), gain, likely))
    items += [(item, 0.0, None) for item in _site_actions(document.source_findings, _)]
    times = [f.time for f in document.findings]
    book = shipped_patterns()
    for finding, time in zip(findings, times or [None] * len(findings), strict=False):
        impact_only = book.criterion_of(finding.kind) == IMPACT  # patterns.toml: a share of compute, fixes nothing
        if impact_only or (finding.kind == "mixed-precision" and set(finding.ops) <= precision):
            continue  # no work to do; the precision decision's item covers its operators
        # the effect's first clause says what to do; the rest says how it moves the score (in the findings table)
        advice = re.split(r":\s+(?:performance|functional|ecosystem)\.", _(finding.effect), maxsplit=1)[0]
        action = _("adopt %(api)s") % {"api": finding.npu_api} if finding.npu_api else advice
        gain = time.gain_us if time else 0.0
        items.append((ActionItem(kind=finding.kind, subject=finding_title(finding, _), action=action, days_text="",
                                 time_text=_time_text(gain, None, _) if gain >= MIN_GAIN_US else ""), gain, None))
    return _by_time_recovered(items)


def _likely(effort: EffortPart | None) -> float:
    return effort.likely if effort else 0.0


def finding_title(finding: Finding, _: Translate = str) -> str:
    """A finding's title in the reader's language (its message through the catalog; a finding built without one
    reads as written)."""
    return finding.message.text(_) if finding.message else finding.title


def _decides(code: str) -> bool:
    """A reason code that can make an operator non-direct (the reason registry): the one an action names."""
    record = REASONS.get(code)
    return record is not None and record.decides in (Category.PARAM_CONVERTED, Category.CUSTOM_DEV)


SITES_NAMED = 3  # sites named per action item of the source scan; the count says how many more


def _site_actions(sites: Sequence[SitePart], _: Translate = str) -> list[ActionItem]:
    """The source scan's sites that are work (not direct, not notes), one item per subject, kind, category and route
    (a tree calling DataParallel in 40 files is one edit to learn, 40 to make): the first sites named, the count and
    the summed person-days."""
    groups: dict[tuple[str, str, str, str], list[SitePart]] = {}
    for site in sites:
        if site.category == Category.DIRECT or not _likely(site.person_days):
            continue
        groups.setdefault((site.category, site.subject, site.kind, site.npu_route), []).append(site)
    items = []
    for (category, subject, _kind, route), grouped in groups.items():
        where = ", ".join(f"{s.file}:{s.line}" for s in grouped[:SITES_NAMED])
        if len(grouped) > SITES_NAMED:
            where += _(" and %(n)d more") % {"n": len(grouped) - SITES_NAMED}
        total = sum(_likely(s.person_days) for s in grouped)
        items.append(ActionItem(kind=category, subject=_("%(subject)s at %(where)s") % {"subject": subject,
                                                                                         "where": where}
                                if len(grouped) > 1 else f"{where} {subject}",
                                action=say(route, _).rstrip(".") or _("no NPU route: rewrite it"),
                                days_text=_("%(days)s person-days") % {"days": days(total)}))
    return items


def wrap(text: str, width: int, indent: str = "") -> list[str]:
    """Wrap at spaces; a word longer than a line (a qualified name) breaks after '.' or '::', so
    'transformers.models.llama.modeling_llama.LlamaAttention' stays readable at 80 columns. Lines after the first
    start with `indent`."""
    room = max(10, width - len(indent))
    pieces: list[tuple[str, bool]] = []  # (text, glued to the next piece: no space between)
    for word in text.split():
        parts = [p for p in re.split(r"(?<=\.)|(?<=::)", word) if p] if len(word) > room else [word]
        pieces += [(part, i < len(parts) - 1) for i, part in enumerate(parts)]
    lines: list[str] = []
    line, glued = "", False
    for piece, glue_next in pieces:
        candidate = f"{line}{piece}" if glued or not line else f"{line} {piece}"
        if line and len(candidate) > room:
            lines.append(line)
            candidate = piece
        while len(candidate) > room:  # a piece longer than a line: cut it
            lines.append(candidate[:room])
            candidate = candidate[room:]
        line, glued = candidate, glue_next
    if line:
        lines.append(line)
    return [(indent if i else "") + piece for i, piece in enumerate(lines)]
