"""tools/kb_interconnect.py: the link tiers generated from ascend_comm_figures.tsv (units, citations, the products
with no figures), and a rebuild reproducing the shipped file."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_interconnect  # noqa: E402

FACTS = Path(os.environ.get("OPASSESS_FACTS", ROOT.parent / "shared" / "reference" / "ascend"))
SHIPPED = ROOT / "opassess" / "data" / "kb" / "interconnect.json"


@pytest.fixture(scope="module")
def shipped():
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


def test_every_tier_cites_its_line_and_converts_gb_per_s_once(shipped):
    products = shipped["products"]
    assert set(products) == {"Atlas A2", "Atlas A3", "Ascend 950"}  # 910A, 310P, 310B: no figures in the table
    a2 = {t["name"]: t for t in products["Atlas A2"]["tiers"]}
    assert a2["HCCS"]["bandwidth"] == 196e9 and a2["HCCS"]["full_mesh"] and a2["RoCE"]["bandwidth"] == 25e9
    a5 = {t["name"]: t for t in products["Ascend 950"]["tiers"]}
    assert a5["PCIe"]["efficiency"] == pytest.approx(0.8 * 0.7)  # "efficiency 0.8 x 0.7" in the row's notes
    assert products["Ascend 950"]["launch_us"] == 5.0 and products["Atlas A3"]["launch_us"] == 10.0
    for product in products.values():
        ranks = [t["ranks"] for t in product["tiers"]]
        assert ranks == sorted(ranks)  # nearest first
        for tier in product["tiers"]:
            assert all(re.fullmatch(r"ascend_comm_figures\.tsv:\d+:\w+", c) for c in tier["cite"].values())


@pytest.mark.skipif(not FACTS.is_dir(), reason="../shared/reference/ascend is not beside the checkout")
def test_rebuild_from_facts_reproduces_the_shipped_file(tmp_path):
    assert kb_interconnect.main(["--facts", str(FACTS), "--out", str(tmp_path)]) == 0
    rebuilt = json.loads((tmp_path / "interconnect.json").read_text(encoding="utf-8"))
    assert rebuilt == json.loads(SHIPPED.read_text(encoding="utf-8")), "rerun tools/kb_interconnect.py"
