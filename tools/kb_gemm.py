"""Check opassess/data/gemm_measurements.tsv (published matmul measurements on Ascend devices, one cited row each) and
derive from it opassess/data/kb/cube_shapes.json: per device variant, the efficiency a cube matmul of each shape class
reaches (time_model.toml [cube_shapes], opassess.perf.model.shape_class).

Run:  python tools/kb_gemm.py --out opassess/data/kb
(`make kb` runs it after tools/kb_devices.py: it reads the variants' peaks, bandwidth and launch cost from the
devices.json of --out.)

Each row is timed back into the time model's own terms, so that the model reproduces it: the row's time per call
(us, or 2mnk / TFLOPS) less the variant's cube launch cost is the time the roofline must give; the row is
compute-bound when 2mnk / peak[dtype] exceeds its bytes (A, B read, C written once) / HBM bandwidth, and then its
efficiency is (2mnk / peak) / (time - launch), else it is memory-bound and its efficiency is (bytes / bandwidth) /
(time - launch). Worked example: a bf16 4096^3 torch.matmul at 315.36 TFLOPS on a 910B2 is 1.374e11 / 315.36e12 =
435.8 us; less 5 us launch, 430.8 us; 1.374e11 / 353.9e12 = 388.4 us of peak work: efficiency 0.902 (cube, large).
A class's efficiency per side is the median of its rows'. A row above the peak (efficiency > 1), a variant devices.json
does not know, a dtype without a peak, a row without an https source: the build stops naming the line.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from tables import numbered_rows, sha256, write_stamped

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opassess.perf.device import ShapeBounds, shape_bounds  # noqa: E402
from opassess.perf.model import shape_class  # noqa: E402

GENERATOR_VERSION = "1.0"
FORMAT = 1
TABLE = ROOT / "opassess" / "data" / "gemm_measurements.tsv"
OUTPUT = "cube_shapes.json"
BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "int8": 1}
COLUMNS = ("device", "variant", "op", "dtype", "m", "n", "k", "value", "unit", "source", "notes")


def measured_row(line: int, row: dict[str, str], variants: dict, bounds: ShapeBounds, table: str = TABLE.name) -> dict:
    """One row timed back into the model's terms: its class, side (cube or memory) and efficiency."""

    def fail(line: int, problem: str) -> SystemExit:
        return SystemExit(f"kb_gemm: {table}:{line}: {problem}")

    variant = variants.get(row["variant"])
    if variant is None:
        raise fail(line, f"variant {row['variant']!r} is not in devices.json")
    if not row["source"].startswith("https://"):
        raise fail(line, "source: expected an https URL")
    try:
        m, n, k = (int(row[c]) for c in ("m", "n", "k"))
        value = float(row["value"])
    except ValueError:
        raise fail(line, "m, n, k must be integers and value a number") from None
    peak = variant["peaks"]["cube"].get(row["dtype"])
    if peak is None or row["dtype"] not in BYTES:
        raise fail(line, f"no cube peak or element size for dtype {row['dtype']!r} in {row['variant']}")
    flops = 2.0 * m * n * k
    if row["unit"] == "TFLOPS":
        time_us = flops / (value * 1e12) * 1e6
    elif row["unit"] == "us":
        time_us = value
    else:
        raise fail(line, f"unit {row['unit']!r}: expected TFLOPS or us")
    work_us = time_us - variant["launch_us"]["cube"]
    if work_us <= 0:
        raise fail(line, f"{time_us:.1f} us per call is not above the launch cost")
    compute_us = flops / peak * 1e6
    memory_us = (m * k + k * n + m * n) * BYTES[row["dtype"]] / variant["hbm_bandwidth"] * 1e6
    side, ideal = ("cube", compute_us) if compute_us >= memory_us else ("memory", memory_us)
    efficiency = ideal / work_us
    if efficiency > 1.0:
        raise fail(line, f"{side} efficiency {efficiency:.3f} is above 1: the row is faster than the peak")
    return {"line": line, "variant": row["variant"], "device": row["device"], "op": row["op"], "dtype": row["dtype"],
            "m": m, "n": n, "k": k, "time_us": round(time_us, 3), "class": shape_class(m, n, k, bounds),
            "side": side, "efficiency": round(efficiency, 4), "source": row["source"]}


def build(out: Path, table: Path = TABLE) -> str:
    """Write out/cube_shapes.json; return the summary line."""
    devices_path = out / "devices.json"
    if not devices_path.is_file():
        devices_path = ROOT / "opassess" / "data" / "kb" / "devices.json"
    variants = json.loads(devices_path.read_text(encoding="utf-8"))["variants"]
    comments, rows = numbered_rows(table)
    if not comments:
        raise SystemExit(f"kb_gemm: {table}: expected '#' source lines first")
    missing = [c for c in COLUMNS if rows and c not in rows[0][1]]
    if missing:
        raise SystemExit(f"kb_gemm: {table}: missing columns {', '.join(missing)}")
    bounds = shape_bounds()
    measured = [measured_row(line, row, variants, bounds, table.name) for line, row in rows]
    classes: dict[str, dict[str, dict[str, dict]]] = {}
    for row in measured:
        classes.setdefault(row["variant"], {}).setdefault(row["class"], {}).setdefault(row["side"], {"lines": []})
        classes[row["variant"]][row["class"]][row["side"]]["lines"].append(row["line"])
    by_line = {row["line"]: row for row in measured}
    for sides in (s for v in classes.values() for s in v.values()):
        for entry in sides.values():
            entry["efficiency"] = round(statistics.median(by_line[n]["efficiency"] for n in entry["lines"]), 4)
    content = {
        "format": FORMAT, "generator": "tools/kb_gemm.py", "generator_version": GENERATOR_VERSION,
        "sources": {"gemm_measurements": {"table": table.name, "rows": len(rows), "sha256": sha256(table)}},
        "bounds": {"skinny_below": bounds.skinny_below, "medium_from": bounds.medium_from,
                   "large_from": bounds.large_from},
        "kind": "published measurements (each row's source URL), timed back into the model's roofline terms",
        "variants": classes, "rows": measured}
    write_stamped(content, out, OUTPUT, ())
    summary = "; ".join(f"{v}: " + ", ".join(f"{k} {side} {e['efficiency']:.3f} ({len(e['lines'])} rows)"
                                              for k, sides in sorted(c.items()) for side, e in sorted(sides.items()))
                        for v, c in sorted(classes.items()))
    return f"cube shapes: {len(measured)} measurements; {summary}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="output folder (opassess/data/kb)")
    parser.add_argument("--table", type=Path, default=TABLE, help="the measurements table")
    args = parser.parse_args(argv)
    print(build(args.out, args.table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
