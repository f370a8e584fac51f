"""The report's sentences about the assessment as a whole, in the reader's language: the evidence header, what was
captured, the headline and its band, the profile's note, the model-level activities and who changes each origin.

The JSON document keeps its English text; these build the human formats' version from the same facts, through the
catalog (opassess.report.i18n). Titles that live in data files (weights.toml's activity titles) are listed here so
`make messages` extracts them; a title not listed reads as written.
"""
from __future__ import annotations

from collections.abc import Callable

from ..errors import KnowledgeBaseError
from ..kb import products
from ..messages import parsed, say
from ..records import Capture, Finding
from ..trace.driver import DEVICE_NOTES
from ..trace.train.step import STEP_NOTES
from ..trace.upcast import UPCAST_NOTE
from .i18n import N_
from .text import days

Translate = Callable[[str], str]
SEPARATOR_SEMICOLON = N_("; ")  # between the parts of a list that have commas of their own (Chinese '；')

# weights.toml's [activities.*] titles and the shipped profiles' (shown translated; the JSON keeps them)
ACTIVITY_TITLES = (N_("environment bring-up"), N_("validation of direct operators"), N_("accuracy alignment"),
                   N_("performance tuning"), N_("loss-curve alignment"),
                   N_("mixed-precision strategy and loss scaling"),
                   N_("optimizer and checkpoint conversion"), N_("gradient and optimizer memory"),
                   N_("distributed bring-up"),
                   # weights.toml's [activities.*] notes (said after the activity's basis)
                   N_("protocol: the same seeds (3), data order and initial checkpoint on both sides, deterministic "
                      "algorithms on; 1,000 steps compared every 10; relative loss gap under 0.02 (bf16/fp16: "
                      "0.05), gradient norm gap under 0.05"))
# weights.toml's [decisions.*] titles (placed into the decisions' titles and cost notes, said translated)
DECISION_TITLES = (N_("precision plan"), N_("kernel check on the target"), N_("float64 computation"))


def evidence_text(target: str, _: Translate) -> str:
    """The header's statement of the evidence hierarchy for a target product ('' for a product not shipped)."""
    try:
        product = products.shipped().resolve(target)
    except KnowledgeBaseError:
        return ""
    if product.api_page:
        return _("Verdicts from: kernel facts (CANN aclnn docs) for %(product)s, then the torch_npu API page, then the "
                 "dispatcher.") % {"product": product.name}
    return _("Verdicts from: kernel facts (CANN aclnn docs) for %(product)s, then the torch_npu API page (which has no "
             "column for it), then the dispatcher.") % {"product": product.name}


def capture_step_text(capture: Capture, _: Translate) -> str:
    """'forward pass only (...)', or 'training step (forward, backward, optimizer): <what it ran>'."""
    if not capture.training:
        return _("forward pass only (eval mode; --train captures a training step)")
    text = _("training step (forward, backward, optimizer)")
    if not capture.step_note:
        return text
    parts = (say(parsed(part, STEP_NOTES), _) for part in capture.step_note.split("; "))
    return f"{text}: {_(SEPARATOR_SEMICOLON).join(parts)}"


def device_note_text(note: str, _: Translate) -> str:
    """Why the CPU was used (the worker's English, trace/driver.DEVICE_NOTES) in the reader's language, torch's error
    quoted as it is."""
    return " ".join(say(parsed(part, (*DEVICE_NOTES, UPCAST_NOTE)), _) for part in note.split("\n"))


def headline_text(p10: float, p50: float, p90: float, _: Translate) -> str:
    """'4.3 person-days (P10-P90 3.4-5.6)' in the reader's language (the JSON's summary.headline, translated)."""
    return _("%(p50)s person-days (P10-P90 %(p10)s-%(p90)s)") % {"p50": days(p50), "p10": days(p10), "p90": days(p90)}


def note_text(text: str | None, _: Translate) -> str:
    """A note of the JSON summary (the band's meaning, the profile's assumptions) translated when the catalog has it
    (a calibrated profile's own note reads as its author wrote it)."""
    return _(text) if text else ""


def origin_who(origin: str, project: str, model_level: str, _: Translate) -> str:
    """Who would change the code of one origin of effort: the team, or an upstream library's maintainers."""
    if origin == project:
        return _("the team: the project's own code")
    if origin == model_level:
        return _("the team: model-level activities")
    return _("upstream: %(origin)s's maintainers (or a local patch / a torch_npu replacement around the call)") % {
        "origin": origin}


def call_text(finding: Finding, _: Callable[[str], str] = str) -> str:
    """The replacement call a finding renders, with what goes with it ("first: ...", "fails: ...") in the reader's
    language; "" when the finding names no call."""
    if not finding.call:
        return ""
    return "; ".join([finding.call, *(say(note, _) for note in finding.call_notes)])
