"""Compile the kernel-level Ascend facts (aclnn dtypes per product, ATen -> aclnn map) into opassess/data/kb/aclnn.json.

Run:  python tools/kb_kernels.py --facts ../shared/reference/ascend --out opassess/data/kb
(tools/build_kb.py calls `build_aclnn` too, so one KB build writes every file.)

Two tables of ../shared/reference/ascend (see its README, "Kernel-level facts"):
  cann_aclnn_dtypes.tsv        one row per (aclnn API, parameter): dtypes, per-product support and exclusions
  op_plugin_aten_to_aclnn.tsv  one row per op-plugin kernel function: the aclnn APIs it launches

Output (compact, deterministic JSON; `opassess.kb.kernels` reads it):
  {"format": 1,
   "products": ["950", "A3", "A2", "310B", "310P", "910"],
   "aten":  {"mm": {"apis": ["aclnnMatmulWeightNz", "aclnnMm"], "source": "own", "fallback": true,
                    "other_aclop": false, "match": "signature", "section": "official"},
             "_weight_norm": {..., "source": "delegated", "via": ["Tensor.div"]}, ...},
   "aclnn": {"aclnnMm": {"support": "yyyn yy"-style string over `products` (y / n / - = doc does not name it),
                         "params": [{"name": "self", "io": "input", "dtypes": [...],
                                     "excluded": {"910": ["bfloat16"], ...}, "notes": ["from-section"]}, ...],
                         "doc": [repo, path, commit, doc_date]}, ...},
   "provenance": {...}}
Only input / inout parameters are kept (outputs and attributes say nothing about what a model feeds in); their
order is the prototype's, so the first one with dtypes is the data carrier. Nothing else is dropped: a parameter
without dtypes stays (host scalars, "dtype same as X" in its notes). The tables hold no Chinese prose.
The file carries no wall-clock time, so a rebuild is byte-identical; provenance.json (written by build_kb.py in
the same run) holds the generation date.
"""
from __future__ import annotations

import time
from pathlib import Path

from tables import missing, provenance_rows, read_tsv, run, sources, write_json

GENERATOR_VERSION = "1.0"
FORMAT = 1
OUTPUT = "aclnn.json"
TABLES = {"aclnn": "cann_aclnn_dtypes.tsv", "aten": "op_plugin_aten_to_aclnn.tsv"}
PRODUCTS = ("950", "A3", "A2", "310B", "310P", "910")
SUPPORT_MARKS = {"✔": "y", "✘": "n", "": "-"}
INPUT_IO = ("input", "inout")  # "input(optional)" counts; "output", "attr" do not
# How op-plugin tied a C++ kernel to its schema, strongest first (build keeps the strongest of duplicate rows).
MATCH_STRENGTH = ("signature", "yaml-gen_opapi", "name-arity", "name-only", "signature-ambiguous", "no-yaml-entry")


def _split(text: str, sep: str = ",") -> list[str]:
    return [part.strip() for part in text.split(sep) if part.strip()]


# ------------------------------------------------------------------ aclnn APIs


def _param(row: dict[str, str]) -> dict:
    """One input parameter row; empty fields are left out (an empty exclusion means none stated)."""
    param: dict = {"name": row["param"], "io": row["io"]}
    dtypes, notes = _split(row["dtypes"]), _split(row["notes"], ";")
    excluded = {p: _split(row[f"excluded_dtypes:{p}"]) for p in PRODUCTS if row[f"excluded_dtypes:{p}"].strip()}
    for key, value in (("dtypes", dtypes), ("excluded", excluded), ("notes", notes)):
        if value:
            param[key] = value
    return param


def build_apis(rows: list[dict[str, str]]) -> tuple[dict, dict]:
    """aclnn API -> {support, params (inputs only), doc}; an API documented twice keeps its newest doc."""
    docs: dict[str, dict[str, dict]] = {}  # api -> doc path -> entry
    for row in rows:
        entry = docs.setdefault(row["aclnn_api"], {}).setdefault(row["path"], {
            "support": "".join(SUPPORT_MARKS[row[f"support:{p}"].strip()] for p in PRODUCTS),
            "params": [], "doc": [row["repo"], row["path"], row["commit"], row["doc_date"]]})
        if row["io"].split("(")[0] in INPUT_IO:
            entry["params"].append(_param(row))
    apis: dict[str, dict] = {}
    duplicated = 0
    for api, by_path in sorted(docs.items()):
        # aclnnEmbeddingDenseBackward has an old and a v2 doc: the newer doc (date, then path) describes the kernel.
        ranked = sorted(by_path.values(), key=lambda e: (e["doc"][3], e["doc"][1]), reverse=True)
        apis[api] = ranked[0]
        if len(ranked) > 1:
            duplicated += 1
            apis[api]["other_docs"] = [e["doc"][1] for e in ranked[1:]]
    params = [p for e in apis.values() for p in e["params"]]
    counts = {
        "aclnn_rows": len(rows),
        "aclnn_apis": len(apis),
        "aclnn_docs": len({(r["repo"], r["path"]) for r in rows}),
        "aclnn_apis_with_two_docs": duplicated,
        "aclnn_input_params": len(params),
        "aclnn_input_params_with_dtypes": sum(1 for p in params if "dtypes" in p),
        "aclnn_input_params_with_exclusions": sum(1 for p in params if "excluded" in p),
    }
    return apis, counts


# ------------------------------------------------------------------ ATen -> aclnn


def _strength(match: str) -> int:
    for rank, prefix in enumerate(MATCH_STRENGTH):
        if match.startswith(prefix):
            return rank
    return len(MATCH_STRENGTH)


def build_aten(rows: list[dict[str, str]]) -> tuple[dict, dict]:
    """ATen overload -> its kernel's own aclnn APIs; rows of one overload (both sides of #if) are merged."""
    aten: dict[str, dict] = {}
    best: dict[str, int] = {}
    for row in rows:
        name = row["aten"].strip()
        if not name:  # op_api helper without a schema: no model op can reach it by name
            continue
        entry = aten.setdefault(name, {"apis": [], "source": row["aclnn_source"], "fallback": False,
                                       "other_aclop": False, "match": row["aten_match"], "section": row["section"]})
        for api in _split(row["aclnn_apis"]):
            if api not in entry["apis"]:
                entry["apis"].append(api)
        if row["aclnn_source"] == "delegated":  # the ops it calls instead (opassess/kb/main_api.py reads them)
            via = entry.setdefault("via", [])
            via += [callee for callee in _split(row.get("via", "")) if callee not in via]
        entry["fallback"] = entry["fallback"] or row["fallback_aclop"] == "yes"
        entry["other_aclop"] = entry["other_aclop"] or row["other_acl_op_path"] == "yes"
        strength = _strength(row["aten_match"])
        if strength < best.get(name, len(MATCH_STRENGTH) + 1):
            best[name] = strength
            entry["match"], entry["source"] = row["aten_match"], row["aclnn_source"]
    counts = {
        "aten_rows": len(rows),
        "aten_helper_rows": sum(1 for r in rows if not r["aten"].strip()),
        "aten_overloads": len(aten),
        "aten_overloads_with_apis": sum(1 for e in aten.values() if e["apis"]),
    }
    return dict(sorted(aten.items())), counts


# ------------------------------------------------------------------ provenance and output


def readme_upstream(readme: Path) -> list[dict[str, str]]:
    """The repositories and commits of the README's "Kernel-level facts" > "Provenance" table."""
    return [{"repository": cells[0], "commit": cells[1], "commit_date": cells[2], "read": cells[3]}
            for cells in provenance_rows(readme, "### Provenance", within="## Kernel-level facts") if len(cells) >= 4]


def compile_tables(facts: Path) -> dict:
    """Read both tables under `facts` and return the aclnn.json document."""
    missing(facts, (*TABLES.values(), "README.md"), "kb_kernels")
    rows = {key: read_tsv(facts / name) for key, name in TABLES.items()}
    apis, api_counts = build_apis(rows["aclnn"])
    aten, aten_counts = build_aten(rows["aten"])
    called = {api for e in aten.values() for api in e["apis"]}
    dates = sorted({r["doc_date"] for r in rows["aclnn"] if r["doc_date"]})
    provenance = {
        "generator": "tools/kb_kernels.py",
        "generator_version": GENERATOR_VERSION,
        "doc_dates": [dates[0], dates[-1]] if dates else [],
        "upstream": readme_upstream(facts / "README.md"),
        "sources": sources(facts, TABLES, {key: len(table) for key, table in rows.items()}),
        "counts": {**api_counts, **aten_counts, "aclnn_apis_called": len(called),
                   "aclnn_apis_called_with_doc": len(called & apis.keys())},
    }
    return {"format": FORMAT, "products": list(PRODUCTS), "aten": aten, "aclnn": apis, "provenance": provenance}


def write_aclnn(document: dict, out: Path) -> int:
    """Write the aclnn.json document under `out`; return its size in bytes."""
    out.mkdir(parents=True, exist_ok=True)
    return write_json(out / OUTPUT, document)


def build_aclnn(facts: Path, out: Path) -> int:
    """Write out/aclnn.json from the tables under `facts`; return its size in bytes."""
    return write_aclnn(compile_tables(facts), out)


def main(argv: list[str] | None = None) -> int:
    def build(facts: Path, out: Path) -> str:
        started = time.perf_counter()
        document = compile_tables(facts)
        size = write_aclnn(document, out)
        counts = document["provenance"]["counts"]
        return (f"{OUTPUT}: {size} bytes, {counts['aten_overloads']} ATen overloads, {counts['aclnn_apis']} aclnn APIs "
                f"({counts['aclnn_apis_called_with_doc']}/{counts['aclnn_apis_called']} called APIs documented), "
                f"{time.perf_counter() - started:.2f} s")

    return run(__doc__, build, argv)


if __name__ == "__main__":
    raise SystemExit(main())
