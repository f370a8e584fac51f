"""Which models a portfolio scans: files as given, directories searched for model files, each given a report name."""
from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ModelLoadError
from ..huggingface import CONFIG_NAME, is_model_folder, with_config_defaults
from ..options import ScanOptions

STATE_FILE = "portfolio.state.json"
PORTFOLIO_NAME = "portfolio"  # portfolio.json, portfolio.md


@dataclass(frozen=True)
class ModelTarget:
    """One model of the portfolio and the stem its report files are named with."""

    target: str
    name: str  # "resnet_like" -> resnet_like.json, resnet_like.md
    settings: tuple[tuple[str, Any], ...] = ()  # scan options of this model alone (a manifest's dtype, entry, ...)

    def scan_options(self, base: ScanOptions) -> ScanOptions:
        """The portfolio's scan options with this model's target and its own settings."""
        options = replace(base, target=self.target, **dict(self.settings))
        try:
            return with_config_defaults(options)  # a Hugging Face folder: the dtype its config names
        except ModelLoadError:  # a bad config.json: the worker fails on it and the model is reported failed
            return options


@dataclass(frozen=True)
class Skipped:
    """A file found in a target directory that is not scanned, and why."""

    path: str
    reason: str



def _looks_like_model(path: Path, entry: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", text, re.MULTILINE) is not None


def expand_targets(targets: Sequence[str], entry: str | None = None
                   ) -> tuple[tuple[ModelTarget, ...], tuple[Skipped, ...]]:
    """Files as given, directories as the model files in them (recursively, defining the factory), module:factory
    targets as given; each named after its file stem (or factory), disambiguated when two stems clash."""
    from .manifest import is_manifest, read_manifest

    factory = (entry or "build_model").rsplit(":", 1)[-1]
    found: list[str] = []
    skipped: list[Skipped] = []
    given: dict[str, ModelTarget] = {}  # models of a manifest: their names and settings
    listed: dict[str, str] = {}  # model target -> where a manifest listed it first
    for target in targets:
        path = Path(target)
        if is_manifest(target):
            for index, (model_target, name, settings) in enumerate(read_manifest(path), 1):
                where = f"{path}: [[model]] {index}" + (f" ({name})" if name else "")
                if model_target in listed:  # one report per file: never one entry's verdict for both
                    raise ConfigError(f"{where}: {model_target} is listed already ({listed[model_target]}); a "
                                      f"portfolio scans each file once: scan the second entry in a run of its own")
                listed[model_target] = where
                found.append(model_target)
                given[model_target] = ModelTarget(model_target, name or "", tuple(sorted(settings.items())))
        elif is_model_folder(target):  # one Hugging Face model
            found.append(target)
        elif path.is_dir():
            # Hugging Face model folders inside it are models; the Python files in them are their modelling code
            folders = sorted(c.parent for c in path.rglob(CONFIG_NAME) if c.is_file()
                             and not any(p.startswith(".") for p in c.parent.relative_to(path).parts))
            found.extend(str(folder) for folder in folders)
            for candidate in sorted(path.rglob("*.py")):
                if any(part.startswith(".") or part == "__pycache__" for part in candidate.relative_to(path).parts):
                    continue
                if any(folder in candidate.parents for folder in folders):
                    continue
                if not candidate.is_file():  # follows links: a link to nothing or to a folder is no model file
                    reason = "a symbolic link to nothing" if candidate.is_symlink() and not candidate.exists() \
                        else "not a regular file"
                    skipped.append(Skipped(str(candidate), reason))
                elif _looks_like_model(candidate, factory):
                    found.append(str(candidate))
                else:
                    skipped.append(Skipped(str(candidate), f"defines no {factory}()"))
        else:
            found.append(target)
    unique = list(dict.fromkeys(found))  # a file named twice is scanned once
    stems = [given[t].name if t in given and given[t].name else _stem(t) for t in unique]
    names = []
    for target, stem in zip(unique, stems, strict=False):
        # Two files with one stem, or a stem whose report would overwrite the portfolio's own files.
        clash = stems.count(stem) > 1 or stem == PORTFOLIO_NAME or f"{stem}.json" == STATE_FILE
        names.append(f"{stem}-{hashlib.sha1(target.encode()).hexdigest()[:6]}" if clash else stem)
    models = (ModelTarget(t, n, given[t].settings if t in given else ()) for t, n in zip(unique, names, strict=False))
    return tuple(models), tuple(skipped)


def no_models_message(targets: Sequence[str], skipped: Sequence[Skipped], entry: str | None) -> str:
    """Why nothing is scanned: the folders searched, what counts as a model file, and the files passed over."""
    factory = (entry or "build_model").rsplit(":", 1)[-1]
    where = ", ".join(targets)
    rule = f"a model file is a *.py file (searched recursively, hidden folders left out) that defines {factory}()"
    if not skipped:
        return f"no model to scan in {where}: no *.py file there; {rule}"
    shown = "; ".join(f"{Path(s.path).name}: {s.reason}" for s in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"no model to scan in {where}: {len(skipped)} *.py file(s), none a model ({shown}{more}); {rule}"


def _stem(target: str) -> str:
    """'examples/resnet_like.py' -> 'resnet_like'; 'torchvision.models:resnet50' -> 'resnet50'."""
    if Path(target).is_dir():  # a Hugging Face model folder: 'Qwen2.5-7B', not 'Qwen2'
        stem = Path(target).resolve().name
    elif target.endswith(".py") or Path(target).exists():
        stem = Path(target).stem
    else:
        stem = target.rsplit(":", 1)[-1] or target
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "model"

