"""A scanned tree as a package: its own modules are never a third-party library, the extensions it builds are linked
to their imports and calls (priced once, as their kernels), and one autotune list is one site.

Example (a clone of state-spaces/mamba): `from mamba_ssm.utils.hf import load_config_hf` is the tree's own import,
not a "mamba_ssm" library import; `import selective_scan_cuda` and `selective_scan_cuda.fwd(...)` are uses of the
CUDAExtension setup.py builds, listed on that extension's site, whose kernels (the __global__ functions of the .cu/.cuh
sources it lists and includes, template-instantiation .cu files counted as kernel source) are its size.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from .records import KernelSize, Site

_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
_INSTANTIATION = re.compile(r"^\s*template\s+(?!<)[\w:<>,\s*&]+\(", re.M)  # 'template void f<at::Half>(...);'
LINK = "link"  # Site.detail key on an extension site: "file:line" of an import or call of the module it builds


def own_modules(files: Iterable[Path]) -> frozenset[str]:
    """The top-level import names the scanned Python files define: a package's outermost folder holding an
    __init__.py (walking up from each file), or the stem of a module outside any package."""
    names: set[str] = set()
    for path in files:
        if path.suffix != ".py":
            continue
        folder = path.resolve().parent
        if not (folder / "__init__.py").is_file():
            if path.stem != "__init__":
                names.add(path.stem)
            continue
        while (folder.parent / "__init__.py").is_file():
            folder = folder.parent
        names.add(folder.name)
    return frozenset(n for n in names if n.isidentifier())


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def _built(name: str, extensions: Iterable[str]) -> str | None:
    """The extension module `name` is or lies in ('rope_cuda.forward' -> 'rope_cuda'; 'pkg._C.nms' -> 'pkg._C'; a
    relative import resolved from a deeper root, 'repo.pkg._C', -> 'pkg._C'), or None."""
    for extension in extensions:
        if name == extension or name.startswith(extension + ".") or f".{extension}." in f".{name}." \
                and "." in extension:
            return extension
    return None


def link_own(sites: list[Site], own: frozenset[str], imports: Iterable[tuple[str, str, int]] = ()) -> list[Site]:
    """The sites without the tree's own imports and calls (its modules, and the extension modules it builds); an
    extension site lists the imports and calls of its module (`imports`: (file, module or called name, line)) and the
    calls the facts knew (`LINK` details) instead."""
    extensions = {site.get("name"): site for site in sites if site.kind == "extension" and site.get("name")}
    links: dict[str, list[str]] = {}
    for file, module, line in imports:
        built = _built(module, extensions)
        if built is not None:
            links.setdefault(built, []).append(f"{file}:{line}")
    kept = []
    for site in sites:
        if site.kind in ("import", "api"):
            built = _built(site.subject, extensions)
            if built is not None:
                links.setdefault(built, []).append(f"{site.file}:{site.line}")
                continue
            if _top(site.subject) in own:
                continue
        kept.append(site)
    return [dataclasses.replace(s, detail=(*s.detail, *((LINK, where) for where in dict.fromkeys(
        links.get(s.get("name"), ()))))) if s.kind == "extension" else s for s in kept]


def extension_sources(site: Site, texts: Mapping[str, str]) -> list[str]:
    """The scanned files an extension site builds from: the sources it lists (relative to its file, or to the root;
    a glob pattern matched against the scanned files), or every native file under its folder when its sources are
    computed when setup.py runs; then, transitively, the project headers they #include "...", in order."""
    base = PurePosixPath(site.file).parent
    queue = []
    if site.get("sources") == "computed":
        inside = "" if base == PurePosixPath(".") else base.as_posix() + "/"
        queue = [f for f in texts if f.startswith(inside)]
    for source in site.all("source"):
        for candidate in ((base / source).as_posix(), source):
            if any(c in candidate for c in "*?["):
                queue += [f for f in texts if fnmatch.fnmatchcase(f, candidate)
                          or candidate.startswith("*/") and fnmatch.fnmatchcase(f, candidate[2:])]
            elif candidate in texts:
                queue.append(candidate)
                break
    return with_includes(queue, texts)


def with_includes(files: Iterable[str], texts: Mapping[str, str]) -> list[str]:
    """`files`, then, transitively, the project headers they #include "...", in order."""
    queue = list(files)
    seen: dict[str, None] = {}
    while queue:
        file = queue.pop(0)
        if file in seen:
            continue
        seen[file] = None
        folder = PurePosixPath(file).parent
        for include in _INCLUDE.findall(texts[file]):
            path = _normal(folder / include)
            if path in texts and path not in seen:
                queue.append(path)
    return list(seen)


def _normal(path: PurePosixPath) -> str:
    parts: list[str] = []
    for part in path.parts:
        if part == "..":
            if parts:
                parts.pop()
        elif part != ".":
            parts.append(part)
    return "/".join(parts)


def extension_size(files: list[str], kernel_sites: Iterable[Site], texts: Mapping[str, str]) -> KernelSize | None:
    """The size of what an extension builds: its __global__ kernels (their lines) in `files`, plus the lines of each
    .cu file holding only template instantiations (kernel source too: it compiles the kernels of a header); None when
    it lists no scanned source."""
    if not files:
        return None
    inside = set(files)
    kernels = [s for s in kernel_sites if s.kind == "cuda-kernel" and s.file in inside]
    lines = sum(s.size.lines for s in kernels if s.size)
    instantiations = [f for f in files if f.endswith(".cu") and not any(k.file == f for k in kernels)
                      and _INSTANTIATION.search(texts[f])]
    lines += sum(len(texts[f].splitlines()) for f in instantiations)
    apis = sorted({a for s in kernels if s.size for a in s.size.apis})
    count = len({s.subject for s in kernels}) or (1 if instantiations else 0)
    return KernelSize(lines=lines, kernels=count, apis=tuple(apis))
