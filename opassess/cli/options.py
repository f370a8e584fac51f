"""Options several commands share (the CI gates, templates, --debug) and the Policy they build."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperOption

from ..ci.policy import FAIL_ON, PERCENTILES, Policy
from ..errors import KnowledgeBaseError
from ..kb.products import shipped


def target_help() -> str:
    """--target's help, from the product vocabulary (data/products.toml): each product's short aliases and its name,
    so a new product is one [[product]] entry, never a help text kept in step by hand."""
    try:
        products = shipped().items
    except KnowledgeBaseError as exc:  # the shipped file broken: every command still starts, and says why
        return f"Ascend product assessed against (the product list could not be read: {exc})."
    aliases = ", ".join("/".join(a for a in p.aliases if " " not in a) or p.kernel for p in products)
    names = ", ".join(f"'{p.name}'" for p in products)
    return f"Ascend product (or an alias: {aliases}) assessed against: {names}."


FailOn = Annotated[list[str] | None, typer.Option(
    "--fail-on", help="CI gate (repeatable): exit 3 when an operator is 'custom-dev', 'param-converted' (or worse) "
                      "or 'unknown' to the knowledge base, or on a 'graph-break' of the --graph-backend back-end; "
                      "'unreached': a non-direct operator present in the code the run entered but not reached.")]
GraphModeOption = Annotated[str, typer.Option(
    "--graph-mode", help="Graph-mode readiness (NPU inductor, npugraph_ex, torchair GE): 'capture' finds the breaks "
                         "in the captured ATen calls (host syncs, data-dependent sizes); 'dynamo' also runs "
                         "torch._dynamo on the model in the worker (Python-level breaks; slower); 'off' skips it.")]
NoGraphMode = Annotated[bool, typer.Option("--no-graph-mode", help="Skip the graph-mode analysis (--graph-mode off).")]
NoDrive = Annotated[bool, typer.Option(
    "--no-drive", help="Capture the plain run: do not drive the branches random weights skip (detector score "
                       "thresholds at 0, every MoE expert routed; driven by default and said in the report).")]
GraphBackend = Annotated[str, typer.Option(
    "--graph-backend", help="The graph back-end --fail-on graph-break gates and the graph effort item is for: "
                            "inductor, npugraph_ex or ge.")]
MaxPersonDays = Annotated[float | None, typer.Option(
    "--max-person-days", min=0, help="CI gate: exit 3 when the estimated effort's P50 (the headline) exceeds N "
                                     "person-days (with a baseline and --fail-on-new: when P50 grows by more than N).")]
MaxPersonDaysAt = Annotated[str, typer.Option(
    "--max-person-days-at", help="The percentile of the simulated effort --max-person-days gates: P10, P50 (the "
                                 "headline, default) or P90.")]
MaxRisk = Annotated[int | None, typer.Option(
    "--max-risk", min=1, max=5, help="CI gate: exit 3 when an operator's risk exceeds STARS (1-5).")]
def profile_help() -> str:
    """--profile's help, from the shipped profiles (weights.toml and each profiles/NAME.toml): each named with the
    summary its file states (`# Profile "NAME": ...`), so a new profile file needs no help edit."""
    from ..resources import shipped_path
    from ..score.weights.load import profile_names, profile_path

    parts = []
    for name in profile_names():
        lines = (profile_path(name) or shipped_path("weights.toml")).read_text(encoding="utf-8").splitlines()
        summary = next((line.split(": ", 1)[1] for line in lines if line.startswith(f'# Profile "{name}": ')), "")
        parts.append(f"'{name}' ({summary.rstrip('.')})" if summary else f"'{name}'")
    listed = " or ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)
    return f"Shipped weights profile: {listed}; --weights applies on top."


CAPTURE_HELP = "Capture methods to try, in order, comma-separated."  # ScanCommand names them when the help is shown


def capture_help() -> str:
    """--capture's help, from the capture registry: the methods in their default order, and the large-model order's
    first (each method's registered rank), so a new method is one @register_capture, never a help text to edit."""
    from ..trace.methods import LARGE_MODEL_PARAMETERS, capture_order

    small, large = capture_order(0), capture_order(LARGE_MODEL_PARAMETERS + 1)
    return (f"{CAPTURE_HELP.rstrip('.')}: {', '.join(small)} (default: that order; {large[0]} first above "
            f"{LARGE_MODEL_PARAMETERS:.0e} parameters).".replace("e+0", "e"))


class ScanCommand(TyperCommand):
    """`opassess scan`, whose --capture help is written from the capture registry when the help is shown: the
    registry's modules import torch, which no command's start-up (nor any other command's help) should pay for."""

    def format_help(self, *args: Any) -> None:  # (ctx, formatter): click's own, which typer vendors from 0.2x
        for param in self.params:
            if isinstance(param, TyperOption) and param.name == "capture":
                param.help = capture_help()
        super().format_help(*args)


# Options the scan commands share, typed once (`opassess scan` and `opassess source`).
Target = Annotated[str, typer.Option("--target", help=target_help())]
Weights = Annotated[Path | None, typer.Option(
    help="A weights file whose keys override the profile's (only the keys it changes are needed; [source] prices "
         "source sites).")]
Profile = Annotated[str, typer.Option(help=profile_help())]
Baseline = Annotated[Path | None, typer.Option(
    help="A JSON report of an earlier scan: report operators and source sites added, removed and re-classified and "
         "the change in effort.")]
Label = Annotated[str | None, typer.Option(
    help="A name for the model (or project), written in its JSON report: a --baseline or `opassess diff` matches "
         "reports by it when both carry one (otherwise by factory and class, never by path).")]
TorchNpu = Annotated[str | None, typer.Option(
    "--torch-npu", help="torch / torch_npu version assessed against (default: the newest in the knowledge base).")]
KbFolder = Annotated[Path | None, typer.Option(
    "--kb", help="A knowledge-base directory to use instead of the shipped one.")]
FailOnNew = Annotated[bool, typer.Option(
    "--fail-on-new", help="Apply the CI gates to what changed since --baseline only.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
PatchFile = Annotated[Path | None, typer.Option(
    "--patch", help="Write a unified diff of the safe, mechanical rewrites of the project's own files here ('cuda' -> "
                    "'npu', .cuda() -> .npu(), torch.cuda.amp -> torch.npu.amp, 'nccl' -> 'hccl', flash-attn calls -> "
                    "npu_fusion_attention with their arguments mapped, apex fused optimizers -> torch_npu.optim, "
                    "topk(sorted=False) -> sorted=True where nothing reads the order of its result), each change "
                    "commented with the finding it resolves; apply with `git apply` or `patch -p1`.",
    metavar="FILE.diff")]
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
                 graph_backend: str = "inductor", percentile: str = "P50") -> Policy:
    """The CI gates from the command line; an unknown --fail-on value or percentile is a usage error."""
    percentile = percentile.upper()
    if percentile not in PERCENTILES:
        raise typer.BadParameter(f"{percentile!r}: expected one of {', '.join(PERCENTILES)}",
                                 param_hint="'--max-person-days-at'")
    for value in fail_on or ():
        if value not in FAIL_ON:
            raise typer.BadParameter(f"{value!r}: expected one of {', '.join(FAIL_ON)}", param_hint="'--fail-on'")
    return Policy(fail_on=tuple(dict.fromkeys(fail_on or ())), max_person_days=max_person_days, max_risk=max_risk,
                  graph_backend=graph_backend, percentile=percentile)


def graph_mode_value(mode: str, off: bool, fail_on: list[str] | None) -> str:
    """--graph-mode resolved with --no-graph-mode; the two contradicting each other, and a graph-break gate with the
    analysis off, are usage errors (a value graph mode does not know, or a --graph-back-end for an analysis that is
    off, ScanOptions refuses)."""
    if off and mode == "dynamo":
        raise typer.BadParameter("contradicts --no-graph-mode (drop one of them)", param_hint="'--graph-mode dynamo'")
    mode = "off" if off else mode
    if mode == "off" and "graph-break" in (fail_on or ()):
        raise typer.BadParameter("needs the graph-mode analysis (drop --no-graph-mode / --graph-mode off)",
                                 param_hint="'--fail-on graph-break'")
    return mode


def input_shapes(values: list[str] | None) -> tuple[tuple[int, ...], ...]:
    """--input-shape values parsed; a malformed one is a usage error."""
    from ..errors import ModelLoadError
    from ..load import parse_shape

    try:
        return tuple(parse_shape(s) for s in values or ())
    except ModelLoadError as exc:
        raise typer.BadParameter(str(exc).removeprefix("--input-shape "), param_hint="'--input-shape'") from exc


def check_values(capture: str | None, profile: str) -> None:
    """--capture and --profile name only what exists (usage errors, exit 2, listing what does)."""
    from ..score.weights.load import profile_names

    if profile not in profile_names():
        raise typer.BadParameter(f"{profile!r}: expected one of {', '.join(profile_names())}",
                                 param_hint="'--profile'")
    if capture:
        from ..errors import TraceError
        from ..trace.methods import check_methods

        try:
            check_methods(tuple(m.strip() for m in capture.split(",") if m.strip()))
        except TraceError as exc:
            raise typer.BadParameter(str(exc), param_hint="'--capture'") from exc


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


Route = Annotated[str | None, typer.Option(
    "--route", help="Also check a route beyond eager training: 'onnx' (export with torch.onnx in the worker, judge "
                    "each node against the ONNX -> CANN map; pip install 'opassess[onnx]') or 'vllm-ascend' (the "
                    "architecture and --quant against the serving facts for --target).")]
Opset = Annotated[int | None, typer.Option(
    "--opset", help="With --route onnx: the ONNX opset to export at, 11 to 18 (ATC takes 11 or later; default "
                    "17).")]
Exporter = Annotated[str | None, typer.Option(
    "--exporter", help="With --route onnx: auto (the dynamo exporter where it works, else TorchScript), dynamo or "
                       "torchscript (default auto).")]
Quant = Annotated[str | None, typer.Option(
    "--quant", help="With --route vllm-ascend: a quantisation scheme (w8a8, w8a8_dynamic, w4a8, w4a16, mxfp8, "
                    "...) to check against the chip.")]


def route_values(route: str | None, opset: int | None, exporter: str | None, quant: str | None) -> dict:
    """The route options as ScanOptions fields, which check their values and --quant's route; what only the command
    line knows is checked here (usage errors with the reason): --opset or --exporter given without --route onnx, and
    an opset ATC does not take (below 11 or above 18)."""
    from ..errors import UsageError
    from ..routes.onnx_judge import DEFAULT_OPSET, check_opset

    for value, flag in ((opset, "--opset"), (exporter, "--exporter")):
        if value is not None and route != "onnx":
            raise typer.BadParameter("needs --route onnx", param_hint=f"'{flag}'")
    opset = DEFAULT_OPSET if opset is None else opset
    if route == "onnx":
        try:
            check_opset(opset)
        except UsageError as exc:
            raise typer.BadParameter(str(exc).split(": ", 1)[1], param_hint="'--opset'") from exc
    return {"route": route, "opset": opset, "exporter": exporter or "auto", "quant": quant or ""}
# A Hugging Face model folder (or its config.json) as the target: opassess/huggingface.py.
Task = Annotated[str | None, typer.Option(
    "--task", help="For a Hugging Face model folder or config.json: the transformers Auto class to build, causal-lm, "
                   "seq-cls, masked-lm, seq2seq-lm, image-classification, image-text-to-text, speech-seq2seq, ctc or "
                   "base (default: the config's architectures).")]
SeqLen = Annotated[int | None, typer.Option(
    "--seq-len", min=1, help="For a Hugging Face model folder: tokens (or audio samples) of the example inputs "
                             "(default: 2048, at most the config's max_position_embeddings).")]
BatchSize = Annotated[int, typer.Option(
    "--batch-size", min=1, help="For a Hugging Face model folder: the example inputs' batch size.")]
TrustRemoteCode = Annotated[bool, typer.Option(
    "--trust-remote-code", help="For a Hugging Face model folder whose config names its own modelling code "
                                "(auto_map): run that code (in the worker) to build the model.")]
