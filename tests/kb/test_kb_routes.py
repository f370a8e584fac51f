"""tools/kb_routes.py: the HCCL / ONNX / quantisation parsers, a rebuild from ../shared reproducing the shipped file,
and the loader (opassess/kb/routes.py) reading it."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from opassess.kb.routes import load_route_facts

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_routes  # noqa: E402

FACTS = ROOT.parent / "shared" / "reference" / "ascend"
SHIPPED = ROOT / "opassess" / "data" / "kb" / "route_facts.json"
needs_facts = pytest.mark.skipif(not FACTS.is_dir(), reason="the fact tables are not next to the checkout")


def test_feature_texts_become_qualified_names():
    assert kb_routes.hccl_names("ReduceOp.BAND/BOR/BXOR") == [
        "torch.distributed.ReduceOp.BAND", "torch.distributed.ReduceOp.BOR", "torch.distributed.ReduceOp.BXOR"]
    assert kb_routes.hccl_names("all_to_all / all_to_all_single") == [
        "torch.distributed.all_to_all", "torch.distributed.all_to_all_single"]
    assert kb_routes.hccl_names("tensor.parallel.parallelize_module / RowwiseParallel")[1] == \
        "torch.distributed.tensor.parallel.RowwiseParallel"
    assert kb_routes.hccl_names("collective dtypes (reduce ops)") == []


def test_dtype_texts():
    assert kb_routes.dtype_list("bf16,fp16,fp32,int8") == ["bfloat16", "float16", "float32", "int8"]
    assert kb_routes.dtype_list("same list as broadcast") == []
    assert kb_routes.detail_dtypes("doc input fp32 only; use_compatible_impl switch") == ["float32"]
    assert kb_routes.detail_dtypes("uint64,float64 only on Ascend 950+") == []  # a product gate, not a dtype list


def test_the_shipped_facts_cite_rows_and_keep_the_950_cells_as_stated():
    facts = load_route_facts()
    bor = facts.hccl("torch.distributed.ReduceOp.BOR")
    assert (bor.row, bor.status, bor.documented) == (7, "unsupported", False)
    hook = facts.hccl("torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook")
    assert hook.row == 17 and hook.dtypes == ("float32",)
    assert facts.hccl("torch.distributed.distributed_c10d.gather").status == "conditional"
    assert facts.onnx_op("LayerNormalization", 17).cann_op == "PartitionedCall"
    assert facts.onnx_op("LayerNormalization", 16) is None and 17 in facts.onnx_opsets_of("LayerNormalization")
    w8a8 = next(s for s in facts.quant_schemes if s.quant_type == "W8A8")
    assert w8a8.status("A2") == "yes" and w8a8.status("950") == "TBD"  # not yet stated: never read as support


@needs_facts
def test_rebuild_from_facts_reproduces_the_shipped_file(tmp_path):
    kb_routes.build(FACTS, tmp_path)
    assert (tmp_path / "route_facts.json").read_bytes() == SHIPPED.read_bytes()


def test_every_row_is_shipped_once_with_its_line():
    data = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert len(data["hccl"]) == data["sources"]["hccl"]["rows"]
    assert len(data["quant"]) == data["sources"]["quant"]["rows"]
    rows = [row for ops in data["onnx"]["opsets"].values() for _, row in ops.values()]
    rows += [row for ops in data["onnx"]["domains"].values() for _, row in ops.values()]
    assert len(rows) == len(set(rows)) and min(rows) >= 2
    assert not re.search(r"[\u3000-\u9fff]", SHIPPED.read_text(encoding="utf-8"))
