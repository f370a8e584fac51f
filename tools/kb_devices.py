"""Compile ascend_hw_figures.tsv into opassess/data/kb/devices.json: one device profile per hardware variant.

Run:  python tools/kb_devices.py --facts ../shared/reference/ascend --out opassess/data/kb
(`make kb` runs it after tools/build_kb.py.)

A profile holds the dense peak per unit (cube, vector) and dtype, the HBM size and bandwidth, the default compute and
memory efficiencies and the launch cost per unit: the values of Huawei's own performance model (msModeling
TensorCast), modelled values and not measurements. Every value cites its table line and column
(`ascend_hw_figures.tsv:4:peak`, header = line 2, the `#` source line = line 1).

Units, converted here once and on purpose: `peak` is TFLOPS, x 1e12 FLOP/s; `hbm_tb_per_s` is written in the
source tool as x * 1024^4 B/s (1.6 -> 1.759e12 B/s), and `hbm_gib` as x * 1024^3 bytes.

Derived and missing values, said as such:
- Atlas A3 rows are per die (a device has two dies): a per-device profile is derived as two dies (peaks, HBM size
  and bandwidth doubled), labelled `derived`.
- The Ascend 950 profile is the Atlas 350 card (the 950 generation in Huawei's tool); the table's other 950 rows come
  from press coverage only and are not used for a profile.
- The launch-cost row gives cube / vector / communication for Atlas A2/A3 and only the communication cost for A5
  (Atlas 350): the Atlas 350 cube and vector launch costs are taken from the A2/A3 row, marked as an assumption.
- The Atlas training series (910) and the Atlas inference series (310P) have no row: no profile, and the product
  entry says that no published figures are in the tables.

`generated_at` is the time the content was first generated: an identical rebuild keeps the date already shipped.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from tables import missing, numbered_rows, run, sources, write_stamped

GENERATOR_VERSION = "1.0"
FORMAT = 1
TABLE = "ascend_hw_figures.tsv"
OUTPUT = "devices.json"
ROOT = Path(__file__).resolve().parent.parent
PRODUCTS = ROOT / "opassess" / "data" / "products.toml"

TERA = 1e12  # the peak column is TFLOPS (the source tool writes `x * 1e12`)
TIB = 1024 ** 4  # the bandwidth column is written `x * 1024**4` B/s in the source tool
GIB = 1024 ** 3
# The device-id prefix of a profile row -> the product (opassess/data/products.toml) it is a variant of. A parsing
# aid, not a fact: every figure still comes from its row. The first variant listed for a product is its default.
PRODUCT_OF_PREFIX = {"ATLAS_800_A2_": "Atlas A2", "ATLAS_800_A3_": "Atlas A3", "ATLAS_350_": "Ascend 950"}
UNITS = {"cube(mma)": "cube", "vector(gp)": "vector"}
LAUNCH_FIELDS = ("cube", "vector", "communication")  # the launch row's "mma op / gp op / comm op"
PRODUCT_NOTES = {
    "Atlas A3": "per-die profile (the tables give Atlas A3 figures per die; a device has two dies): a single-device "
                "step is modelled on one die; the per-device profile (two dies) is derived",
    "Ascend 950": "an Atlas 350 profile (the Ascend 950 generation in Huawei's performance model); the tables' other "
                  "Ascend 950 figures come from press coverage only and are not used",
}


def profile_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """The table's rows with their line numbers: line 1 is the `#` source line, line 2 the header."""
    comments, rows = numbered_rows(path)
    if not comments:
        raise SystemExit(f"kb_devices: {path}: expected a '#' source line first")
    return rows


def cite(line: int, column: str) -> str:
    return f"{TABLE}:{line}:{column}"


def dtype_name(text: str) -> tuple[str, str | None]:
    """'float32(HF32)' -> ('float32', 'HF32'): the dtype and the cube mode the peak assumes."""
    match = re.fullmatch(r"([a-z0-9]+)(?:\((\w+)\))?", text)
    if not match:
        raise SystemExit(f"kb_devices: unreadable dtype {text!r}")
    return match.group(1), match.group(2)


def number(text: str, line: int, column: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise SystemExit(f"kb_devices: {cite(line, column)}: not a number: {text!r}") from None


def build_variants(rows: list[tuple[int, dict[str, str]]]) -> dict[str, dict]:
    """One entry per device-id row group (ATLAS_800_A2_376T_64G, ...) with its peaks, memory and efficiencies."""
    variants: dict[str, dict] = {}
    for line, row in rows:
        device = row["device_or_profile"]
        product = next((p for prefix, p in PRODUCT_OF_PREFIX.items() if device.startswith(prefix)), None)
        unit = UNITS.get(row["unit"])
        if product is None or unit is None:
            continue
        if row["unit_of_peak"] != "TFLOPS":
            raise SystemExit(f"kb_devices: {cite(line, 'unit_of_peak')}: expected TFLOPS, got {row['unit_of_peak']}")
        entry = variants.setdefault(device, {
            "product": product, "label": row["product"], "dies": 1, "derived": None, "peaks": {}, "modes": {},
            "hbm_bytes": number(row["hbm_gib"], line, "hbm_gib") * GIB,
            "hbm_bandwidth": number(row["hbm_tb_per_s"], line, "hbm_tb_per_s") * TIB,
            "compute_eff": number(row["compute_eff_default"], line, "compute_eff_default"),
            "memory_eff": number(row["memory_eff_default"], line, "memory_eff_default"),
            "source": row["source"], "modelled": "modelled value" in row["notes"],
            "cite": {"hbm_bytes": cite(line, "hbm_gib"), "hbm_bandwidth": cite(line, "hbm_tb_per_s"),
                     "compute_eff": cite(line, "compute_eff_default"),
                     "memory_eff": cite(line, "memory_eff_default")},
        })
        dtype, mode = dtype_name(row["dtype_or_field"])
        entry["peaks"].setdefault(unit, {})[dtype] = number(row["peak"], line, "peak") * TERA
        entry["cite"][f"peak.{unit}.{dtype}"] = cite(line, "peak")
        if mode:
            entry["modes"][f"{unit}.{dtype}"] = mode
    return variants


def launch_costs(rows: list[tuple[int, dict[str, str]]]) -> tuple[dict[str, float], dict[str, float], int]:
    """(Atlas A2/A3 launch us per unit, A5 launch us stated, line) from the '(static cost per op)' row."""
    for line, row in rows:
        if row["unit"] == "launch":
            if row["unit_of_peak"] != "us":
                raise SystemExit(f"kb_devices: {cite(line, 'unit_of_peak')}: expected us")
            values = [number(v.strip(), line, "peak") for v in row["peak"].split("/")]
            if len(values) != len(LAUNCH_FIELDS):
                raise SystemExit(f"kb_devices: {cite(line, 'peak')}: expected {len(LAUNCH_FIELDS)} values")
            a5 = re.search(r"A5 comm (\d+(?:\.\d+)?) us", row["notes"])
            if not a5:
                raise SystemExit(f"kb_devices: {cite(line, 'notes')}: no 'A5 comm N us'")
            return dict(zip(LAUNCH_FIELDS, values, strict=True)), {"communication": float(a5.group(1))}, line
    raise SystemExit(f"kb_devices: {TABLE}: no launch-cost row")


def add_launch(variants: dict[str, dict], rows: list[tuple[int, dict[str, str]]]) -> None:
    a2a3, a5, line = launch_costs(rows)
    for entry in variants.values():
        if entry["product"] == "Ascend 950":
            entry["launch_us"] = {**a2a3, **a5}
            for unit in LAUNCH_FIELDS:
                entry["cite"][f"launch.{unit}"] = cite(line, "notes" if unit in a5 else "peak")
            entry["assumptions"] = ["launch cost of cube and vector ops taken from the Atlas A2/A3 row: the table "
                                    "gives only the communication cost for A5"]
        else:
            entry["launch_us"] = dict(a2a3)
            entry["cite"].update({f"launch.{unit}": cite(line, "peak") for unit in LAUNCH_FIELDS})


def add_per_device(variants: dict[str, dict]) -> None:
    """Atlas A3 rows are one die of a two-die device: derive the device (peaks, HBM size and bandwidth x2)."""
    for name, entry in list(variants.items()):
        if not name.endswith("_DIE"):
            continue
        device = {**entry, "dies": 2, "derived": f"two dies of {name}", "label": entry["label"].split(",")[0] +
                  ", per device (two dies, derived)",
                  "peaks": {u: {d: 2 * v for d, v in p.items()} for u, p in entry["peaks"].items()},
                  "hbm_bytes": 2 * entry["hbm_bytes"], "hbm_bandwidth": 2 * entry["hbm_bandwidth"],
                  "cite": dict(entry["cite"])}
        variants[name[:-len("_DIE")] + "_DEVICE"] = device


def build_products(variants: dict[str, dict]) -> dict[str, dict]:
    """Every product of products.toml -> its default variant (the first row group), its variants, a note."""
    names = [p["name"] for p in tomllib.loads(PRODUCTS.read_text(encoding="utf-8"))["product"]]
    products = {}
    for name in names:
        own = [v for v, e in variants.items() if e["product"] == name]
        default = next((v for v in own if not v.endswith("_DEVICE")), None)
        products[name] = {
            "variant": default, "variants": own,
            "note": PRODUCT_NOTES.get(name) if own else
            f"no published figures for {name} in the tables ({TABLE} has no row for it): no time model",
        }
    return products


def build(facts: Path, out: Path) -> dict:
    """Read the table under `facts`, write `out`/devices.json, return its provenance part."""
    missing(facts, (TABLE,), "kb_devices")
    rows = profile_rows(facts / TABLE)
    variants = build_variants(rows)
    add_launch(variants, rows)
    add_per_device(variants)
    content = {
        "format": FORMAT,
        "generator": "tools/kb_devices.py",
        "generator_version": GENERATOR_VERSION,
        "sources": sources(facts, {"hw_figures": TABLE}, {"hw_figures": len(rows)}),
        "conventions": {"peak": "FLOP/s = TFLOPS column x 1e12 (dense)",
                        "hbm_bandwidth": "B/s = hbm_tb_per_s column x 1024^4 (as the source tool writes it)",
                        "hbm_bytes": "bytes = hbm_gib column x 1024^3",
                        "kind": "modelled values of Huawei's performance model (msModeling TensorCast), not "
                                "measurements"},
        "variants": variants,
        "products": build_products(variants),
    }
    return write_stamped(content, out, OUTPUT, ("generator", "generated_at", "sources"))


def main(argv: list[str] | None = None) -> int:
    return run(__doc__, lambda facts, out: f"device profiles: {build(facts, out)['sources']['hw_figures']['rows']} "
               f"rows of {TABLE}", argv, facts_help="folder with the Ascend fact tables")


if __name__ == "__main__":
    raise SystemExit(main())
