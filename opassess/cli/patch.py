"""`--patch FILE.diff` on `scan` and `source`: the safe rewrites of the project's files (source/patch.py), written."""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import typer


def _root(document: Mapping[str, Any], candidates: Sequence[Path]) -> Path:
    """The folder the findings' paths are relative to: the report's source root, else the first folder given (or the
    folder of a file given), or their common parent, that holds every Python file the findings name."""
    from ..source.patch import topk_findings

    findings = [f for f in [*(document.get("source_findings") or ()), *topk_findings(document.get("operators") or ())]
                if f["file"].endswith(".py")]
    source = document.get("source") or {}
    roots = [Path(source["root"])] if source.get("root") else []
    folders = [c if c.is_dir() else c.parent for c in candidates]
    # a --source folder beside the model's: the scan's paths are relative to their common parent (source/scan.py),
    # which the report leaves out when it is a folder of this machine's outside any project ("/", "/home")
    roots += [*folders, *([Path(os.path.commonpath(folders))] if folders else [])]
    return next((r for r in roots if all((r / f["file"]).is_file() for f in findings)), roots[0] if roots
                else Path.cwd())


def write_patch(document: Mapping[str, Any], destination: Path, candidates: Sequence[Path], quiet: bool) -> None:
    """Write the unified diff (empty when nothing is safe to rewrite) and say how many sites it covers."""
    from ..output import write_output
    from ..source.facts import load_source_facts
    from ..source.patch import project_patch

    text, done, left = project_patch(document.get("source_findings") or (), _root(document, candidates),
                                     load_source_facts(), document.get("operators") or ())
    write_output(text, destination, "the patch")
    if not quiet:
        typer.echo(f"opassess: wrote {destination}: {done} site(s) rewritten, {left} left as advice", err=True)
