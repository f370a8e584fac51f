"""What the knowledge-base generators share: reading a fact table, hashing it, writing compact deterministic JSON.

build_kb.py, kb_kernels.py and kb_source.py import these (tools/ is on sys.path when they run or are tested).
"""
from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path


def read_tsv(path: Path) -> list[dict[str, str]]:
    """The rows of a tab-separated fact table as dicts keyed by its header (no quoting: cells are taken verbatim)."""
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, for the provenance records."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_json(path: Path, data) -> int:
    """Write `data` as compact JSON (sorted keys, UTF-8, one trailing newline) so a rebuild is byte-identical;
    return the file's size in bytes."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))
