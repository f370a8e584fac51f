"""Every input the verdict rests on, read and hashed by the `opassess` process before any model code runs.

A model runs as the user: without the sandbox it can write the knowledge-base overlay, rewrite the `--weights` file
during its forward, or drop a `verified: passed` entry where the next scan reads it. So before the first worker
starts, the parent reads the knowledge base (every table of its folder and of the overlay, the curated rules, the
verified results), the weights and their profile, the device profile and the report templates, noting the SHA-256
of each file (datafile.recording_reads); the assessment then uses the objects built from those bytes (`Pinned`),
never a second reading. Once the model has run, `verify` hashes every pinned file again and lists the folders again:
a file that changed, vanished or appeared in them during the run is an `InputChanged` error naming it, so a verdict
is never given on inputs other than the ones it records (the report's `inputs`).
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..datafile import read_bytes, recording_reads, sha256_hex
from ..errors import ConfigError
from ..records import InputFile

if TYPE_CHECKING:
    from ..kb.store import KnowledgeBase
    from ..options import ScanOptions
    from ..score.weights import Weights

# suffixes of the files a knowledge-base folder, an overlay or a templates folder holds that opassess may read
_DATA = (".json", ".toml", ".j2", ".css", ".js")


class InputChanged(ConfigError):
    """A file the verdict rests on changed (or appeared, or vanished) while the model ran: no verdict is given."""


@dataclass(frozen=True)
class Pinned:
    """The inputs as read before the model ran: the knowledge base and weights built from them, the hash of every
    file read, and the listing of every folder whose files may be read (a file appearing there is a change too)."""

    kb: KnowledgeBase  # every table loaded
    weights: Weights
    files: tuple[InputFile, ...]
    folders: tuple[tuple[str, tuple[str, ...] | None], ...] = ()  # folder -> its data files (None: absent)

    def recorded(self) -> tuple[InputFile, ...]:
        """The files as the report names them (`shown`)."""
        return tuple(InputFile(shown(f.path), f.sha256) for f in self.files)


_HELD: list[Pinned] = []  # the pins of the runs in progress in this process (a portfolio's), innermost last


@contextlib.contextmanager
def holding(pinned: Pinned) -> Iterator[Pinned]:
    """Make `pinned` the inputs every capture assessed in this block is judged by (`held`), then verify them."""
    _HELD.append(pinned)
    try:
        yield pinned
    finally:
        _HELD.remove(pinned)
    verify(pinned)


def held() -> Pinned | None:
    """The inputs of the run in progress (`holding`), or None."""
    return _HELD[-1] if _HELD else None


def _listing(folder: Path) -> tuple[str, ...] | None:
    try:
        return tuple(sorted(e.name for e in os.scandir(folder) if e.name.endswith(_DATA)))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ConfigError(f"{folder}: cannot list: {exc.strerror or exc}") from exc


def _read_folder(folder: Path) -> None:
    """Read (and so hash) every data file directly in `folder`."""
    for name in _listing(folder) or ():
        path = folder / name
        if path.is_file():
            read_bytes(path, "input file")


def overlay_candidate(options: ScanOptions) -> Path | None:
    """The overlay folder a scan would read if it existed (OPASSESS_KB_DIR, else the user's folder), when --kb does
    not name a folder: a model that creates it must not change the next verdict unnoticed."""
    from ..kb.store import user_kb_dir

    if options.kb_dir is not None:
        return None
    env = os.environ.get("OPASSESS_KB_DIR")
    return Path(env) if env else user_kb_dir()


def pin_inputs(options: ScanOptions, templates: Path | None = None, extra: Iterable[Path] = ()) -> Pinned:
    """Check the configuration (pipeline.assess.preflight) and read every input before any model code runs;
    `templates`: a --templates folder, `extra`: other files the run reads (a baseline, a manifest)."""
    from ..findings import load_patterns
    from ..kb import load_kb
    from ..kb.routes import load_route_facts
    from ..pipeline.assess import preflight
    from ..resources import data_path, shipped_path
    from ..score.weights.load import load_weights

    with recording_reads() as ledger:
        preflight(options)
        weights = load_weights(options.weights, options.profile)
        kb = load_kb(options.kb_dir)
        _load_everything(kb)
        load_patterns()
        load_route_facts()
        folders = [kb.directory, kb.overlay, data_path(""), shipped_path("templates"), templates,
                   overlay_candidate(options)]
        for folder in dict.fromkeys(Path(f) for f in folders if f is not None):
            _read_folder(folder)
        for path in (options.device_profile, *extra):
            if path is not None:
                read_bytes(path, "input file")
    listed = tuple((str(f), _listing(f)) for f in dict.fromkeys(Path(f) for f in folders if f is not None))
    files = tuple(InputFile(path, digest) for path, digest in sorted(ledger.items()))
    return Pinned(kb=kb, weights=weights, files=files, folders=listed)


def shown(path: str) -> str:
    """How the report names an input: a file shipped with opassess as '<shipped>/data/kb/kernels.json', any other
    by its path (which the report makes portable as it does every path)."""
    from ..resources import package_path

    base = str(package_path().parent)
    return f"<shipped>{path[len(base):]}" if path.startswith(base + os.sep) else path


def _load_everything(kb: KnowledgeBase) -> None:
    """Every table and derived record of the knowledge base loaded now (they load on first use otherwise)."""
    for name in ("provenance", "product_list", "api_doc_versions", "imported", "verified", "torch_versions",
                 "kernel_facts", "_kernels", "_kernels_by_base", "_limitations", "_custom_ops", "_checks", "rules",
                 "error_codes"):
        getattr(kb, name)
    for table in ("apis", "mstt", "onnx_cann"):
        if (kb.directory / f"{table}.json").exists():
            kb._table(table)


def verify(pinned: Pinned) -> None:
    """Raise InputChanged naming the first pinned file whose bytes changed (or that vanished), or the first file that
    appeared in a pinned folder, since it was pinned."""
    for item in pinned.files:
        try:
            now = sha256_hex(read_bytes(item.path, "input file"))
        except ConfigError:  # removed, or replaced by something that is not a regular file
            raise InputChanged(f"{item.path}: an input the verdict rests on was removed or replaced while the model "
                               f"ran (no verdict given)") from None
        if now != item.sha256:
            raise InputChanged(f"{item.path}: an input the verdict rests on changed while the model ran (sha256 "
                               f"{item.sha256[:12]} -> {now[:12]}; no verdict given)")
    for folder, names in pinned.folders:
        now_names = _listing(Path(folder))
        if now_names != names:
            added = sorted(set(now_names or ()) - set(names or ()))
            what = os.path.join(folder, added[0]) if added else folder
            raise InputChanged(f"{what}: appeared while the model ran, where opassess reads its inputs (no verdict "
                               f"given)")
