"""Compile ascend_comm_figures.tsv into opassess/data/kb/interconnect.json: per product, the link tiers a collective
crosses (bandwidth, per-step latency, efficiency, the ranks a tier reaches) and the launch cost of a communication op.

Run:  python tools/kb_interconnect.py --facts ../shared/reference/ascend --out opassess/data/kb
(`make kb` runs it.)

The figures are Huawei's performance model's (msModeling TensorCast `device.py`, `comm_analytic.py`): modelled
values, not measurements. Every value cites its table line and column (`ascend_comm_figures.tsv:4:value`; a value read
from a row's notes cites `:notes`). Bandwidths are unidirectional GB/s, written x 1e9 B/s here.

Which row is which tier is a parsing aid in this file (TIERS: product, the row's product prefix, scope and item
words); every number still comes from its row. Tiers are listed from the nearest to the farthest: a collective whose
ranks span more devices than a tier reaches crosses the next one. Atlas A3 figures are per die (its device profile
is per die: a rank is a die).
"""
from __future__ import annotations

import re
from pathlib import Path

from tables import missing, numbered_rows, run, sources, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
TABLE = "ascend_comm_figures.tsv"
OUTPUT = "interconnect.json"
GIGA = 1e9

# (product of products.toml, tier name, ranks it reaches, full mesh?, bandwidth row, latency row or None (notes of
# the bandwidth row), efficiency row or None (notes)); a row is (product prefix, scope, words of the item).
TIERS = (
    ("Atlas A2", "HCCS", 8, True, ("Atlas A2 (Atlas 800T", "intra-node", "HCCS bandwidth"),
     ("Atlas A2 (8-NPU", "intra-node", "HCCS latency"), ("Atlas A2 (8-NPU", "intra-node", "communication efficiency")),
    ("Atlas A2", "RoCE", 1024, False, ("Atlas A2 (8-NPU", "inter-node", "RoCE/CLOS bandwidth"),
     ("Atlas A2 (8-NPU", "inter-node", "CLOS latency"), None),
    ("Atlas A3", "SIO", 2, False, ("Atlas A3 die (", "intra-package", "SIO die-to-die"), None, None),
    ("Atlas A3", "HCCS", 16, False, ("Atlas A3 die", "intra-node", "HCCS bandwidth per die"), None, None),
    ("Atlas A3", "HCCS supernode", 768, False,
     ("Atlas A3 / Atlas 900 A3 SuperPoD", "supernode", "HCCS bandwidth per die"), None, None),
    ("Ascend 950", "UB", 4, True, ("Atlas 350 (A5)", "intra-node", "UB full-mesh"), None, None),
    ("Ascend 950", "PCIe", 8, False, ("Atlas 350 (A5)", "intra-node", "PCIe to CPU"), None, None),
)
LAUNCH = {"Atlas A2": "Atlas A2 / A3", "Atlas A3": "Atlas A2 / A3", "Ascend 950": "Atlas 350 (A5)"}
NOTES = {
    "Atlas A3": "per die (the device profile is per die): a rank is a die; two dies share a package over SIO",
    "Ascend 950": "Atlas 350 figures; beyond 8 devices the table gives only a CPU-CPU link: larger groups use the "
                  "PCIe tier's figures (said in the layout's notes)",
}
_LATENCY = re.compile(r"latency (\d+(?:\.\d+)?) us")
_EFFICIENCY = re.compile(r"efficiency (\d+(?:\.\d+)?)(?: x (\d+(?:\.\d+)?))?")


def cite(line: int, column: str) -> str:
    return f"{TABLE}:{line}:{column}"


def find(rows: list[tuple[int, dict[str, str]]], key: tuple[str, str, str]) -> tuple[int, dict[str, str]]:
    prefix, scope, words = key
    found = [(n, r) for n, r in rows if r["product"].startswith(prefix) and r["scope"] == scope and words in r["item"]]
    if len(found) != 1:
        raise SystemExit(f"kb_interconnect: {TABLE}: {len(found)} rows for {key} (expected 1)")
    return found[0]


def number(text: str, line: int, column: str) -> float:
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        raise SystemExit(f"kb_interconnect: {cite(line, column)}: not a number: {text!r}") from None


def from_notes(pattern: re.Pattern, line: int, row: dict[str, str], what: str) -> tuple[float, str]:
    match = pattern.search(row["notes"])
    if not match:
        raise SystemExit(f"kb_interconnect: {cite(line, 'notes')}: no {what}")
    value = float(match.group(1)) * (float(match.group(2)) if match.lastindex and match.lastindex > 1 and
                                     match.group(2) else 1.0)
    return round(value, 6), cite(line, "notes")


def build_tiers(rows: list[tuple[int, dict[str, str]]]) -> dict[str, dict]:
    products: dict[str, dict] = {}
    for product, name, ranks, mesh, bw_key, lat_key, eff_key in TIERS:
        line, row = find(rows, bw_key)
        if not row["unit"].startswith("GB/s"):
            raise SystemExit(f"kb_interconnect: {cite(line, 'unit')}: expected GB/s, got {row['unit']!r}")
        tier = {"name": name, "ranks": ranks, "full_mesh": mesh,
                "bandwidth": number(row["value"], line, "value") * GIGA, "cite": {"bandwidth": cite(line, "value")}}
        if mesh:  # comm_analytic scales a full mesh's bandwidth by (group - 1) / (ranks - 1) (A2 row's notes)
            tier["cite"]["full_mesh"] = cite(line, "topology")
        if lat_key is not None:
            lat_line, lat_row = find(rows, lat_key)
            tier["latency_us"] = number(lat_row["value"], lat_line, "value")
            tier["cite"]["latency_us"] = cite(lat_line, "value")
            source = (lat_line, lat_row)
        else:
            tier["latency_us"], tier["cite"]["latency_us"] = from_notes(_LATENCY, line, row, "latency")
            source = (line, row)
        if eff_key is not None:
            eff_line, eff_row = find(rows, eff_key)
            tier["efficiency"] = number(eff_row["value"], eff_line, "value")
            tier["cite"]["efficiency"] = cite(eff_line, "value")
        else:
            tier["efficiency"], tier["cite"]["efficiency"] = from_notes(_EFFICIENCY, *source, "efficiency")
        tier["source"] = row["source"]
        products.setdefault(product, {"tiers": []})["tiers"].append(tier)
    for product, prefix in LAUNCH.items():
        line, row = find(rows, (prefix, "launch", "static cost per communication op"))
        products[product]["launch_us"] = number(row["value"], line, "value")
        products[product]["cite_launch"] = cite(line, "value")
        if product in NOTES:
            products[product]["note"] = NOTES[product]
    return products


def formula(rows: list[tuple[int, dict[str, str]]]) -> str:
    line, _row = find(rows, ("(model)", "formula", "all_reduce"))
    return cite(line, "value")


def build(facts: Path, out: Path) -> dict:
    """Read the table under `facts`, write `out`/interconnect.json, return its provenance part."""
    missing(facts, (TABLE,), "kb_interconnect")
    comments, rows = numbered_rows(facts / TABLE)
    if not comments:
        raise SystemExit(f"kb_interconnect: {facts / TABLE}: expected a '#' source line first")
    content = {
        "format": FORMAT,
        "generator": "tools/kb_interconnect.py",
        "generator_version": GENERATOR_VERSION,
        "sources": sources(facts, {"comm_figures": TABLE}, {"comm_figures": len(rows)}),
        "conventions": {"bandwidth": "B/s = the GB/s column x 1e9, unidirectional, per device (per die on A3)",
                        "kind": "modelled values of Huawei's performance model (msModeling TensorCast), not "
                                "measurements",
                        "formulas": formula(rows)},
        "products": build_tiers(rows),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"interconnect: {build(facts, out)['sources']['comm_figures']['rows']} "
               f"rows of {TABLE}", argv, facts_help="folder with the Ascend fact tables")


if __name__ == "__main__":
    raise SystemExit(main())
