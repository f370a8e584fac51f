"""Compile gpu_figures.tsv into opassess/data/kb/gpus.json: per NVIDIA GPU, the dense peaks, HBM size and bandwidth
and NVLink figure the --gpu-baseline times a captured step with.

Run:  python tools/kb_gpus.py --facts ../shared/reference/gpu --out opassess/data/kb
(`make kb` runs it.)

The figures are NVIDIA datasheet values as reproduced on the public pages each row names (gpu_figures.tsv's README:
no NVIDIA PDF was readable; rows marked `unverified` come from secondary pages, and say so here too). Every value
cites its table line and column (`gpu_figures.tsv:19:value`). Units, converted once: TFLOPS x 1e12 FLOP/s; GB/s
x 1e9 B/s; GB x 1e9 bytes (NVIDIA's GB).

Which form factor is a GPU's default is a choice made here (DEFAULT_FORM: the SXM part where there is one); a row
whose form factor starts with the default's (or the default with it: `HGX` memory rows of `HGX (1,000 W)`) belongs to
it. Dtypes map to the time model's names: bf16 -> bfloat16, fp16 -> float16, fp8 -> float8, tf32 -> tf32,
non-tensor fp32 -> float32.
"""
from __future__ import annotations

import re
from pathlib import Path

from tables import missing, numbered_rows, run, sources, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
TABLE = "gpu_figures.tsv"
OUTPUT = "gpus.json"
TERA, GIGA = 1e12, 1e9
DEFAULT_FORM = {"A100": "SXM4 80GB", "H100": "SXM5", "H200": "SXM", "H800": "SXM", "H20": "SXM", "L40S": "PCIe",
                "B200": "HGX (1,000 W)"}
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp8": "float8", "tf32": "tf32", "fp4": "float4"}
_URL = re.compile(r"https?://[^\s;()]+")
_MEMORY = re.compile(r"([\d.,]+)\s*GB\b.*?/\s*([\d,]+)")


def cite(line: int, column: str) -> str:
    return f"{TABLE}:{line}:{column}"


def number(text: str) -> float | None:
    """'1,979' -> 1979.0; '-', 'not found', '' -> None."""
    match = re.match(r"^\s*([\d,]+(?:\.\d+)?)", text)
    return float(match.group(1).replace(",", "")) if match else None


def belongs(form: str, default: str) -> bool:
    return form.startswith(default) or default.startswith(form)


def build_gpus(rows: list[tuple[int, dict[str, str]]]) -> dict[str, dict]:
    gpus: dict[str, dict] = {}
    for line, row in rows:
        name, form = row["gpu"], row["form_factor"]
        if name not in DEFAULT_FORM or not belongs(form, DEFAULT_FORM[name]):
            continue
        entry = gpus.setdefault(name, {"form_factor": DEFAULT_FORM[name], "peaks": {"cube": {}, "vector": {}},
                                       "hbm_bytes": None, "hbm_bandwidth": None, "nvlink_bandwidth": None,
                                       "cite": {}, "unverified": False, "sources": []})
        if "unverified" in row["notes"]:
            entry["unverified"] = True
        for url in _URL.findall(row["source"]):  # the pages only (their prose stays in the table)
            if url not in entry["sources"]:
                entry["sources"].append(url)
        metric, value = row["metric"], row["value"]
        if metric == "tensor peak" and row["dtype"] in DTYPES and number(value) is not None:
            if row["unit"] != "TFLOPS":
                raise SystemExit(f"kb_gpus: {cite(line, 'unit')}: expected TFLOPS")
            dtype = DTYPES[row["dtype"]]
            entry["peaks"]["cube"][dtype] = number(value) * TERA
            entry["cite"][f"peak.cube.{dtype}"] = cite(line, "value")
        elif metric == "non-tensor peak" and row["dtype"] == "fp32" and number(value) is not None:
            entry["peaks"]["cube"]["float32"] = number(value) * TERA  # torch's default fp32 matmul: no TF32
            entry["peaks"]["vector"]["float32"] = number(value) * TERA
            entry["cite"]["peak.cube.float32"] = entry["cite"]["peak.vector.float32"] = cite(line, "value")
        elif metric.endswith("capacity / bandwidth"):
            match = _MEMORY.search(value)
            if not match:
                raise SystemExit(f"kb_gpus: {cite(line, 'value')}: unreadable memory figure {value!r}")
            entry["hbm_bytes"] = float(match.group(1).replace(",", "")) * GIGA
            entry["hbm_bandwidth"] = float(match.group(2).replace(",", "")) * GIGA
            entry["cite"]["hbm_bytes"] = entry["cite"]["hbm_bandwidth"] = cite(line, "value")
        elif metric == "NVLink bandwidth per GPU" and number(value) is not None:
            entry["nvlink_bandwidth"] = number(value) * GIGA  # NVIDIA's bidirectional total
            entry["cite"]["nvlink_bandwidth"] = cite(line, "value")
    for entry in gpus.values():
        entry["label"] = f"{next(n for n, e in gpus.items() if e is entry)} {entry['form_factor']}" + \
            (" (figures from secondary pages, unverified)" if entry["unverified"] else "")
    return gpus


def build(facts: Path, out: Path) -> dict:
    """Read the table under `facts`, write `out`/gpus.json, return its provenance part."""
    missing(facts, (TABLE,), "kb_gpus")
    comments, rows = numbered_rows(facts / TABLE)
    if not comments:
        raise SystemExit(f"kb_gpus: {facts / TABLE}: expected a '#' source line first")
    content = {
        "format": FORMAT,
        "generator": "tools/kb_gpus.py",
        "generator_version": GENERATOR_VERSION,
        "sources": sources(facts, {"gpu_figures": TABLE}, {"gpu_figures": len(rows)}),
        "conventions": {"peak": "FLOP/s = TFLOPS x 1e12, dense (no 2:4 sparsity)", "hbm": "bytes and B/s = GB x 1e9",
                        "nvlink_bandwidth": "B/s, NVIDIA's bidirectional total per GPU",
                        "float32": "the non-tensor fp32 peak (torch's default float32 matmul does not use TF32)"},
        "gpus": build_gpus(rows),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"gpus: {build(facts, out)['sources']['gpu_figures']['rows']} rows of "
               f"{TABLE}", argv, facts_help="folder with the NVIDIA GPU fact table")


if __name__ == "__main__":
    raise SystemExit(main())
