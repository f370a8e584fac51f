"""Generate opassess's knowledge base (opassess/data/kb/*.json) from the Ascend fact tables.

Run:  python tools/build_kb.py --facts ../shared/reference/ascend --out opassess/data/kb

The tables are read, turned into structured facts (version ranges, support flags, dtype lists,
parameter rules) and written as compact, deterministic JSON, one file per table so the product can
load each lazily. No Chinese prose is copied: a limitation the parser cannot structure is kept as a
category tag and its clause index under the limitation's id (a sha256 prefix of its text).
"""
from __future__ import annotations

import hashlib
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kb_profiler  # noqa: E402
import kb_routes  # noqa: E402
import kb_source  # noqa: E402
from kb_kernels import build_aclnn  # noqa: E402
from limitations import parse_limitation  # noqa: E402
from tables import missing, provenance_rows, read_tsv, run, sources, timestamp, write_json  # noqa: E402

GENERATOR_VERSION = "1.0"
KB_FORMAT = 1

TABLES = {
    "kernels": "npu_aten_ops.tsv",
    "custom_ops": "npu_custom_ops.tsv",
    "apis": "npu_native_api_support.tsv",
    "checks": "npu_op_check_messages.tsv",
    "mstt": "mstt_api_support_lists.tsv",
    "onnx_cann": "msit_onnx_to_cann_op_map.tsv",
}

# Product columns of npu_native_api_support.tsv, in the order the KB stores them.
PRODUCT_COLUMNS = (
    ("Atlas A2", "support:Atlas A2 训练系列产品"),
    ("Atlas A3", "support:Atlas A3 训练系列产品"),
    ("Ascend 950DT", "support:Ascend 950DT"),
    ("Atlas training", "support:Atlas 训练系列产品"),
)
SUPPORT_MARKS = {"✔": "y", "&#10004;": "y", "✘": "n", "": "-"}


def short_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


# ------------------------------------------------------------------ versions


def _version(token: str) -> str:
    token = token.strip()
    if not re.fullmatch(r"v\d+\.\d+", token):
        raise ValueError(f"unexpected version token {token!r}")
    return token[1:]


def parse_versions(text: str) -> list[list[str | None]]:
    """'all_version' -> [[None, None]]; '[v2.1..newest]' -> [['2.1', None]];
    'v2.1,v2.2' -> [['2.1','2.1'],['2.2','2.2']]; '' -> []."""
    text = text.strip()
    if not text:
        return []
    if text in ("all_version", "True", "true"):
        return [[None, None]]
    ranges: list[list[str | None]] = []
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"\[(v[\d.]+)\.\.(v[\d.]+|newest)\]", part)
        if m:
            hi = None if m.group(2) == "newest" else _version(m.group(2))
            ranges.append([_version(m.group(1)), hi])
        else:
            v = _version(part)
            ranges.append([v, v])
    return ranges


def merge_ranges(a: list, b: list) -> list:
    out = [list(r) for r in a]
    for r in b:
        if r not in out:
            out.append(list(r))
    return sorted(out, key=lambda r: (r[0] or "", r[1] or "~"))


def parse_flags(text: str) -> dict[str, str]:
    flags: dict[str, str] = {}
    for token in text.split():
        key, _, value = token.partition("=")
        flags[key] = value or "True"
    return flags


def parse_notes(text: str) -> dict[str, str]:
    notes: dict[str, str] = {}
    for part in text.split(";"):
        part = part.strip()
        if part.startswith("deprecated->"):
            notes["deprecated"] = part[len("deprecated->"):]
        elif part.startswith("npu_derivative="):
            notes["npu_derivative"] = part[len("npu_derivative="):]
    return notes


# ------------------------------------------------------------------ kernels


def build_kernels(rows: list[dict[str, str]]) -> tuple[dict, dict]:
    kernels: dict[str, dict] = {}
    for row in rows:
        name = row["aten_op_name"]
        flags = parse_flags(row["flags"])
        notes = parse_notes(row["notes"])
        aclop = parse_versions(row["acl_op_versions"])
        opapi = parse_versions(row["op_api_versions"])
        # Rows from torch_npu's own yaml carry no version columns: torch_npu implements them itself
        # for every release it ships, so they count as available in all versions (path "npu").
        native = row["source"].startswith("pytorch:")
        entry = kernels.get(name)
        if entry is None:
            entry = {"base": row["base_name"], "overload": row["overload"], "sections": [], "aclop": [], "opapi": [],
                     "npu": [], "structured": None, "deprecated": None, "exposed": [], "delegate": None}
            kernels[name] = entry
        if row["section"] not in entry["sections"]:
            entry["sections"].append(row["section"])
        entry["aclop"] = merge_ranges(entry["aclop"], aclop)
        entry["opapi"] = merge_ranges(entry["opapi"], opapi)
        if native and not aclop and not opapi:
            entry["npu"] = [[None, None]]
        gen = row["structured_codegen"].strip()
        if gen.startswith("gen_opapi:"):
            entry["structured"] = gen[len("gen_opapi:"):]
        if "deprecated" in notes:
            entry["deprecated"] = notes["deprecated"]
        if "exposed" in flags:
            entry["exposed"] = merge_ranges(entry["exposed"], parse_versions(flags["exposed"]))
        if "structured_delegate" in flags:
            entry["delegate"] = flags["structured_delegate"]
    compact = {name: {k: v for k, v in e.items() if v not in (None, [], "")} for name, e in sorted(kernels.items())}
    counts = {
        "kernel_overloads": len(compact),
        "kernel_rows": len(rows),
        "structured_codegen": sum(1 for e in compact.values() if "structured" in e),
        # gen_opapi:aclnnX names the CANN kernel; gen_opapi:inherit:X.out reuses the out= overload's kernel.
        "structured_codegen_aclnn": sum(1 for e in compact.values() if e.get("structured", "").startswith("aclnn")),
        "deprecated": sum(1 for e in compact.values() if "deprecated" in e),
    }
    return compact, counts


def build_custom_ops(rows: list[dict[str, str]]) -> tuple[dict, dict]:
    doc_column = next(c for c in rows[0] if c.startswith("doc_in_"))
    ops: dict[str, dict] = {}
    for row in rows:
        name = row["op_name"]
        notes = parse_notes(row["notes"])
        library = "atb" if row["section"].startswith("atb") else "npu"
        entry = ops.setdefault(name, {"base": row["base_name"], "sections": [], "schema": row["signature"],
                                      "aclop": [], "opapi": [], "exposed": [], "deprecated": None,
                                      "documented": False, "library": library})
        section = row["section"].split(" ")[0]
        if section not in entry["sections"]:
            entry["sections"].append(section)
        entry["aclop"] = merge_ranges(entry["aclop"], parse_versions(row["acl_op_versions"]))
        entry["opapi"] = merge_ranges(entry["opapi"], parse_versions(row["op_api_versions"]))
        entry["exposed"] = merge_ranges(entry["exposed"], parse_versions(row["exposed"]))
        if "deprecated" in notes:
            entry["deprecated"] = notes["deprecated"]
        entry["documented"] = entry["documented"] or row[doc_column].strip() == "yes"
    compact = {name: {k: v for k, v in e.items() if v not in (None, [], "", False)} for name, e in sorted(ops.items())}
    return compact, {"custom_ops": len(compact), "custom_op_rows": len(rows)}


# ------------------------------------------------------------------ native API support


def build_apis(rows: list[dict[str, str]]) -> tuple[dict, dict, dict]:
    """api -> {doc_version: [support string, limitation id or null, doc_module]}, plus the limitation table."""
    apis: dict[str, dict] = defaultdict(dict)
    limitations: dict[str, dict] = {}
    rows_with_text = 0
    for row in rows:
        support = "".join(SUPPORT_MARKS[row[col].strip()] for _, col in PRODUCT_COLUMNS)
        text = row["limitations_zh"].strip()
        lim_id = None
        if text:
            rows_with_text += 1
            lim_id = short_id(text)
            if lim_id not in limitations:
                limitations[lim_id] = parse_limitation(text)
        version = row["pytorch_version"].strip()
        api = row["api"].strip()
        previous = apis[api].get(version)
        if previous is not None and previous[:2] != [support, lim_id]:
            # The same API documented twice on one page set: keep the more restrictive support string.
            support = "".join(min(a, b, key="n-y".index) for a, b in zip(previous[0], support, strict=False))
            lim_id = lim_id or previous[1]
        apis[api][version] = [support, lim_id, row["doc_module"].strip()]
    total_clauses = sum(lim["clauses"] for lim in limitations.values())
    unparsed = sum(len(lim["unparsed"]) for lim in limitations.values())
    rules = sum(len(lim["rules"]) for lim in limitations.values())
    notes = sum(len(lim["notes"]) for lim in limitations.values())
    fully = sum(1 for lim in limitations.values() if not lim["unparsed"])
    row_unparsed = sum(1 for api in apis.values() for v in api.values() if v[1] and limitations[v[1]]["unparsed"])
    counts = {
        "api_rows": len(rows),
        "apis": len(apis),
        "api_versions": sorted({v for api in apis.values() for v in api}, key=_version_key),
        "limitation_rows": rows_with_text,
        "limitation_texts": len(limitations),
        "limitation_texts_fully_parsed": fully,
        "limitation_clauses": total_clauses,
        "limitation_clauses_parsed": total_clauses - unparsed,
        "limitation_clauses_unparsed": unparsed,
        "limitation_rules": rules,
        "limitation_notes": notes,
        "limitation_rows_with_unparsed": row_unparsed,
        "unparsed_by_tag": dict(sorted(Counter(u["tag"] for lim in limitations.values()
                                               for u in lim["unparsed"]).items())),
    }
    return dict(sorted(apis.items())), dict(sorted(limitations.items())), counts


def _version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


# ------------------------------------------------------------------ op check messages

_CHECK_CLASSES = (
    ("float64-unsupported",
     re.compile(r"(does|dose) not support float64|not support double|double type .* not supported", re.I)),
    ("float64-cast", re.compile(r"(double|float64).*(replace|cast)|(replace|cast).*(double|float64)", re.I)),
    ("int64-cast-int32", re.compile(r"int64.*cast to int32", re.I)),
    ("aicpu-fallback", re.compile(r"running on AiCpu", re.I)),
    ("dilation-limit", re.compile(r"dilation", re.I)),
    ("padding-limit", re.compile(r"padding|pads", re.I)),
    ("stride-limit", re.compile(r"stride", re.I)),
    ("ndim-limit", re.compile(r"\d\s*D\b|dimension|\bdims?\b", re.I)),
    ("layout-limit", re.compile(r"format|contiguous|layout", re.I)),
    ("dtype-limit", re.compile(r"dtype|type of|must be (half|float|int)|only support(ed)? (int|float|half)", re.I)),
)


def classify_check(macro: str, errcode: str, message: str) -> str:
    for name, pattern in _CHECK_CLASSES:
        if pattern.search(message):
            return name
    if errcode == "TYPE":
        return "dtype-limit"
    if errcode == "NOT_SUPPORT":
        return "not-supported"
    if "WARN" in macro:
        return "warning"
    return "other"


def file_to_base_op(path: str, bases: set[str]) -> str | None:
    """'aclops/MaxPool2dWithIndicesKernelNpu.cpp' -> 'max_pool2d_with_indices' when that base op has a kernel."""
    stem = Path(path).name
    stem = re.sub(r"(KernelNpu(OpApi)?|KernelOpApi|NpuOpApi|Kernel|OpApi|Npu)+\.cpp$", "", stem)
    stem = re.sub(r"\.cpp$", "", stem)
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stem).lower()
    snake = re.sub(r"(?<=[a-z])_(?=\dd\b)", "", snake)  # max_pool_2d -> max_pool2d (defensive)
    for candidate in (snake, f"_{snake}", f"native_{snake}", f"npu_{snake}", snake.replace("_npu", ""),
                      snake.rstrip("_"), snake.replace("_backward", "_backward_data")):
        if candidate in bases:
            return candidate
    return None


def build_checks(rows: list[dict[str, str]], bases: set[str]) -> tuple[dict, dict]:
    file_col = next(c for c in rows[0] if c.startswith("file"))
    msg_col = next(c for c in rows[0] if c.startswith("message"))
    by_file: dict[str, dict] = {}
    classes: Counter = Counter()
    for row in rows:
        path = row[file_col]
        cls = classify_check(row["macro"], row["errcode"], row[msg_col])
        classes[cls] += 1
        entry = by_file.setdefault(path, {"op": file_to_base_op(path, bases), "checks": []})
        entry["checks"].append([int(row["line"]), row["macro"], row["errcode"] or None, cls])
    keyed = sum(1 for e in by_file.values() if e["op"])
    counts = {"check_rows": len(rows), "check_files": len(by_file), "check_files_keyed_to_op": keyed,
              "check_classes": dict(sorted(classes.items()))}
    return dict(sorted(by_file.items())), counts


# ------------------------------------------------------------------ mstt and ONNX


def build_mstt(rows: list[dict[str, str]]) -> tuple[dict, dict]:
    versions = sorted({r["pytorch_version"] for r in rows}, key=_version_key)
    table: dict[str, list[str]] = {}
    cleaned = 0
    for row in rows:
        # A few list entries carry a remark glued to the API name: keep only the dotted identifier.
        api = re.match(r"[A-Za-z_][A-Za-z0-9_.]*", row["api"].strip()).group(0)
        cleaned += api != row["api"].strip()
        flags = table.setdefault(api, ["-"] * len(versions))
        mark = "s" if row["classification_in_tool"] == "supported" else "u"
        index = versions.index(row["pytorch_version"])
        if flags[index] != "u":  # unsupported wins when an API is on both lists
            flags[index] = mark
    return {"versions": versions, "apis": {k: "".join(v) for k, v in sorted(table.items())}}, {
        "mstt_rows": len(rows), "mstt_apis": len(table), "mstt_versions": versions, "mstt_names_cleaned": cleaned}


def build_onnx(rows: list[dict[str, str]]) -> tuple[dict, dict]:
    """ONNX op -> CANN op at the newest opset that names it (PartitionedCall = lowered as a subgraph)."""
    table: dict[str, dict] = {}
    for row in rows:
        domain, opset = row["domain"].strip(), row["opset"].strip()
        source, cann = row["source_op"].strip(), row["cann_op"].strip()
        if not domain or not source or not cann:
            continue
        key = f"{domain}::{source}" if domain != "ai.onnx" else source
        level = int(opset) if opset.isdigit() else 0
        current = table.get(key)
        if current is None or level >= current["opset"]:
            table[key] = {"opset": level, "cann": cann}
    named = sum(1 for v in table.values() if v["cann"] != "PartitionedCall")
    return dict(sorted(table.items())), {"onnx_rows": len(rows), "onnx_ops": len(table), "onnx_ops_named": named}


# ------------------------------------------------------------------ provenance


def parse_readme_provenance(readme: Path) -> list[dict[str, str]]:
    return [{"repository": cells[0], "commit": cells[1], "read": cells[2]}
            for cells in provenance_rows(readme, "## Provenance")]


def newest_kernel_version(readme: Path) -> str | None:
    m = re.search(r"newest is v(\d+\.\d+)", readme.read_text(encoding="utf-8"))
    return m.group(1) if m else None


# ------------------------------------------------------------------ main


def build(facts: Path, out: Path) -> dict:
    """Read every table under `facts`, write the KB files under `out`, return the provenance record."""
    missing(facts, (*TABLES.values(), "README.md"), "build_kb")
    rows = {key: read_tsv(facts / name) for key, name in TABLES.items()}
    kernels, k_counts = build_kernels(rows["kernels"])
    custom, c_counts = build_custom_ops(rows["custom_ops"])
    apis, limitations, a_counts = build_apis(rows["apis"])
    bases = {e["base"] for e in kernels.values()} | {e["base"] for e in custom.values()}
    checks, ch_counts = build_checks(rows["checks"], bases)
    mstt, m_counts = build_mstt(rows["mstt"])
    onnx, o_counts = build_onnx(rows["onnx_cann"])

    out.mkdir(parents=True, exist_ok=True)
    sizes = {
        "kernels.json": write_json(out / "kernels.json", kernels),
        "custom_ops.json": write_json(out / "custom_ops.json", custom),
        "apis.json": write_json(out / "apis.json", apis),
        "limitations.json": write_json(out / "limitations.json", limitations),
        "checks.json": write_json(out / "checks.json", checks),
        "mstt.json": write_json(out / "mstt.json", mstt),
        "onnx_cann.json": write_json(out / "onnx_cann.json", onnx),
        "aclnn.json": build_aclnn(facts, out),  # kernel-level facts: tools/kb_kernels.py
    }
    provenance = {
        "format": KB_FORMAT,
        "generator": "tools/build_kb.py",
        "generator_version": GENERATOR_VERSION,
        "generated_at": timestamp(),
        "kind": "shipped",
        "products": [p for p, _ in PRODUCT_COLUMNS],
        "kernel_newest_version": newest_kernel_version(facts / "README.md"),
        "upstream": parse_readme_provenance(facts / "README.md"),
        "sources": sources(facts, TABLES, {key: len(table) for key, table in rows.items()}),
        "counts": {**k_counts, **c_counts, **a_counts, **ch_counts, **m_counts, **o_counts},
        "files": sizes,
    }
    provenance["files"]["provenance.json"] = 0
    write_json(out / "provenance.json", provenance)
    kb_source.build(facts, out)  # source_facts.json: the migration-route tables, with their own provenance
    kb_routes.build(facts, out)  # route_facts.json: HCCL, ONNX -> CANN, inference quantisation
    kb_profiler.build(facts, out)  # profiler.json: profiler columns, advisor rules, fallback kernels (own provenance)
    return provenance


def summary(provenance: dict) -> str:
    c = provenance["counts"]
    pct = 100.0 * c["limitation_clauses_parsed"] / max(1, c["limitation_clauses"])
    lines = [
        f"kernels: {c['kernel_overloads']} ATen overloads ({c['structured_codegen']} structured codegen, "
        f"{c['structured_codegen_aclnn']} of them naming an aclnn kernel; {c['deprecated']} deprecated)",
        f"custom ops: {c['custom_ops']}",
        f"APIs: {c['apis']} documented across torch {', '.join(c['api_versions'])}",
        f"limitations: {c['limitation_texts']} distinct texts on {c['limitation_rows']} rows; "
        f"clauses parsed {c['limitation_clauses_parsed']} / {c['limitation_clauses']} ({pct:.1f}%), "
        f"unparsed {c['limitation_clauses_unparsed']} ({c['limitation_rules']} rules, {c['limitation_notes']} notes); "
        f"texts fully parsed {c['limitation_texts_fully_parsed']} / {c['limitation_texts']}",
        f"unparsed by tag: {c['unparsed_by_tag']}",
        f"op checks: {c['check_rows']} in {c['check_files']} files "
        f"({c['check_files_keyed_to_op']} keyed to an ATen op)",
        f"mstt: {c['mstt_apis']} APIs over torch {', '.join(c['mstt_versions'])}",
        f"ONNX->CANN: {c['onnx_ops']} ops ({c['onnx_ops_named']} with a named CANN op)",
        f"total size: {sum(provenance['files'].values())} bytes",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: summary(build(facts, out)), argv)


if __name__ == "__main__":
    raise SystemExit(main())
