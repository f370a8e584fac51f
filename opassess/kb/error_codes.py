"""Ascend error codes (error_codes.toml) read strictly, and the lookup behind `opassess explain CODE`."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from opassess.datafile import TomlTable
from opassess.errors import KnowledgeBaseError

SECTIONS = ("acl", "torch_npu_module", "torch_npu_code")


@dataclass(frozen=True)
class ErrorCode:
    """One error code with its meaning, cause and remedy in our own words."""

    code: str  # "ACL_ERROR_INVALID_PARAM" or "ERR01003" or "ERR01" (a family)
    value: int | None
    module: str | None
    meaning: str
    cause: str
    remedy: str
    evidence: str


def load_error_codes(path: Path) -> Mapping[str, ErrorCode]:
    """Every code of error_codes.toml by its upper-case name; KnowledgeBaseError naming file and key otherwise."""
    root = TomlTable.of_file(path, "error-code file", KnowledgeBaseError)
    codes: dict[str, ErrorCode] = {}
    for section in SECTIONS:
        for item in root.tables(section):
            code = item.string("code").upper()
            if code in codes:
                raise item.error("code", f"{code} defined twice")
            value = item.integer("value", None)
            codes[code] = ErrorCode(code, value, item.string("module", None), item.string("meaning"),
                                    item.string("cause"), item.string("remedy"), item.string("evidence"))
            item.finish()
    root.finish()
    if not codes:
        raise KnowledgeBaseError(f"{path}: no error codes defined")
    return codes


def find_error_code(codes: Mapping[str, ErrorCode], code: str) -> ErrorCode | None:
    """Look up 'ACL_ERROR_INVALID_PARAM', '100000', 'ERR01003' or 'EZ9999'-style codes (case-insensitive).

    torch_npu's ERRxxyyy codes are composed: module xx (a `torch_npu_module` entry) and the generic
    code yyy (an `ERR**yyy` entry).
    """
    key = code.strip().upper()
    if key in codes:
        return codes[key]
    if key.isdigit():
        return next((c for c in codes.values() if c.value == int(key)), None)
    m = re.fullmatch(r"ERR(\d{2})(\d{3})", key)
    if m:
        generic = codes.get(f"ERR**{m.group(2)}")
        module = codes.get(f"ERR{m.group(1)}")
        if generic is not None:
            module_name = module.meaning if module else f"module {m.group(1)}"
            return ErrorCode(key, None, module_name, f"{module_name}: {generic.meaning}", generic.cause,
                             generic.remedy, generic.evidence)
    return None
