"""`opassess kb import`: refresh the kernel facts from a downloaded torch-npu wheel, read as a zip, never imported."""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from opassess.datafile import check_regular
from opassess.errors import KnowledgeBaseError

from .versions import format_version, parse_version

YAML_PATH = "torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml"
IMPORT_FORMAT = 1
# The most a wheel member may inflate to when read: the real kernel list is about 1 MiB, so 64 MiB is ample and a
# zip bomb (a 7 MB wheel whose YAML inflates to 3 GiB) is refused after reading 64 MiB, not after filling memory.
MEMBER_LIMIT = 64 * 2**20
METADATA_LIMIT = 4 * 2**20
_CHUNK = 2**20


def read_member(wheel: Path, archive: zipfile.ZipFile, name: str, limit: int | None = None) -> str:
    """The UTF-8 text of member `name`, read as a stream and refused once it inflates past `limit` bytes (default
    MEMBER_LIMIT), whatever size the zip directory claims."""
    limit = MEMBER_LIMIT if limit is None else limit
    info = archive.getinfo(name)  # KeyError when absent: the caller names what is missing
    if info.file_size > limit:
        raise KnowledgeBaseError(f"{wheel}: {name} inflates to {info.file_size} bytes, over the {limit}-byte limit "
                                 f"for a wheel member (not a torch-npu wheel, or a damaged one)")
    parts: list[bytes] = []
    size = 0
    with archive.open(info) as stream:
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            if size > limit:
                raise KnowledgeBaseError(f"{wheel}: {name} inflates past the {limit}-byte limit for a wheel member "
                                         f"(not a torch-npu wheel, or a damaged one)")
            parts.append(chunk)
    try:
        return b"".join(parts).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KnowledgeBaseError(f"{wheel}: {name} is not UTF-8 text (byte {exc.start})") from exc


def parse_functions_yaml(text: str, source: str = YAML_PATH) -> dict[str, list[dict[str, Any]]]:
    """The YAML subset of npu_native_functions_by_codegen.yaml -> {section: [entry, ...]}.

    The wheel ships this file, the list of ATen and NPU ops its kernels implement. It uses only a small
    YAML subset, so this parser reads it instead of adding a YAML dependency.

    Top-level `key: value` scalars are skipped; `key:` opens a section whose items are either
    `- func: schema` mappings (continuation lines indented two spaces, one nested level for
    `dispatch:`) or plain `- name` strings.
    """
    sections: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] | None = None
    entry: dict[str, Any] | None = None
    nested: dict[str, Any] | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 0 and not body.startswith("- "):
            key, sep, value = body.partition(":")
            if not sep:
                raise KnowledgeBaseError(f"{source}:{number}: expected 'key:' at the top level")
            current = sections.setdefault(key.strip(), []) if not value.strip() else None
            entry = nested = None
            continue
        if body.startswith("- "):
            if current is None:
                raise KnowledgeBaseError(f"{source}:{number}: list item outside a section")
            item = body[2:].strip()
            key, sep, value = item.partition(":")
            if sep and re.fullmatch(r"[A-Za-z_]+", key.strip()):
                entry = {key.strip(): _scalar(value)}
            else:
                entry = {"func": item}
            nested = None
            current.append(entry)
            continue
        if entry is None:
            raise KnowledgeBaseError(f"{source}:{number}: continuation line outside an entry")
        key, sep, value = body.partition(":")
        if not sep:
            raise KnowledgeBaseError(f"{source}:{number}: expected 'key: value'")
        if nested is not None and indent >= 4:
            nested[key.strip()] = _scalar(value)
        elif value.strip():
            entry[key.strip()] = _scalar(value)
            nested = None
        else:
            nested = entry.setdefault(key.strip(), {})
    return sections


def _scalar(value: str) -> Any:
    value = value.strip()
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def op_name(func: str) -> str:
    """'add.Tensor(Tensor self, ...) -> Tensor' -> 'add.Tensor'."""
    return func.split("(", 1)[0].strip()


def kernels_from_sections(sections: Mapping[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    kernels: dict[str, dict[str, Any]] = {}
    for section, entries in sections.items():
        for entry in entries:
            func = entry.get("func")
            if not isinstance(func, str) or not func:
                continue
            name = op_name(func)
            impl = str(entry.get("impl_ns", ""))
            paths = []
            if "op_api" in impl:
                paths.append("aclnn")
            if "acl_op" in impl:
                paths.append("aclop")
            record = kernels.setdefault(name, {"section": section, "paths": []})
            record["paths"] = sorted(set(record["paths"]) | set(paths))
            if entry.get("exposed") is True:
                record["exposed"] = True
    return dict(sorted(kernels.items()))


_WHEEL_NAME = re.compile(r"^torch_npu-(\d+\.\d+(?:\.\d+)?)(?:[.+-]?[A-Za-z0-9.]*)?-")


def wheel_version(wheel: Path, archive: zipfile.ZipFile) -> str:
    """torch-npu's version from dist-info METADATA, else from the file name ('2.14.0')."""
    for name in archive.namelist():
        if name.endswith(".dist-info/METADATA"):
            for line in read_member(wheel, archive, name, METADATA_LIMIT).splitlines():
                if line.startswith("Version:"):
                    return line.split(":", 1)[1].strip()
    m = _WHEEL_NAME.match(wheel.name)
    if m:
        return m.group(1)
    raise KnowledgeBaseError(f"{wheel}: cannot tell the torch-npu version (no METADATA, unexpected file name)")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def import_wheel(wheel: Path, dest: Path) -> Mapping[str, Any]:
    """Write dest/kernels-<torch version>.json from the wheel's kernel list; return a summary."""
    if not wheel.exists():
        raise KnowledgeBaseError(f"{wheel}: wheel not found")
    check_regular(wheel, "wheel", KnowledgeBaseError)
    try:
        with zipfile.ZipFile(wheel) as archive:
            version = wheel_version(wheel, archive)
            try:
                text = read_member(wheel, archive, YAML_PATH)
            except KeyError as exc:
                raise KnowledgeBaseError(f"{wheel}: no {YAML_PATH} inside (not a torch-npu wheel?)") from exc
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError) as exc:
        raise KnowledgeBaseError(f"{wheel}: not a zip/wheel file, or a damaged one ({exc})") from exc
    kernels = kernels_from_sections(parse_functions_yaml(text, f"{wheel.name}:{YAML_PATH}"))
    if not kernels:
        raise KnowledgeBaseError(f"{wheel}: {YAML_PATH} lists no functions")
    torch_version = format_version(parse_version(version))
    provenance = {
        "kind": "imported",
        "wheel": wheel.name,
        "wheel_sha256": _sha256(wheel),
        "torch_npu_version": version,
        "source": YAML_PATH,
        "imported_at": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "format": IMPORT_FORMAT,
    }
    data = {"torch_version": torch_version, "provenance": provenance, "kernels": kernels}
    if dest.exists() and not dest.is_dir():
        raise KnowledgeBaseError(f"{dest}: not a folder (the imported kernel table is written into one)")
    from ..errors import ReportError
    from ..output import write_output

    target = dest / f"kernels-{torch_version}.json"
    try:
        dest.mkdir(parents=True, exist_ok=True)
        write_output(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n", target, "the kernel table")
    except OSError as exc:
        raise KnowledgeBaseError(f"{dest}: cannot write the kernel table ({exc.strerror or exc})") from exc
    except ReportError as exc:
        raise KnowledgeBaseError(str(exc)) from exc
    return {
        "torch_version": torch_version,
        "torch_npu_version": version,
        "kernels": len(kernels),
        "aten_official": sum(1 for k in kernels.values() if k["section"] in ("official", "supported")),
        "path": str(target),
        "wheel_sha256": provenance["wheel_sha256"],
    }
