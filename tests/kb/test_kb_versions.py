"""tools/kb_versions.py and kb/releases.py: a rebuild from ../shared reproducing the shipped versions.json, its rows
citing the table lines they came from, and the lookups the versions section makes."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_versions  # noqa: E402

from opassess.kb.releases import format_releases, load_releases  # noqa: E402

FACTS = ROOT.parent / "shared" / "reference" / "ascend"
SHIPPED = ROOT / "opassess" / "data" / "kb" / "versions.json"


@pytest.mark.skipif(not FACTS.is_dir(), reason="the Ascend fact tables are not beside the repository")
def test_a_rebuild_reproduces_the_shipped_file_and_cites_its_lines(tmp_path):
    kb_versions.build(FACTS, tmp_path)
    rebuilt = json.loads((tmp_path / "versions.json").read_text(encoding="utf-8"))
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    rebuilt.pop("generated_at")
    assert rebuilt == {k: v for k, v in shipped.items() if k != "generated_at"}
    lines = (FACTS / "version_matrix.tsv").read_text(encoding="utf-8").splitlines()
    for release in shipped["releases"]:  # each row's `row` is its line in the table (line 1: the `#` source line)
        cells = lines[release["row"] - 1].split("\t")
        assert cells[0] == release["wheel"] and cells[2] == release["torch"]
    need = shipped["requirements"][0]
    assert "torch_npu 7.3.0 / CANN 8.5.0" in (FACTS / need["table"]).read_text(encoding="utf-8").splitlines()[
        need["row"] - 1]


def test_the_release_lookups():
    table = load_releases()
    assert table.data["generator"] == "tools/kb_versions.py"
    assert all(len(s["sha256"]) == 64 for s in table.data["sources"].values())
    assert table.newest_torch() == (2, 14)  # no torch_npu release pairs with torch 2.15
    assert table.for_torch((2, 13)).wheel == "2.13.0"
    nine = table.for_torch((2, 9))
    assert (nine.wheel, nine.product_version, nine.cann) == ("2.9.0.post6", "26.1.0", "9.1.0")
    stated = table.newest_stated()
    assert (stated.wheel, stated.product_version, stated.cann) == ("2.12.0", "26.1.0", "9.1.0")
    assert table.first_with("7.3.0", (2, 9)).wheel == "2.9.0"  # the oldest wheel on torch 2.9 with product 7.3.0+
    sink = next(r for r in table.requirements if r.param == "sink")
    assert (sink.op, sink.product_version, sink.cann) == ("npu_fusion_attention", "7.3.0", "8.5.0")
    assert sink.used_in("npu_fusion_attention(sink=...) in training")
    assert not sink.used_in("npu_fusion_attention(pre_tockens=...)")
    text = format_releases(table)
    assert "2.12.0         2.12.0  26.1.0   9.1.0" in text and "needs torch_npu 7.3.0+ and CANN 8.5.0+" in text
