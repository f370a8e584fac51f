"""Compile the profiler-export facts into opassess/data/kb/profiler.json (read by `opassess profile`).

Run:  python tools/kb_profiler.py --facts ../shared/reference/ascend --out opassess/data/kb
(tools/build_kb.py calls `build` too, so `make kb` refreshes it with the rest of the knowledge base.)

Three tables are read:
- profiler_csv_columns.tsv: the columns of msprof `op_summary_*.csv` and the torch_npu profiler's
  `kernel_details.csv` (which renames some of them), the columns that read N/A at the default level (Level0), the
  PMU columns per metric group (`*_` expanded to `aic_` and `aiv_`), the placement values, and the two real
  kernel_details header samples (the block-count column is spelled `Block Dim` there, `Block Num` in the docs);
- msprof_advisor_rules_static_applicable.tsv: the advisor's rules with their thresholds parsed (`col > 0.8`,
  `% 256 != 0`), the condition text kept verbatim (short English);
- npu_op_check_messages.tsv: the kernels that warn they run on the AI CPU for some dtypes (with the cast the message
  advises) or on the host CPU, each with its file:line. Only structured fields are shipped, not the messages.

Every entry carries the table and row line it comes from (header = line 2 for the `#`-headed tables).
`generated_at` is kept from the shipped file when the content is unchanged (SOURCE_DATE_EPOCH overrides it).
"""
from __future__ import annotations

import re
from pathlib import Path

from tables import missing, numbered_rows, run, sha256, sources_summary, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
OUTPUT = "profiler.json"

TABLES = {
    "columns": "profiler_csv_columns.tsv",
    "advisor": "msprof_advisor_rules_static_applicable.tsv",
    "checks": "npu_op_check_messages.tsv",
}

# The role opassess reads each op_summary column for (a parsing aid, not a fact: every column named here must be
# a documented op_summary column, which `build` checks). kernel_details.csv spellings come from the table itself
# ("renamed from X" rows) and from its real header samples (SAMPLE_SPELLINGS).
ROLES = {
    "name": "Op Name", "type": "OP Type", "placement": "Task Type", "start_us": "Task Start Time(us)",
    "duration_us": "Task Duration(us)", "wait_us": "Task Wait Time(us)", "block_dim": "Block Num",
    "mix_block_dim": "Mix Block Num", "op_state": "OP State", "input_shapes": "Input Shapes",
    "input_dtypes": "Input Data Types", "input_formats": "Input Formats", "output_shapes": "Output Shapes",
    "output_dtypes": "Output Data Types", "output_formats": "Output Formats", "device": "Device_id",
    "model_id": "Model ID", "task_id": "Task ID", "stream_id": "Stream ID",
}
KERNEL_ONLY_ROLES = {"step": "Step Id"}  # kernel_details.csv columns op_summary does not have
# op_summary spelling -> the spelling seen in the kernel_details.csv header samples (checked present there).
SAMPLE_SPELLINGS = {"Block Num": "Block Dim", "Mix Block Num": "Mix Block Dim"}


def _expand(column: str) -> list[str]:
    """'*_vec_ratio' -> ['aic_vec_ratio', 'aiv_vec_ratio'] (the table's note: "*_" prefix = aic_ or aiv_)."""
    if column.startswith("*_"):
        return [f"aic_{column[2:]}", f"aiv_{column[2:]}"]
    return [column]


def build_columns(rows: list[tuple[int, dict[str, str]]], table: str) -> dict:
    op_summary = {r["column"]: n for n, r in rows if r["file"].startswith("op_summary")}
    kernel = [(n, r) for n, r in rows if r["file"] == "kernel_details.csv (torch_npu)"]
    samples = {r["file"]: (n, r["column"].split("|")) for n, r in rows if r["file"].startswith("kernel_details.csv (")
               and r["group"] == "sample"}
    sample_columns = {c for _, cols in samples.values() for c in cols}
    renamed = {}
    for n, r in kernel:
        found = re.search(r"renamed from (?:op_summary )?(.+)$", r["role"])
        if found:
            old = found.group(1).strip()
            if old.count(")") > old.count("("):  # "placement (renamed from op_summary Task Type)"
                old = old[:-1]
            renamed[old] = (r["column"], n)
    roles = {}
    for role, column in ROLES.items():
        if column not in op_summary:
            raise SystemExit(f"kb_profiler: {column!r} is not an op_summary column of {table}")
        spellings = [column]
        lines = [op_summary[column]]
        if column in renamed:
            spellings.append(renamed[column][0])
            lines.append(renamed[column][1])
        if column in SAMPLE_SPELLINGS:
            if SAMPLE_SPELLINGS[column] not in sample_columns:
                raise SystemExit(f"kb_profiler: {SAMPLE_SPELLINGS[column]!r} is in no kernel_details sample header")
            spellings.append(SAMPLE_SPELLINGS[column])
            lines += sorted(n for n, cols in samples.values() if SAMPLE_SPELLINGS[column] in cols)
        roles[role] = {"spellings": spellings, "rows": [f"{table}:{n}" for n in lines]}
    for role, column in KERNEL_ONLY_ROLES.items():
        line = next((n for n, r in kernel if r["column"] == column), None)
        if line is None:
            raise SystemExit(f"kb_profiler: {column!r} is not a kernel_details column of {table}")
        roles[role] = {"spellings": [column], "rows": [f"{table}:{line}"]}
    level0 = sorted(c for n, r in rows if r["file"].startswith("op_summary")
                    and "N/A when task_time=l0" in r["condition"] for c in [r["column"]])
    pmu: dict[str, dict] = {}
    for n, r in rows:
        if r["file"].startswith("op_summary") and r["group"] not in ("common", ""):
            for column in _expand(r["column"]):
                entry = pmu.setdefault(column, {"groups": [], "row": f"{table}:{n}"})
                entry["groups"].append(r["group"])
                bound = re.search(r">\s*([0-9.]+)\s+(\S+)", r["role"])
                if bound:
                    entry["above"] = float(bound.group(1))
                    entry["means"] = bound.group(2)
                    entry["formula"] = r["role"].split(";")[0].strip()
    placements = [r["column"] for _, r in rows if r["file"].startswith("Task Type / Accelerator Core value")]
    placement_rows = {r["column"]: f"{table}:{n}" for n, r in rows if r["file"].startswith("Task Type /")}
    return {
        "roles": roles,
        "level0_na": level0,
        "pmu": pmu,
        "placements": {p: placement_rows[p] for p in placements},
        "samples": {name: {"columns": cols, "row": f"{table}:{n}"} for name, (n, cols) in samples.items()},
    }


_ID = {"cube (MatMul) shape affinity": "cube-shape-affinity", "FlashAttention shape affinity": "fa-shape-affinity",
       "cube bound": "cube-bound", "FA bound": "fa-bound", "vector bound": "vector-bound", "block dim": "block-dim",
       "dynamic shape": "dynamic-shape", "AI CPU": "ai-cpu",
       "kernel fusion sequences (GE op types)": "fusion-sequences"}


def build_advisor(rows: list[tuple[int, dict[str, str]]], table: str) -> list[dict]:
    """Each advisor rule with what can be parsed from its condition: column thresholds, a shape modulus, the axes."""
    rules = []
    for n, r in rows:
        name = r["rule"]
        if name not in _ID:
            raise SystemExit(f"kb_profiler: {table}:{n}: advisor rule {name!r} has no id (add it to _ID)")
        condition = r["condition"]
        entry: dict = {"id": _ID[name], "rule": name, "condition": condition, "inputs": r["inputs_needed"],
                       "static": r["inputs_needed"].startswith("static"), "row": f"{table}:{n}", "path": r["path"]}
        thresholds = []
        for columns, value in re.findall(r"((?:[a-z][a-z0-9]*_[a-z0-9_]+/?)+)\s*>\s*([0-9.]+)", condition):
            for column in columns.strip("/").split("/"):
                thresholds.append({"column": column, "above": float(value)})
        if thresholds:
            entry["thresholds"] = thresholds
        total = re.search(r"((?:[a-z0-9]+\+)+[a-z0-9]+) total\s*>\s*([0-9.]+)", condition)
        if total:
            entry["sum"] = {"parts": total.group(1).split("+"), "above": float(total.group(2))}
        modulus = re.findall(r"%\s*(\d+)\s*!=\s*0", condition)
        if modulus:
            entry["modulus"] = int(modulus[0])
            entry["axes"] = re.findall(r"(inner axis|head_dim D|seq_len S)", condition)
        rules.append(entry)
    return rules


_AICPU = re.compile(r"kernel \[(\w+)\] can not support dtype ([\w ,]+?) on AiCore.*?cast dtype to (\w+)", re.I)
_CPU = re.compile(r"(?:kernel \[)?([\w.]+?)\]? is not supported by NPU currently\.\s*Now this kernel is running on "
                  r"CPU", re.I)


def build_fallbacks(rows: list[tuple[int, dict[str, str]]], table: str) -> dict:
    """Kernels that say they run on the AI CPU for some dtypes (and the cast that avoids it) or on the host CPU."""
    aicpu: dict[str, dict] = {}
    cpu: dict[str, dict] = {}
    for _, r in rows:
        message = r.get("message_string_literals", "")
        evidence = f"op_plugin/ops/{r['file(op_plugin/ops/...)']}:{r['line']}"
        found = _AICPU.search(message)
        if found:
            dtypes = [d for d in re.split(r"\s*(?:,|or|and)\s*", found.group(2)) if d]
            entry = aicpu.setdefault(found.group(1), {"dtypes": dtypes, "cast_to": found.group(3), "evidence": []})
            entry["evidence"].append(evidence)
            continue
        found = _CPU.search(message)
        if found:
            name = found.group(1).replace("_out", ".out")
            cpu.setdefault(name, {"evidence": []})["evidence"].append(evidence)
    return {"ai_cpu": aicpu, "host_cpu": cpu}


def build(facts: Path, out: Path) -> dict:
    """Read the three tables under `facts`, write `out`/profiler.json, return its provenance part."""
    missing(facts, TABLES.values(), "kb_profiler")
    read = {key: numbered_rows(facts / name) for key, name in TABLES.items()}
    content = {
        "format": FORMAT,
        "generator": "tools/kb_profiler.py",
        "generator_version": GENERATOR_VERSION,
        "sources": {key: {"table": name, "sha256": sha256(facts / name), "rows": len(read[key][1]),
                          "upstream": " ".join(read[key][0][:1])} for key, name in TABLES.items()},
        "columns": build_columns(read["columns"][1], TABLES["columns"]),
        "advisor": build_advisor(read["advisor"][1], TABLES["advisor"]),
        "fallbacks": build_fallbacks(read["checks"][1], TABLES["checks"]),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"profiler facts: {sources_summary(build(facts, out)['sources'])}", argv,
               facts_help="folder with the Ascend fact tables")


if __name__ == "__main__":
    raise SystemExit(main())
