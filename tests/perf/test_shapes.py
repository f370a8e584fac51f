"""Size-aware cube efficiency: a matmul's shape class (time_model.toml [cube_shapes]) takes the efficiency the
published measurements give it (opassess/data/gemm_measurements.tsv -> kb/cube_shapes.json, tools/kb_gemm.py), on
real captures of a large aligned GEMM and a skinny one, checked by hand; the overlay overrides a class."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from opassess.errors import ConfigError
from opassess.kb.store import load_kb
from opassess.options import ScanOptions
from opassess.perf import load_profile
from opassess.perf.describe import format_device
from opassess.perf.device import ShapeBounds
from opassess.perf.gpu import gpu_baseline, gpu_profile
from opassess.perf.model import shape_class
from opassess.pipeline.assess import assess
from opassess.resources import data_path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import kb_gemm  # noqa: E402

A2_BF16_PEAK, A2_BANDWIDTH = 353.9e12, 1.6 * 1024 ** 4  # ascend_hw_figures.tsv lines 4 and 3
MODEL = """
import torch
from torch import nn

def build_model():
    return nn.Linear(4096, 4096, bias=False).eval()

def example_inputs():
    return (torch.randn({rows}, 4096),)
"""


def matmul_call(tmp_path: Path, rows: int):
    """The one Linear call of a bf16 (rows x 4096) @ (4096 x 4096) scan on Atlas A2, and its work."""
    path = tmp_path / f"linear_{rows}.py"
    path.write_text(textwrap.dedent(MODEL.format(rows=rows)), encoding="utf-8")
    a = assess(ScanOptions(target=str(path), dtype="bfloat16", project_scan=False, graph_mode="off"))
    calls = [c for c in a.performance.step.calls if c.unit == "cube"]
    assert len(calls) == 1
    return calls[0], a


def test_shape_classes_by_hand():
    bounds = ShapeBounds(skinny_below=128, medium_from=2048, large_from=4096)
    assert shape_class(4096, 4096, 4096, bounds) == "large"
    assert shape_class(16, 4096, 4096, bounds) == "skinny"
    assert shape_class(4096, 16, 4096, bounds) == "skinny"
    assert shape_class(16384, 512, 4096, bounds) == "medium"  # s = 32^(2/3) x 1024 = 3251
    assert shape_class(1024, 1024, 1024, bounds) == "small"


def test_the_shipped_table_derives_each_class_from_cited_measurements():
    table = json.loads(data_path("kb/cube_shapes.json").read_text(encoding="utf-8"))
    rows = {r["line"]: r for r in table["rows"]}
    assert all(r["source"].startswith("https://github.com/") and 0 < r["efficiency"] <= 1 for r in rows.values())
    # line 6: bf16 4096^3 at 315.36 TFLOPS on a 910B2: 1.374e11 / 315.36e12 = 435.8 us; less the 5 us launch,
    # 430.8 us; 1.374e11 / 353.9e12 = 388.4 us of peak work: 0.901 of the peak
    assert rows[6]["class"] == "large" and rows[6]["efficiency"] == pytest.approx(388.36 / 430.82, abs=1e-3)
    # line 19: addmv of a bf16 4096 x 4096 matrix, 165 us: 33.6 MB / 1.759e12 B/s = 19.1 us over 160 us: 0.119
    assert rows[19]["class"] == "skinny" and rows[19]["side"] == "memory"
    assert rows[19]["efficiency"] == pytest.approx((4096 * 4096 + 2 * 4096) * 2 / A2_BANDWIDTH * 1e6 / 160, abs=1e-3)
    a2 = table["variants"]["ATLAS_800_A2_376T_64G"]
    large = sorted(rows[n]["efficiency"] for n in a2["large"]["cube"]["lines"])
    assert a2["large"]["cube"]["efficiency"] == pytest.approx(large[len(large) // 2])
    assert set(a2) == {"small", "medium", "large", "skinny"}


def test_a_large_aligned_gemm_runs_nearer_the_peak_than_a_skinny_one(tmp_path):
    """bf16 on Atlas A2. 4096^3 (large, cube 0.846): 1.374e11 / (353.9e12 x 0.846) = 459.0 us + 5 us launch =
    464.0 us, 0.84 of the peak's 388.4 us (the flat 0.7 gave 559.8 us). 16 x 4096 x 4096 (skinny, memory 0.133: the
    measured matrix-vector products reach 12-29% of the HBM bandwidth): bytes (16 x 4096 x 2 + 4096^2) x 2 =
    33.8 MB / (1.759e12 x 0.133) = 144.4 us + 5 us, where the flat 0.6 gave 37.0 us; 3.6 TFLOPS against 296."""
    a2 = load_profile("Atlas A2")
    large_eff, skinny_eff = a2.shapes["large"]["cube"], a2.shapes["skinny"]["memory"]
    assert large_eff == pytest.approx(0.846, abs=1e-3) and skinny_eff == pytest.approx(0.133, abs=1e-3)
    large, scan = matmul_call(tmp_path, 4096)
    assert large.roofline_us == pytest.approx(2 * 4096 ** 3 / (A2_BF16_PEAK * large_eff) * 1e6 + 5, rel=1e-3)
    assert large.bound == "compute"
    skinny, _ = matmul_call(tmp_path, 16)
    skinny_bytes = (2 * 16 * 4096 + 4096 * 4096) * 2
    assert skinny.bound == "memory"
    assert skinny.roofline_us == pytest.approx(skinny_bytes / (A2_BANDWIDTH * skinny_eff) * 1e6 + 5, rel=1e-3)
    achieved = {name: 2 * rows * 4096 ** 2 / (call.roofline_us * 1e-6) / 1e12
                for name, rows, call in (("large", 4096, large), ("skinny", 16, skinny))}
    assert achieved["large"] > 290 and achieved["skinny"] < 4
    # `kb show device` lists each class with its citation (the report's time notes stay in the reader's language)
    shown = format_device(load_kb(), "Atlas A2")
    assert "shape large    cube efficiency 0.8462" in shown and "gemm_measurements.tsv lines 6, 7, 8" in shown
    # the cube's class efficiency cites the measurements it is the median of
    assert "gemm_measurements.tsv lines 6, 7, 8" in a2.cite["shapes.large.cube"]


def test_the_gpu_baseline_keeps_the_ratio_of_the_two_peaks_for_a_large_gemm(tmp_path):
    """The baseline takes the target's efficiencies (the same method): H100 1.374e11 / (989.5e12 x 0.846) + 5 us =
    169.1 us against 464.0 us: 2.74, the peaks' 2.80 but for the launch both pay."""
    large, scan = matmul_call(tmp_path, 4096)
    work = next(w for w in _works(scan) if w.unit == "cube")
    base = gpu_baseline([work], large.us, gpu_profile("H100", load_profile("Atlas A2")))
    assert base.ratio == pytest.approx(989.5 / 353.9, rel=0.02)


def _works(a):
    from opassess.perf.step import call_works
    return call_works(a.inventory, a.classified, a.findings, load_profile("Atlas A2"))


def test_a_calibrated_flat_efficiency_replaces_the_measured_classes_of_its_side(tmp_path):
    """A team's own [cube] efficiency (what `opassess calibrate` fits) outranks the published shape classes on the
    cube side; the memory side keeps its measured class, and a [shapes.X] of the same overlay still sets its class."""
    overlay = tmp_path / "a2.toml"
    overlay.write_text('[cube]\nefficiency = 0.35\n[shapes.small]\ncube = 0.2\n', encoding="utf-8")
    profile = load_profile("Atlas A2", overlay=overlay)
    assert profile.efficiency["cube"] == 0.35
    assert {k: v.get("cube") for k, v in profile.shapes.items() if "cube" in v} == {"small": 0.2}
    assert profile.shapes["skinny"]["memory"] == load_profile("Atlas A2").shapes["skinny"]["memory"]
    overlay.write_text('[memory]\nefficiency = 0.5\n', encoding="utf-8")
    assert "skinny" not in load_profile("Atlas A2", overlay=overlay).shapes


def test_the_overlay_overrides_a_class_and_refuses_an_unknown_one(tmp_path):
    overlay = tmp_path / "a2.toml"
    overlay.write_text('[shapes.large]\ncube = 0.5\n[shapes.skinny]\nmemory = 0.6\n', encoding="utf-8")
    profile = load_profile("Atlas A2", overlay=overlay)
    assert profile.shapes["large"]["cube"] == 0.5 and profile.shapes["skinny"]["memory"] == 0.6
    assert profile.shapes["medium"] == load_profile("Atlas A2").shapes["medium"]
    assert profile.cite["shapes.large.cube"].startswith("overlay")
    overlay.write_text('[shapes.huge]\ncube = 0.5\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="shapes.huge"):
        load_profile("Atlas A2", overlay=overlay)
    overlay.write_text('[shapes.large]\ncube = 1.5\n', encoding="utf-8")
    with pytest.raises(ConfigError):
        load_profile("Atlas A2", overlay=overlay)


def test_products_without_measurements_keep_the_flat_efficiency():
    assert load_profile("Atlas A3").shapes == {} and load_profile("Ascend 950").shapes == {}


def test_the_time_sections_basis_names_the_measured_classes_only_where_they_are_used(tmp_path):
    """On Atlas A2 the cube's efficiencies by shape class are medians of published measurements: the section's
    basis says so (still not a measurement of this model); on Atlas A3, with none, it says modelled figures only."""
    path = tmp_path / "linear.py"
    path.write_text(textwrap.dedent(MODEL.format(rows=64)), encoding="utf-8")
    basis = {product: str(assess(ScanOptions(target=str(path), product=product, project_scan=False,
                                             graph_mode="off")).performance.estimate)
             for product in ("Atlas A2", "Atlas A3")}
    assert "shape class from published measurements (gemm_measurements.tsv" in basis["Atlas A2"]
    assert basis["Atlas A2"].endswith("not a measurement of this model")
    assert "published measurements" not in basis["Atlas A3"] and basis["Atlas A3"].endswith("not a measurement")


def test_a_row_faster_than_the_peak_or_uncited_stops_the_build(tmp_path):
    shipped = kb_gemm.TABLE.read_text(encoding="utf-8").splitlines()
    header = [line for line in shipped if not line.startswith("#")][0]
    row = shipped[3].split("\t")
    fast = row.copy()
    fast[7] = "400"  # bf16 1024^3 at 400 TFLOPS: above the 353.9 peak
    bad = tmp_path / "t.tsv"
    bad.write_text("# source\n" + header + "\n" + "\t".join(fast) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="t.tsv:3: cube efficiency .* above 1"):
        kb_gemm.build(tmp_path, bad)
    uncited = row.copy()
    uncited[9] = "a forum post"
    bad.write_text("# source\n" + header + "\n" + "\t".join(uncited) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="https"):
        kb_gemm.build(tmp_path, bad)
