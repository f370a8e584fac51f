"""What the knowledge-base generators share: reading a fact table and the README's provenance tables, hashing,
stamping and writing compact deterministic JSON, and the command line every generator takes (--facts, --out).

build_kb.py and the kb_*.py generators import these (tools/ is on sys.path when they run or are tested).
"""
from __future__ import annotations

import argparse
import csv
import datetime as _dt
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

SHIPPED = Path(__file__).resolve().parent.parent / "opassess" / "data" / "kb"  # the kb shipped in the package
FACTS_HELP = "folder with the Ascend fact tables and README.md"
_COMMIT = re.compile(r"[0-9a-f]{40}")


def read_tsv(path: Path) -> list[dict[str, str]]:
    """The rows of a tab-separated fact table as dicts keyed by its header (no quoting: cells are taken verbatim)."""
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def numbered_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(the leading `#` source lines, [(line number in the file, row)]): rows keyed by the header, cells stripped,
    a short row padded with "", blank lines skipped (their numbers kept)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    comments: list[str] = []
    while len(comments) < len(lines) and lines[len(comments)].startswith("#"):
        comments.append(lines[len(comments)].lstrip("# ").strip())
    first = len(comments)
    header = lines[first].split("\t")
    rows = []
    for number, line in enumerate(lines[first + 1:], start=first + 2):
        if line.strip():
            cells = line.split("\t")
            rows.append((number, {h: (cells[i].strip() if i < len(cells) else "") for i, h in enumerate(header)}))
    return comments, rows


def provenance_rows(readme: Path, heading: str, within: str | None = None) -> list[list[str]]:
    """The cells of the rows naming a commit (40 hex digits in the second column) of the README's table under
    `heading` (the first after the `within` heading, when given), up to the next heading."""
    text = readme.read_text(encoding="utf-8")
    if within is not None:
        start = text.find(within)
        if start < 0:
            raise ValueError(f"{readme}: no '{within.lstrip('# ')}' section")
        text = text[start:]
    rows, inside = [], False
    for line in text.splitlines():
        if not inside:
            inside = line.startswith(heading)
            continue
        if line.startswith("#"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 3 and _COMMIT.fullmatch(cells[1]):
            rows.append(cells)
    return rows


def missing(facts: Path, names: Iterable[str], tool: str) -> None:
    """Exit with one line naming the files `facts` lacks, if any."""
    absent = [name for name in names if not (facts / name).is_file()]
    if absent:
        raise SystemExit(f"{tool}: {facts} lacks {', '.join(absent)}")


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, for the provenance records."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sources(facts: Path, tables: dict[str, str], rows: dict[str, int]) -> dict[str, dict]:
    """The provenance record of each table read: its file name, SHA-256 and row count."""
    return {key: {"table": name, "sha256": sha256(facts / name), "rows": rows[key]} for key, name in tables.items()}


def sources_summary(read: dict[str, dict]) -> str:
    """'table.tsv 24 rows, ...' for the line a generator prints."""
    return ", ".join(f"{s['table']} {s['rows']} rows" for s in read.values())


def timestamp() -> str:
    """Now in UTC, or SOURCE_DATE_EPOCH when set (reproducible builds)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = _dt.datetime.fromtimestamp(int(epoch), _dt.UTC) if epoch else _dt.datetime.now(_dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def generation_date(content: dict, previous: Path) -> str:
    """`generated_at` for `content`: SOURCE_DATE_EPOCH when set, else the previous file's stamp when the rebuild
    would change nothing else, else now."""
    if not os.environ.get("SOURCE_DATE_EPOCH") and previous.is_file():
        shipped = json.loads(previous.read_text(encoding="utf-8"))
        stamp = shipped.pop("generated_at", None)
        if stamp and shipped == content:
            return stamp
    return timestamp()


def write_json(path: Path, data) -> int:
    """Write `data` as compact JSON (sorted keys, UTF-8, one trailing newline) so a rebuild is byte-identical;
    return the file's size in bytes."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
    path.write_text(text, encoding="utf-8")
    return len(text.encode("utf-8"))


def write_stamped(content: dict, out: Path, name: str, keys: Iterable[str]) -> dict:
    """Stamp `content` (generation_date against out/name, else the shipped file), write it to out/name and return
    its `keys`: the provenance part a generator reports."""
    target = out / name
    content["generated_at"] = generation_date(content, target if target.is_file() else SHIPPED / name)
    out.mkdir(parents=True, exist_ok=True)
    write_json(target, content)
    return {key: content[key] for key in keys}


def run(doc: str, build: Callable[[Path, Path], str], argv: list[str] | None,
        facts_help: str = FACTS_HELP) -> int:
    """A generator's command line: --facts DIR --out DIR, then print the line `build(facts, out)` returns."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--facts", type=Path, required=True, help=facts_help)
    parser.add_argument("--out", type=Path, required=True, help="output folder (opassess/data/kb)")
    args = parser.parse_args(argv)
    print(build(args.facts, args.out))
    return 0
