"""tools/kb_graph.py: its parsers, a rebuild from ../shared reproducing the shipped graph_mode.json, the data."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_graph  # noqa: E402

FACTS = ROOT.parent / "shared" / "reference" / "ascend"
SHIPPED = ROOT / "opassess" / "data" / "kb" / "graph_mode.json"


@pytest.fixture(scope="module")
def shipped():
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


def test_overload_names_become_the_captures_qualified_names():
    assert kb_graph.aten_key("torch.ops.aten.add.Tensor") == "aten::add.Tensor"
    assert kb_graph.aten_key("torch.ops.aten._adaptive_avg_pool3d.default") == "aten::_adaptive_avg_pool3d"
    assert kb_graph.aten_key("aten.__and__") == "aten::__and__"
    assert kb_graph.aten_key("torch.ops.npu.npu_prefetch.default") == "npu::npu_prefetch"
    assert kb_graph.aten_key("associative_scan") is None


def test_handler_scopes_and_constraints_are_structured():
    assert kb_graph.handler_ops("npu_fused_infer_attention_score(.default/.out), _v2") == [
        "npu::npu_fused_infer_attention_score", "npu::npu_fused_infer_attention_score_v2"]
    assert kb_graph.constraint_checks("return_indices=False; dynamic=True only; backward input must be 4-D") == (
        [{"param": "return_indices", "equals": False}], ["dynamic=True only", "backward input must be 4-D"])
    assert kb_graph.api_names("torch.Tensor.expand") == ["Tensor.expand", "aten::expand"]
    assert kb_graph.api_names("torch.addmm") == ["torch.addmm", "aten::addmm"]


@pytest.mark.skipif(not FACTS.is_dir(), reason="the Ascend fact tables are not beside the repository")
def test_a_rebuild_reproduces_the_shipped_file(tmp_path, shipped):
    kb_graph.build(FACTS, tmp_path)
    rebuilt = json.loads((tmp_path / "graph_mode.json").read_text(encoding="utf-8"))
    rebuilt.pop("generated_at")
    assert rebuilt == {k: v for k, v in shipped.items() if k != "generated_at"}


def test_the_shipped_rows_cite_their_tables(shipped):
    assert shipped["generator"] == "tools/kb_graph.py"
    assert {s["table"] for s in shipped["sources"].values()} == set(kb_graph.TABLES.values())
    assert all(len(s["sha256"]) == 64 for s in shipped["sources"].values())
    assert shipped["upstream"]["ge_converters"]["commit"] == "fced8842d149f16b587c2c867d427e4b766831ca"
    # row numbers are file lines (the `#` source line is line 1 where there is one, the header the next)
    assert shipped["ge_converters"]["aten::_adaptive_avg_pool3d"] == {
        "status": "not_implemented", "row": 6, "file": "aten/_adaptive_avg_pool3d.py"}
    assert shipped["inductor_fallback"]["aten::nonzero"]["row"] == 710
    assert shipped["capture"]["recapture_limit"]["value"] == 64
    assert set(shipped["capture"]) >= {"aclnn_only", "no_backward", "no_rng", "no_sync", "update_handlers"}
    statuses = {e["status"] for e in shipped["ge_converters"].values()}
    assert statuses <= kb_graph.GE_STATUSES


@pytest.mark.skipif(not FACTS.is_dir(), reason="the Ascend fact tables are not beside the repository")
def test_rows_point_at_the_lines_they_came_from(shipped):
    lines = (FACTS / "torchair_ge_converter_status.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[6 - 1].startswith("torch.ops.aten._adaptive_avg_pool3d.default\t")
    lines = (FACTS / "torch_npu_inductor_fallback_list.tsv").read_text(encoding="utf-8").splitlines()
    assert lines[710 - 1].startswith("aten.nonzero.default\t")
