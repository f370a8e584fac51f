"""`opassess kb ...` and `opassess explain CODE`: parse the arguments, ask the knowledge base, print its text."""
from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Annotated

import typer

from ..kb.describe import format_error_list, format_errors_in_text, format_import, format_summary
from ..kb.store import load_kb, user_kb_dir
from ..kb.wheel_import import import_wheel
from .errors import reporting_errors

kb_app = typer.Typer(help="Show or refresh the Ascend knowledge base.", no_args_is_help=False, rich_markup_mode=None,
                     invoke_without_command=True)

KbDir = Annotated[Path | None, typer.Option("--kb-dir", help="Knowledge-base folder or imported overlay to use.")]


def _errors() -> AbstractContextManager[None]:
    """The CLI's error reporting: one line and an exit code."""
    return reporting_errors(False)


# ------------------------------------------------------------------ commands


@kb_app.callback()
def kb_summary(ctx: typer.Context, kb_dir: KbDir = None) -> None:
    """Show the knowledge base's version, provenance and counts."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = kb_dir  # `opassess kb --kb-dir DIR show NAME` means the same as `kb show NAME --kb-dir DIR`
        return
    with _errors():
        typer.echo(format_summary(load_kb(kb_dir)))


@kb_app.command("show")
def kb_show(
    ctx: typer.Context,
    name: Annotated[list[str], typer.Argument(
        help="torch.nn.Conv2d, aten::lgamma, npu_fusion_attention, torchvision::nms, flash_attn.flash_attn_func, "
             "torch.cuda.synchronize, tl.atomic_add ...; or `device PRODUCT` (A2, A3, 950, a variant name): the "
             "device profile the time model uses; or `versions`: the torch / torch_npu / CANN releases.")],
    torch_npu: Annotated[str | None, typer.Option(
        "--torch-npu", help="Torch/torch_npu version (default: newest in the facts).")] = None,
    kb_dir: KbDir = None,
) -> None:
    """Show one entry of the knowledge base, and what the source-level facts say about it (kernel libraries, CUDA
    APIs, transfer_to_npu's patches, triton-ascend's limits)."""
    from ..classify.decompose import decomposition  # imports the tracer: only `kb show` needs it
    from ..source.describe import format_entry_with_source

    if len(name) == 2 and name[0] == "device":
        from ..perf.describe import format_device

        with _errors():
            typer.echo(format_device(load_kb(kb_dir or ctx.obj), name[1]))
        return
    if name == ["versions"]:
        from ..kb.releases import format_releases, load_releases

        with _errors():
            typer.echo(format_releases(load_releases((kb_dir or ctx.obj) and load_kb(kb_dir or ctx.obj).directory)))
        return
    if len(name) != 1:
        raise typer.BadParameter("expected one NAME, `device PRODUCT` or `versions`", param_hint="'NAME'")
    with _errors():
        typer.echo(format_entry_with_source(load_kb(kb_dir or ctx.obj), name[0], torch_npu, decomposition))


@kb_app.command("import")
def kb_import(
    ctx: typer.Context,
    wheel: Annotated[Path, typer.Argument(
        help="A downloaded torch-npu wheel (pip download --no-deps torch-npu==X).")],
    dest: Annotated[Path | None, typer.Option(
        "--dest", help="Overlay folder to write (default: the user KB folder).")] = None,
) -> None:
    """Refresh the kernel facts from a torch-npu wheel (read as a zip, never imported)."""
    if ctx.obj is not None:
        raise typer.BadParameter("reads no knowledge base; --dest names the folder to write", param_hint="'--kb-dir'")
    with _errors():
        typer.echo(format_import(import_wheel(wheel, dest if dest is not None else user_kb_dir())))


def explain(
    code: Annotated[list[str] | None, typer.Argument(
        help="ACL_ERROR_* name, its number (107000), torch_npu's ERRxxyyy, a CANN E-code (EZ9999), a pasted log "
             "line or block (quoted; `-` or nothing reads standard input), or one of opassess's own reason codes "
             "(param-limit, no-kernel, ...: docs/reasons.md).")] = None,
    list_codes: Annotated[bool, typer.Option("--list", help="List every known code and the code families.")] = False,
) -> None:
    """Explain Ascend error codes (cause and remedy), alone or picked out of a pasted log, or a reason code of a
    report (what it means and what it can decide)."""
    from ..reasons import REASONS, format_reason

    with _errors():
        if list_codes:
            typer.echo(format_error_list(load_kb()))
            return
        text = " ".join(code or [])
        if text.strip() in REASONS:
            typer.echo(format_reason(REASONS[text.strip()]))
            return
        if not text.strip() or text.strip() == "-":
            text = sys.stdin.read()
        typer.echo(format_errors_in_text(load_kb(), text))
