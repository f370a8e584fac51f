"""tools/kb_devices.py: the device profiles generated from ascend_hw_figures.tsv (units, citations, derived and
missing products), a rebuild reproducing the shipped file, and `kb show device`."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from opassess.cli.kb import kb_app

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_devices  # noqa: E402

FACTS = Path(os.environ.get("OPASSESS_FACTS", ROOT.parent / "shared" / "reference" / "ascend"))
SHIPPED = ROOT / "opassess" / "data" / "kb" / "devices.json"


@pytest.fixture(scope="module")
def shipped():
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


def test_every_product_has_a_profile_or_says_why_not(shipped):
    products = shipped["products"]
    assert products["Atlas A2"]["variant"] == "ATLAS_800_A2_376T_64G" and len(products["Atlas A2"]["variants"]) == 4
    assert products["Atlas A3"]["variant"] == "ATLAS_800_A3_752T_128G_DIE"
    assert products["Ascend 950"]["variant"] == "ATLAS_350_425T_112G" and "Atlas 350" in products["Ascend 950"]["note"]
    for name in ("Atlas training series", "Atlas inference series", "Atlas 200I/500 A2"):
        assert products[name]["variant"] is None and "no published figures" in products[name]["note"]


def test_units_are_converted_once_and_every_value_cites_its_line(shipped):
    a2 = shipped["variants"]["ATLAS_800_A2_376T_64G"]
    assert a2["peaks"]["cube"]["bfloat16"] == pytest.approx(353.9e12)
    assert a2["peaks"]["vector"]["float32"] == pytest.approx(11e12)
    assert a2["hbm_bandwidth"] == pytest.approx(1.6 * 1024 ** 4) and a2["hbm_bytes"] == 64 * 1024 ** 3
    assert a2["launch_us"] == {"cube": 5.0, "vector": 2.0, "communication": 10.0}
    for variant in shipped["variants"].values():
        keys = {f"peak.{u}.{d}" for u, p in variant["peaks"].items() for d in p}
        assert keys <= set(variant["cite"])
        assert all(re.fullmatch(r"ascend_hw_figures\.tsv:\d+:\w+", c) for c in variant["cite"].values())
    a5 = shipped["variants"]["ATLAS_350_425T_112G"]
    assert a5["launch_us"]["communication"] == 5.0 and a5["modes"] == {"cube.float32": "HF32"}
    assert any("A2/A3 row" in a for a in a5["assumptions"])


def test_a3_per_device_is_two_dies_and_labelled_derived(shipped):
    die, device = (shipped["variants"][f"ATLAS_800_A3_752T_128G_{k}"] for k in ("DIE", "DEVICE"))
    assert device["dies"] == 2 and device["derived"] == "two dies of ATLAS_800_A3_752T_128G_DIE"
    assert device["peaks"]["cube"]["bfloat16"] == 2 * die["peaks"]["cube"]["bfloat16"]
    assert device["hbm_bandwidth"] == 2 * die["hbm_bandwidth"] and "derived" in device["label"]


@pytest.mark.skipif(not FACTS.is_dir(), reason="../shared/reference/ascend is not beside the checkout")
def test_rebuild_from_facts_reproduces_the_shipped_file(tmp_path):
    assert kb_devices.main(["--facts", str(FACTS), "--out", str(tmp_path)]) == 0
    rebuilt = json.loads((tmp_path / "devices.json").read_text(encoding="utf-8"))
    assert rebuilt == json.loads(SHIPPED.read_text(encoding="utf-8")), "rerun tools/kb_devices.py"


def test_kb_show_device():
    runner = CliRunner()
    a2 = runner.invoke(kb_app, ["show", "device", "A2"])
    assert a2.exit_code == 0, a2.output
    assert "peak cube   bfloat16         353.9 TFLOPS     [ascend_hw_figures.tsv:4:peak]" in a2.output
    assert "1.6 x 1024^4 B/s" in a2.output and "assumption" in a2.output and "not a measurement" in a2.output
    assert "link HCCS      196 GB/s x 0.7, 0.5 us a step, up to 8 ranks (full mesh) [ascend_comm_figures.tsv:3:value]" \
        in a2.output and "link RoCE" in a2.output
    p310 = runner.invoke(kb_app, ["show", "device", "310P"])
    assert p310.exit_code == 0 and len(p310.output.strip().splitlines()) == 1
    assert "no published figures" in p310.output
    assert runner.invoke(kb_app, ["show", "device", "nope"]).exit_code == 2
