"""Options several commands share (the CI gates, templates, --debug) and the Policy they build."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..ci.policy import FAIL_ON, Policy

FailOn = Annotated[list[str] | None, typer.Option(
    "--fail-on", help="CI gate (repeatable): exit 3 when an operator is 'custom-dev', 'param-converted' (or worse) "
                      "or 'unknown' to the knowledge base.")]
MaxPersonDays = Annotated[float | None, typer.Option(
    "--max-person-days", min=0, help="CI gate: exit 3 when the likely effort exceeds N person-days (with a baseline "
                                     "and --fail-on-new: when it grows by more than N).")]
MaxRisk = Annotated[int | None, typer.Option(
    "--max-risk", min=1, max=5, help="CI gate: exit 3 when an operator's risk exceeds STARS (1-5).")]
Templates = Annotated[Path | None, typer.Option(help="A directory of report templates overriding the shipped ones.")]
Debug = Annotated[bool, typer.Option(help="Show tracebacks.")]
Lang = Annotated[str | None, typer.Option(
    "--lang", help="Language of the human formats (terminal, md, html, step summary): zh-CN or en (default: from "
                   "LANGUAGE / LC_ALL / LC_MESSAGES / LANG, English when unknown). JSON, CSV, SARIF, JUnit stay "
                   "English.")]


def report_language(value: str | None) -> str:
    """--lang resolved (or the locale's language when not given); an unknown language is a usage error."""
    from ..errors import ReportError
    from ..report.i18n import resolve_language

    try:
        return resolve_language(value)
    except ReportError as exc:
        raise typer.BadParameter(str(exc), param_hint="'--lang'") from exc


def build_policy(fail_on: list[str] | None, max_person_days: float | None, max_risk: int | None) -> Policy:
    """The CI gates from the command line; an unknown --fail-on value is a usage error."""
    for value in fail_on or ():
        if value not in FAIL_ON:
            raise typer.BadParameter(f"{value!r}: expected one of {', '.join(FAIL_ON)}", param_hint="'--fail-on'")
    return Policy(fail_on=tuple(dict.fromkeys(fail_on or ())), max_person_days=max_person_days, max_risk=max_risk)


CAST_DTYPES = ("float16", "bfloat16", "float32")  # what --dtype accepts (a model is assessed in one of these)


def dtype_value(value: str, option: str, accepted: tuple[str, ...] | None = None) -> str:
    """A dtype option's value as its canonical name ('fp16' -> 'float16'); anything not in `accepted` (default:
    every dtype opassess knows) is a usage error listing exactly what is accepted, aliases included."""
    from ..load import DTYPES

    names = accepted or tuple(sorted(set(DTYPES.values())))
    canonical = DTYPES.get(value.lower().removeprefix("torch."))
    if canonical not in names:
        listed = ", ".join(name + (f" ({', '.join(aliases)})" if aliases else "")
                           for name in names
                           for aliases in [[k for k, v in DTYPES.items() if v == name and k != name]])
        raise typer.BadParameter(f"{value!r}: expected one of {listed}", param_hint=f"'{option}'")
    return canonical
