"""Compile the torch / torch_npu / CANN version table into opassess/data/kb/versions.json.

Run:  python tools/kb_versions.py --facts ../shared/reference/ascend --out opassess/data/kb
(`make kb` runs it after the other generators.)

From version_matrix.tsv: every released torch_npu wheel with its torch, product version (7.3.0, 26.1.0, ...), CANN
and Python versions and line status (`releases`), the recommended combination and the driver/firmware row
(`recommended`, `driver`); from third_party_kernel_libs.tsv: the features whose facts state a minimum torch_npu
product version and CANN (`requirements`, e.g. npu_fusion_attention's `sink=` needs torch_npu 7.3.0 / CANN 8.5.0+).
Every entry carries its TSV line (`row`) so a report can cite "version_matrix.tsv:13". `generated_at` is kept when
an identical rebuild would change only it.
"""
from __future__ import annotations

import re
from pathlib import Path

from tables import missing, numbered_rows, run, sources, sources_summary, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
OUTPUT = "versions.json"
TABLES = {"versions": "version_matrix.tsv", "libraries": "third_party_kernel_libs.tsv"}
_WHEEL = re.compile(r"^\d+\.\d+\.\d+(\.post\d+|\.rc\d+)?$")
_CANN = re.compile(r"CANN (\d+\.\d+\.(?:\d+|RC\d+|X))", re.IGNORECASE)
# "(attention sink (sink=, torch_npu 7.3.0 / CANN 8.5.0+)": a feature, its parameter and the versions it needs
_REQUIREMENT = re.compile(r"([A-Za-z][\w ./-]*?) \((\w+)=, torch_npu (\d+\.\d+\.\d+) / CANN (\d+\.\d+\.\d+)\+?\)")
_OP = re.compile(r"torch_npu\.(npu_\w+)")


def _cann(text: str) -> str | None:
    found = _CANN.search(text)
    return found.group(1) if found else None


def build_releases(rows) -> list[dict]:
    """Each released wheel (summary rows and the branch-less tr5 rows aside), newest torch first as in the table."""
    out = []
    for number, row in rows:
        wheel = row["torch_npu_wheel"]
        if not _WHEEL.match(wheel) or row["gitcode_branch"].startswith(("master", "(")):  # planned, not released
            continue
        out.append({"wheel": wheel, "branch": row["gitcode_branch"] or None, "torch": row["torch"],
                    "product_version": row["torch_npu_product_version"] or None, "cann": _cann(row["cann"]),
                    "cann_text": row["cann"], "python": row["python"], "status": row["line_status"],
                    "released": row["line_release_date"] or None, "follow_up": row["line_followup_or_eol"] or None,
                    "row": number})
    return out


def build_summary(rows) -> dict:
    """The recommended combination and the driver/firmware statement (the table's summary rows)."""
    summary: dict = {}
    for number, row in rows:
        wheel = row["torch_npu_wheel"]
        if "(recommended)" in wheel:
            summary["recommended"] = {"wheel": wheel.split()[0], "torch": row["torch"],
                                      "product_version": row["torch_npu_product_version"], "cann": _cann(row["cann"]),
                                      "python": row["python"], "row": number}
        elif wheel.startswith("(driver/firmware)"):
            text = row["notes"] or row["cann"]
            summary["driver"] = {"text": text, "stated": not text.lower().startswith("no "), "row": number}
    return summary


def build_requirements(rows, table: str) -> list[dict]:
    """Features whose route text states the torch_npu product version and CANN they need."""
    out = []
    for number, row in rows:
        text = row["npu_route"]
        for found in _REQUIREMENT.finditer(text):
            before = text[:found.start()]
            ops = _OP.findall(before)
            out.append({"feature": found.group(1).strip(), "op": ops[-1] if ops else None, "param": found.group(2),
                        "product_version": found.group(3), "cann": found.group(4), "row": number, "table": table})
    return out


def upstream(comment: str | None) -> str:
    return comment or "version_matrix.tsv (no source line)"


def build(facts: Path, out: Path) -> dict:
    """Read the two tables under `facts`, write `out`/versions.json, return its provenance part."""
    missing(facts, (*TABLES.values(), "README.md"), "kb_versions")
    read = {key: numbered_rows(facts / name) for key, name in TABLES.items()}
    rows = {key: table for key, (_, table) in read.items()}
    content = {
        "format": FORMAT,
        "generator": "tools/kb_versions.py",
        "generator_version": GENERATOR_VERSION,
        "upstream": upstream(next(iter(read["versions"][0]), None)),
        "sources": sources(facts, TABLES, {key: len(table) for key, table in rows.items()}),
        "releases": build_releases(rows["versions"]),
        **build_summary(rows["versions"]),
        "requirements": build_requirements(rows["libraries"], TABLES["libraries"]),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources", "upstream"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"version facts: {sources_summary(build(facts, out)['sources'])}", argv)


if __name__ == "__main__":
    raise SystemExit(main())
