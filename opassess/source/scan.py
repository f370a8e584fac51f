"""scan_sources: walk a project's Python and C++/CUDA files and return every GPU-specific site, classified."""
from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from ..datafile import check_regular, read_text
from ..errors import OpassessError
from ..kb.routes import RouteFacts, load_route_facts
from ..messages import N_, Text
from .classify import classify_sites
from .facts import SourceFacts, load_source_facts
from .native import NATIVE_SUFFIXES, scan_native
from .package import extension_size, extension_sources, link_own, own_modules, with_includes
from .python import scan_python
from .reach import configured_reach
from .reach.variants import other_dtypes
from .records import BUILT_KINDS, Site, SkippedFile, SourceFinding, SourceScan
from .split import OUT_OF_MEMORY, FileResult, scan_files

# Directories never entered: environments, installed packages, VCS data, caches and build output.
SKIP_DIRS = frozenset({"site-packages", "dist-packages", "node_modules", "__pycache__", "build", "dist",
                       "venv", "env", ".venv"})
PYTHON_SUFFIXES = (".py",)
HEADERS = (".h", ".hpp", ".hh", ".cuh")


class SourceScanError(OpassessError):
    """A path given to scan_sources does not exist."""


def _skip_dir(path: Path) -> bool:
    name = path.name
    return (name in SKIP_DIRS or name.startswith(".") or name.endswith(".egg-info")
            or (path / "pyvenv.cfg").is_file())


def collect_files(paths: Iterable[Path]) -> list[Path]:
    """Python and native files under `paths`, sorted, each once (a file named twice, e.g. the model file and the
    folder holding it, is one file); venvs, site-packages, .git, hidden and build dirs skipped."""
    found: dict[Path, Path] = {}
    for path in paths:
        if path.is_file():
            found.setdefault(path.resolve(), path)
            continue
        if path.exists() and not path.is_dir():
            check_regular(path, "source file", SourceScanError)
        if not path.is_dir():
            raise SourceScanError(f"{path}: no such file or directory")
        for folder, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not _skip_dir(Path(folder) / d))
            for name in files:
                if name.endswith(PYTHON_SUFFIXES + NATIVE_SUFFIXES):
                    found.setdefault((Path(folder) / name).resolve(), Path(folder) / name)
    return sorted(found.values(), key=lambda p: p.resolve().as_posix())


def _relative(path: Path, root: Path) -> str:
    try:
        return PurePosixPath(path.resolve().relative_to(root)).as_posix()
    except ValueError:
        return path.resolve().as_posix()


SOURCE_LIMIT = 16 * 1024 * 1024  # bytes: a larger source file is generated, not written by hand; it is skipped
# bytes of one Python file the scan parses: its syntax tree takes about 220 times its size in memory (a 9.5 MB
# generated file: 2.1 GB, and a minute), while the largest hand-written modules seen are about 1.4 MB (torch's
# common_methods_invocations.py); a larger file is listed as not scanned, with its size
PYTHON_LIMIT = 2 * 1024 * 1024


def _read(path: Path) -> str:
    return read_text(path, "source file", SourceScanError, SOURCE_LIMIT, errors="replace")


def _size(path: Path) -> int:
    """The file's size in bytes (0 when it cannot be read: reading it says why)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def _unreadable(exc: SourceScanError, path: Path) -> str:
    return "unreadable: " + str(exc).removeprefix(f"{path}: cannot read source file: ")


def _scan_python_file(path: Path, rel: str, size: int, facts: SourceFacts, known: Callable[[str], bool]
                      ) -> FileResult:
    """One Python file (`size` bytes) scanned: its sites and imports, why it was skipped (None: it was scanned) and its
    line count."""
    if size > PYTHON_LIMIT:
        return [], [], (f"not parsed: {size / 2**20:.1f} MiB, over the {PYTHON_LIMIT // 2**20} MiB a Python source may "
                        "have (generated code?)"), 0
    try:
        text = _read(path)
    except SourceScanError as exc:
        return [], [], _unreadable(exc, path), 0
    imports: list[tuple[str, str, int]] = []
    try:
        sites = scan_python(text, rel, facts, known, imports)
    except RecursionError:
        return [], [], "not parsable as Python: nested too deep", 0
    except MemoryError:
        return [], [], OUT_OF_MEMORY, 0
    except (SyntaxError, ValueError) as exc:
        lineno = getattr(exc, "lineno", None)
        line = f" at line {lineno}" if lineno else ""
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return [], [], f"not parsable as Python{line}: {reason}", 0
    return sites, imports, None, _lines(text)


def _with_extension_sizes(sites: list[Site], native_sites: list[Site], texts: dict[str, str], dtype: str | None = None
                          ) -> tuple[list[Site], dict[str, str], dict[str, list[str]]]:
    """Each extension site sized as what it builds (package.extension_size over the sources it lists and the headers
    they include), file -> "file:line" of the extension building it (its kernels are priced there, once) and, given
    the `dtype` the default configuration runs, "file:line" -> the sources built for other dtypes (not sized)."""
    out: list[Site] = []
    built: dict[str, str] = {}
    others: dict[str, list[str]] = {}
    for site in sites:
        if site.kind == "extension":
            files = extension_sources(site, texts)
            other = other_dtypes(files, dtype) if dtype else []
            if other:
                others[f"{site.file}:{site.line}"] = other
                files = with_includes([f for f in files if f not in other and not f.endswith(HEADERS)], texts)
            size = extension_size(files, native_sites, texts)
            if size is not None:
                site = dataclasses.replace(site, size=size)
            if site.get("sources") == "computed" or any(c in s for s in site.all("source") for c in "*?["):
                # what was computed or matched, named as the files found (a header they include is not a source)
                listed = [f for f in files if not f.endswith(HEADERS)]
                site = dataclasses.replace(site, detail=(*(d for d in site.detail if d[0] != "source"),
                                                         *(("source", f) for f in listed)))
            for file in files:
                built.setdefault(file, f"{site.file}:{site.line}")
        out.append(site)
    return out, built, others


def scan_sources(paths: Iterable[str | os.PathLike] | str | os.PathLike, root: str | os.PathLike | None = None,
                 facts: SourceFacts | None = None, product: str = "A2", routes: RouteFacts | None = None,
                 configured: bool = False) -> SourceScan:
    """Scan files and folders statically (nothing is imported or run) and classify every GPU-specific site.

    `root` (default: the single folder given, else the common parent) is what finding paths are relative to.
    `product` is the target's kernel column in products.toml ("A2", "950", ...): the distributed pre-flight judges
    dtype-gated collectives by it. Unreadable or unparsable files are returned in `skipped` with the reason.
    `configured` (a source-only scan): the reach of the project's default configuration (source.reach), and an
    extension sized by the sources of the dtype it runs.
    """
    routes = routes or load_route_facts()

    named: dict[str, bool] = {}

    def known(api: str) -> bool:
        if api not in named:
            named[api] = routes.hccl(api) is not None
        return named[api]

    given = [Path(paths)] if isinstance(paths, str | os.PathLike) else [Path(p) for p in paths]
    facts = facts or load_source_facts()
    files = collect_files(given)
    if root is None:
        root = given[0] if len(given) == 1 and given[0].is_dir() else Path(os.path.commonpath(
            [p.resolve().parent if p.is_file() else p.resolve() for p in given])) if given else Path.cwd()
    root_path = Path(root).resolve()
    python_sites: list[Site] = []
    native_sites: list[Site] = []
    imports: list[tuple[str, str, int]] = []  # (file, module, line): what links an extension to its imports
    texts: dict[str, str] = {}  # native sources by relative path: what an extension builds is read from them
    skipped: list[SkippedFile] = []
    scanned: list[str] = []
    total = 0
    relative = {path: _relative(path, root_path) for path in files}
    python = [(path, relative[path]) for path in files if path.suffix in PYTHON_SUFFIXES]
    sizes = {path: _size(path) for path, _ in python}
    scanned_python = iter(scan_files(python, [size if size <= PYTHON_LIMIT else 0 for size in sizes.values()],
                                     lambda path, rel: _scan_python_file(path, rel, sizes[path], facts, known)))
    for path in files:
        rel = relative[path]
        if path.suffix in PYTHON_SUFFIXES:
            sites, found, reason, lines = next(scanned_python)
            if reason is not None:
                skipped.append(SkippedFile(rel, reason))
                continue
            python_sites += sites
            imports += found
        else:
            try:
                text = _read(path)
            except SourceScanError as exc:
                skipped.append(SkippedFile(rel, _unreadable(exc, path)))
                continue
            native_sites += scan_native(text, rel)
            texts[rel] = text
            lines = _lines(text)
        scanned.append(rel)
        total += lines
    python_sites = link_own(python_sites, own_modules(files), imports)
    skipped_files = {s.file for s in skipped}
    reach = configured_reach((rel, _read(path)) for path, rel in python if rel not in skipped_files) \
        if configured else None
    python_sites, built, others = _with_extension_sizes(python_sites, native_sites, texts,
                                                        reach.dtype if reach else None)
    findings = classify_sites(python_sites + native_sites, facts, routes, product)
    findings = [dataclasses.replace(f, built_by=built[f.file]) if f.file in built and f.kind in BUILT_KINDS else f
                for f in findings]
    if reach is not None and others:
        reach = dataclasses.replace(reach, variants=tuple(f for files in others.values() for f in files))
        findings = [_with_variants(f, others[f"{f.file}:{f.line}"], reach.dtype)
                    if f.kind == "cpp-extension" and f"{f.file}:{f.line}" in others else f for f in findings]
    findings.sort(key=lambda f: (f.file, f.line, f.kind, f.subject))
    return SourceScan(root=root_path.as_posix(), findings=tuple(findings), files=tuple(scanned),
                      skipped=tuple(skipped), lines=total, reach=reach)


def _with_variants(finding: SourceFinding, other: list[str], dtype: str) -> SourceFinding:
    """An extension's note naming the sources it builds for other dtypes than the default configuration's."""
    note = Text(N_("built for other dtypes than the default configuration's %(dtype)s, not sized: %(files)s"),
                {"dtype": dtype, "files": ", ".join(PurePosixPath(f).name for f in other)})
    return dataclasses.replace(finding, notes=(*finding.notes, note))
