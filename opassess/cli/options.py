"""Options several commands share (the CI gates, templates, --debug) and the Policy they build."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..ci.policy import FAIL_ON, Policy

FailOn = Annotated[list[str] | None, typer.Option(
    "--fail-on", help="CI gate (repeatable): exit 3 when an operator is 'custom-dev', 'param-converted' (or worse) "
                      "or 'unknown' to the knowledge base, or on a 'graph-break' of the --graph-backend back-end.")]
GraphModeOption = Annotated[str, typer.Option(
    "--graph-mode", help="Graph-mode readiness (NPU inductor, npugraph_ex, torchair GE): 'capture' finds the breaks "
                         "in the captured ATen calls (host syncs, data-dependent sizes); 'dynamo' also runs "
                         "torch._dynamo on the model in the worker (Python-level breaks; slower); 'off' skips it.")]
NoGraphMode = Annotated[bool, typer.Option("--no-graph-mode", help="Skip the graph-mode analysis (--graph-mode off).")]
GraphBackend = Annotated[str, typer.Option(
    "--graph-backend", help="The graph back-end --fail-on graph-break gates and the graph effort item is for: "
                            "inductor, npugraph_ex or ge.")]
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


def build_policy(fail_on: list[str] | None, max_person_days: float | None, max_risk: int | None,
                 graph_backend: str = "inductor") -> Policy:
    """The CI gates from the command line; an unknown --fail-on value is a usage error."""
    for value in fail_on or ():
        if value not in FAIL_ON:
            raise typer.BadParameter(f"{value!r}: expected one of {', '.join(FAIL_ON)}", param_hint="'--fail-on'")
    return Policy(fail_on=tuple(dict.fromkeys(fail_on or ())), max_person_days=max_person_days, max_risk=max_risk,
                  graph_backend=graph_backend)


def graph_mode_value(mode: str, off: bool, backend: str, fail_on: list[str] | None) -> str:
    """--graph-mode resolved with --no-graph-mode; unknown values, and a graph-break gate with the analysis off, are
    usage errors."""
    from ..graphmode import BACKENDS, GRAPH_MODES

    if mode not in GRAPH_MODES:
        raise typer.BadParameter(f"{mode!r}: expected one of {', '.join(GRAPH_MODES)}", param_hint="'--graph-mode'")
    if backend not in BACKENDS:
        raise typer.BadParameter(f"{backend!r}: expected one of {', '.join(BACKENDS)}", param_hint="'--graph-backend'")
    mode = "off" if off else mode
    if mode == "off" and "graph-break" in (fail_on or ()):
        raise typer.BadParameter("needs the graph-mode analysis (drop --no-graph-mode / --graph-mode off)",
                                 param_hint="'--fail-on graph-break'")
    return mode


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
