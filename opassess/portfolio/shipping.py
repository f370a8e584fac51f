"""Shipping a portfolio to machines that do not share the driver's filesystem: stage, relocate, restore.

The folders of the model files (a model imports what lies beside it), an `--entry FILE:FUNC` file's folder, a
`--weights` file and a `--kb` folder are copied into one staging directory under their absolute paths: the model
`/home/me/zoo/a/net.py` becomes `STAGE/home/me/zoo/a/net.py`. A remote executor ships that directory (Ray: as the
tasks' `working_dir`) and a worker scans from `ROOT + the driver's working directory`, where ROOT is wherever the
directory was unpacked on its node. Relative targets then resolve as on the driver and paths below the driver's
working directory are written relative, exactly as a local scan writes them; absolute paths (a model outside it)
carry the ROOT prefix, which `restore` takes out of the reports, so they read the same whichever machine ran them.
Hidden files and folders, `__pycache__` and the portfolio's output directory are left out.
"""
from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from ..errors import OpassessError
from ..options import ScanOptions
from .records import PortfolioOptions
from .targets import ModelTarget

MAX_STAGED_BYTES = 400 * 2**20  # Ray refuses a working_dir package over 500 MiB; say so before it does


def _is_file_target(target: str) -> bool:
    return os.path.isfile(target)


def staged_paths(models: Iterable[ModelTarget], options: PortfolioOptions) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(folders, files) to ship, as absolute paths: each model file's folder, the --entry file's folder, the --kb
    folder and the --weights file; a folder inside another one shipped is not listed again."""
    folders = {os.path.dirname(os.path.abspath(m.target)) for m in models if _is_file_target(m.target)}
    entry = options.scan.entry
    if entry and ":" in entry and _is_file_target(entry.rsplit(":", 1)[0]):
        folders.add(os.path.dirname(os.path.abspath(entry.rsplit(":", 1)[0])))
    if options.scan.kb_dir is not None and os.path.isdir(options.scan.kb_dir):
        folders.add(os.path.abspath(options.scan.kb_dir))
    kept: list[str] = []
    for folder in sorted(folders):  # sorted: a parent comes before the folders inside it
        if not any(folder == k or folder.startswith(k.rstrip(os.sep) + os.sep) for k in kept):
            kept.append(folder)
    files = []
    weights = options.scan.weights
    if weights is not None and os.path.isfile(weights):
        path = os.path.abspath(weights)
        if not any(path.startswith(k.rstrip(os.sep) + os.sep) for k in kept):
            files.append(path)
    return tuple(kept), tuple(files)


def stage(models: Iterable[ModelTarget], options: PortfolioOptions, into: Path) -> int:
    """Copy what the models need into `into` under their absolute paths (and create the driver's working directory
    there); return the bytes copied. Raises OpassessError when that is more than a runtime environment carries."""
    folders, files = staged_paths(models, options)
    skip = os.path.abspath(options.out_dir)
    total = 0
    copies: list[tuple[str, str]] = []
    for folder in folders:
        for directory, subdirs, names in os.walk(folder):
            subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d != "__pycache__"
                                and os.path.join(directory, d) != skip)
            copies.extend((os.path.join(directory, n), directory) for n in sorted(names) if not n.startswith("."))
    copies.extend((f, os.path.dirname(f)) for f in files)
    for source, _ in copies:
        total += os.path.getsize(source)
        if total > MAX_STAGED_BYTES:
            biggest = max(folders, key=lambda f: sum(os.path.getsize(s) for s, d in copies if s.startswith(f)),
                          default=source)
            raise OpassessError(f"the model folders to ship to the cluster exceed {MAX_STAGED_BYTES // 2**20} MiB "
                                f"(the largest is {biggest}): keep the model files in folders of their own")
    for source, directory in copies:
        destination = into / directory.lstrip(os.sep)
        destination.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, destination / os.path.basename(source))
    (into / os.getcwd().lstrip(os.sep)).mkdir(parents=True, exist_ok=True)
    return total


def relocate(path: str, root: str) -> str:
    """Where a driver path is on a node that unpacked the staging directory at `root`: absolute paths move under
    it, relative ones stay (the worker runs in `root` + the driver's working directory)."""
    return root + path if os.path.isabs(path) else path


def relocate_options(options: PortfolioOptions, target: str, root: str) -> ScanOptions:
    """The scan options of one model as a worker on that node runs them."""
    scan = options.scan
    entry = scan.entry
    if entry and ":" in entry:
        file_part, func = entry.rsplit(":", 1)
        entry = f"{relocate(file_part, root)}:{func}"
    return replace(scan, target=relocate(target, root), entry=entry,  # package.module:factory is not absolute
                   weights=Path(relocate(str(scan.weights), root)) if scan.weights is not None else None,
                   kb_dir=Path(relocate(str(scan.kb_dir), root)) if scan.kb_dir is not None else None)


def restore(text: str, root: str) -> str:
    """A report or cause written on the node, with the node's staging root taken out of its paths (also should a
    format write them with escaped slashes, `\\/`)."""
    return text.replace(root, "").replace(root.replace("/", "\\/"), "")
