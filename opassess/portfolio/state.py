"""Resume state: which models of an interrupted run finished, and with which options (portfolio.state.json).

Each finished model's reports are written to the output directory as soon as it finishes, and the state file
records which targets are done with the options they were scanned with, so an interrupted run can `resume`
without rescanning them. Failed models are retried on resume.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path

from ..ci.snapshot import read_snapshot
from ..datafile import read_bytes, read_json
from ..errors import OpassessError, ReportError
from .records import ModelResult, PortfolioOptions
from .targets import STATE_FILE

STATE_VERSION = 1


def fingerprint(options: PortfolioOptions, target: str) -> str:
    """What a finished result depends on: the scan options, the formats, the bytes of the model file and of the
    weights file (the same --weights path with other numbers gives other estimates), and the policy when a
    policy that gates the run (a resumed run under other gates scans again)."""
    scan = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(replace(options.scan, target="")).items()
            if k != "extra"}
    text = json.dumps({"scan": scan, "formats": sorted(options.formats),
                       "policy": asdict(options.policy),
                       "file": _content_hash(Path(target)),
                       "weights": _content_hash(options.scan.weights) if options.scan.weights else None},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _content_hash(path: Path) -> str:
    """sha256 of a file's bytes; '' when it is not a readable regular file (a module:factory target; a FIFO, which
    the scan itself refuses, is never opened for reading here)."""
    try:
        return hashlib.sha256(read_bytes(path, "model file")).hexdigest()
    except (OSError, OpassessError):
        return ""


def report_digest(text: str) -> str:
    """sha256 of a report as write_output writes it (UTF-8, newlines untouched)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _unchanged(out_dir: Path, reports: list[str], digests: object) -> bool:
    """Every report reused is the one written: its bytes still have the sha256 the state recorded."""
    if not isinstance(digests, dict) or set(digests) != set(reports):
        return False
    for name in reports:
        if Path(name).name != name:
            return False
        try:
            data = read_bytes(out_dir / name, "report", ReportError)
        except ReportError:
            return False
        if hashlib.sha256(data).hexdigest() != digests[name]:
            return False
    return True


def read_state(out_dir: Path) -> dict[str, object]:
    """The finished models of the state file (target -> entry, each checked by `resumable`), {} without one."""
    path = out_dir / STATE_FILE
    if not path.exists():
        return {}
    state = read_json(path, "state of the interrupted run", ReportError)
    if not isinstance(state, dict) or state.get("state_version") != STATE_VERSION:
        raise ReportError(f"{path}: not a portfolio state file this opassess reads (delete it to scan every model "
                          f"again)")
    models = state.get("models", {})
    if not isinstance(models, dict):
        raise ReportError(f"{path}: 'models' is {type(models).__name__}, not an object of finished models (delete "
                          f"the file to scan every model again)")
    return models


def _state_text(models: Mapping[str, object]) -> str:
    return json.dumps({"state_version": STATE_VERSION, "models": models}, indent=2, sort_keys=True) + "\n"


def write_state(out_dir: Path, models: Mapping[str, object]) -> None:
    from ..output import write_output

    write_output(_state_text(models), out_dir / STATE_FILE)


def check_written(out_dir: Path, models: Mapping[str, object], digests: Mapping[str, Mapping[str, str]]) -> None:
    """After the models ran: every report this run wrote, and the state file, still hold the bytes this process
    wrote (`digests`: target -> report name -> sha256, kept in memory, never read from -o). A file a model changed
    in -o is a ReportError naming it, and the state file is removed, so that no later --resume trusts what the model
    wrote there."""
    expected = {name: digest for names in digests.values() for name, digest in names.items()}
    expected[STATE_FILE] = report_digest(_state_text(models))
    for name, digest in sorted(expected.items()):
        try:
            now = hashlib.sha256(read_bytes(out_dir / name, "report", ReportError)).hexdigest()
        except ReportError:
            now = ""
        if now != digest:
            (out_dir / STATE_FILE).unlink(missing_ok=True)
            raise ReportError(f"{out_dir / name}: changed while the models ran (something other than opassess wrote "
                              f"into -o): the resume state was removed; scan again (with --sandbox on, a model "
                              f"cannot write there)")


def resumable(entry: object, fingerprint: str, out_dir: Path) -> ModelResult | None:
    """A finished result from the state file, when it is 'ok', scanned the same way, and its JSON report reads."""
    if not isinstance(entry, dict) or entry.get("status") != "ok" or entry.get("fingerprint") != fingerprint:
        return None
    name, target, reports, seconds = (entry.get(key) for key in ("name", "target", "reports", "seconds"))
    # An entry of another shape (edited by hand, or by a model: the folder is writable) is scanned again.
    if not (isinstance(name, str) and name and Path(name).name == name and isinstance(target, str)
            and isinstance(reports, list | tuple) and all(isinstance(r, str) for r in reports)
            and isinstance(seconds, int | float) and not isinstance(seconds, bool)):
        return None
    if not _unchanged(out_dir, list(reports), entry.get("sha256")):  # edited since: scanned again
        return None
    try:
        snapshot = read_snapshot(out_dir / f"{name}.json")
    except (OpassessError, KeyError):
        return None
    return ModelResult(target=target, name=name, status="ok", cause=None, reports=tuple(reports),
                       seconds=float(seconds), resumed=True, snapshot=snapshot)

