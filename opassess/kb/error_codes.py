"""Ascend error codes (error_codes.toml) read strictly, and the lookup behind `opassess explain CODE`."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from opassess.datafile import TomlTable
from opassess.errors import KnowledgeBaseError

SECTIONS = ("acl", "torch_npu_module", "torch_npu_code", "cann_module", "cann_code", "message")
# A code as it appears in a log: an ACL/aclnn name, torch_npu's ERRxxyyy, CANN's E-codes (EZ9999), or the number
# after "error code" / "ret" (507015).
_IN_TEXT = re.compile(r"\b(ACL_ERROR_[A-Z_]+|ACLNN_ERR_[A-Z_]+|ERR\d{5}|E[0-9A-Z]\d{4})\b"
                      r"|(?:error ?code|ret)\s*(?:is|=|:)?\s*\[?(\d{6})\b", re.IGNORECASE)


@dataclass(frozen=True)
class ErrorCode:
    """One error code with its meaning, cause and remedy in our own words."""

    code: str  # "ACL_ERROR_INVALID_PARAM", "ERR01003", "ERR01" (a family), "EZ9999" or "EZ" (a module)
    value: int | None
    module: str | None
    meaning: str
    cause: str
    remedy: str
    evidence: str
    pattern: str | None = None  # a `message` entry: the text after a code it explains (a regular expression)


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
            pattern = item.string("pattern") if section == "message" else None
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise item.error("pattern", f"not a regular expression ({exc})") from exc
            codes[code] = ErrorCode(code, value, item.string("module", None), item.string("meaning"),
                                    item.string("cause"), item.string("remedy"), item.string("evidence"), pattern)
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
    m = re.fullmatch(r"E([0-9A-Z])(\d{4})", key)
    if m:
        return _cann_code(codes, key, m.group(1), int(m.group(2)))
    m = re.fullmatch(r"ERR(\d{2})(\d{3})", key)
    if m:
        generic = codes.get(f"ERR**{m.group(2)}")
        module = codes.get(f"ERR{m.group(1)}")
        if generic is not None:
            module_name = module.meaning if module else f"module {m.group(1)}"
            return ErrorCode(key, None, module_name, f"{module_name}: {generic.meaning}", generic.cause,
                             generic.remedy, generic.evidence)
    return None


def _cann_code(codes: Mapping[str, ErrorCode], key: str, module_char: str, number: int) -> ErrorCode | None:
    """A CANN E-code not listed itself, composed from its module (EZ) and its class (user or internal)."""
    module = codes.get(f"E{module_char}")
    generic = codes.get("E**9000-9999" if number >= 9000 else "E**0000-8999")
    if generic is None:
        return None
    module_name = module.meaning if module else f"module {module_char}"
    evidence = f"{module.evidence}; {generic.evidence}" if module else generic.evidence
    return ErrorCode(key, None, module_name, f"{module_name}: {generic.meaning}",
                     f"{module.cause} {generic.cause}" if module else generic.cause,
                     f"{generic.remedy} {module.remedy}" if module else generic.remedy, evidence)


def codes_in_text(text: str) -> list[str]:
    """The error codes in a pasted log line or block, in order of appearance, each once (upper-cased).

    'EZ9999: Inner Error! ... [ERROR] ... ERR99999 UNKNOWN application exception' -> ['EZ9999', 'ERR99999'];
    'call aclnnAdd failed, error code is 561103' -> ['561103'].
    """
    found: dict[str, None] = {}
    for m in _IN_TEXT.finditer(text):
        found.setdefault((m.group(1) or m.group(2)).upper(), None)
    return list(found)


def listed_codes(codes: Mapping[str, ErrorCode]) -> list[ErrorCode]:
    """The codes `explain --list` shows: every concrete code (not the module, class and message entries), sorted."""
    return sorted((c for c in codes.values() if "*" not in c.code and c.module is None and c.pattern is None),
                  key=lambda c: c.code)


def messages_in_text(codes: Mapping[str, ErrorCode], text: str) -> list[ErrorCode]:
    """The `message` entries whose pattern the text matches (out of memory, HCCL timeouts), in file order."""
    return [c for c in codes.values() if c.pattern is not None and re.search(c.pattern, text, re.IGNORECASE)]


# Where a log names the operator that failed: an aclnn API ("call aclnnFlashAttentionScore failed"), or a kernel,
# op or node name after its label ("kernel_name=FlashAttentionScore_1_mix_aiv", "op_name: Add", "[Op: Conv2D]").
_BLAMED = re.compile(r"\b(aclnn[A-Z][A-Za-z0-9]*?)(?:GetWorkspaceSize)?\b"
                     r"|(?:kernel[_ ]name|op[_ ]?name|op[_ ]type|node[_ ]name|opType|\[Op)\s*(?:is|=|:)?\s*\[?"
                     r"([A-Za-z][A-Za-z0-9_]*)", re.IGNORECASE)


def blamed_operators(text: str) -> list[str]:
    """The operators a pasted log blames, in order, each once: aclnn APIs first as written, kernel and op names with
    a compiled kernel's suffixes left off (FlashAttentionScore_1_mix_aiv -> FlashAttentionScore)."""
    found: dict[str, None] = {}
    for m in _BLAMED.finditer(text):
        name = m.group(1) or re.sub(r"(_\d+)?(_mix_ai[cv]|_ai[cv])?(_\d+)*$", "", m.group(2))
        if name and name.lower() not in ("is", "none", "null"):
            found.setdefault(name, None)
    return list(found)
