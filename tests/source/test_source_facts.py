"""opassess.source.facts: lookups by qualified name over the shipped source_facts.json."""
from __future__ import annotations

import json

import pytest

from opassess.errors import KnowledgeBaseError
from opassess.source.facts import load_source_facts


@pytest.fixture(scope="module")
def facts():
    return load_source_facts()


def test_patches_by_api(facts):
    swap, rewrite = facts.patches("torch.cuda.set_device")
    assert (swap.kind, swap.row, swap.source_line) == ("module-swap", 9, 355)
    assert rewrite.kind == "device-arg-rewrite"
    assert facts.patches("torch.cuda.nvtx") == ()


def test_migration_rules_exact_wildcard_and_conditions(facts):
    assert facts.migration("torch.nn.DataParallel").handling == "unsupported"
    assert facts.migration("torch.cuda.nvtx.range_push").handling == "hand-edit"
    assert facts.migration("torch.load", {}).row == 25
    assert facts.migration("torch.load", {"map_location": "cuda"}).row == 24
    assert facts.migration("torch.compile", {"backend": "inductor"}) is None
    assert facts.migration("torch.compile", {"backend": "cudagraphs"}).npu_equivalent.startswith("torch.compile")
    # The torch.cuda.<name> wildcard row only covers names the module swap installs.
    assert facts.migration("torch.cuda.empty_cache").row == 26
    assert facts.migration("torch.cuda.list_gpu_processes") is None
    assert facts.migration_for_literal("nccl").npu_equivalent == "'hccl'"
    assert facts.migration_for_import("amp_C").row == 13


def test_library_rows_match_submodule_re_exports(facts):
    assert [r.row for r in facts.library_rows("flash_attn.flash_attn_func")] == [2, 3, 5]
    assert [r.row for r in facts.library_rows("flash_attn.flash_attn_interface.flash_attn_func")] == [2, 3, 5]
    assert facts.library_rows("apex.optimizers.FusedAdam")[0].route.startswith("apex.optimizers.NpuFusedAdam")
    assert facts.library_for_module("flash_attn.bert_padding").library == "flash_attn"
    assert facts.library_for_module("numpy") is None
    row2 = facts.library_rows("flash_attn.flash_attn_func")[0]
    assert row2.dropped_args({"window_size": "?", "causal": "?"}) == ("window_size",)


def test_triton_limits(facts):
    atomic = facts.triton_api("tl.atomic_add")
    assert atomic == facts.triton_api("triton.language.atomic_add")
    assert "int64" in atomic.unsupported_dtypes and ("sem", "!=", "acq_rel") in atomic.unsupported_args
    assert "float64" in facts.triton_api("tl.dot").unsupported_dtypes
    assert facts.triton_api("tl.no_such_api") is None
    assert "65535" in facts.triton_rule("coreDim").limit


def test_relevance(facts):
    assert facts.is_relevant("torch.cuda.anything_at_all")
    assert facts.is_relevant("xformers.ops.memory_efficient_attention")
    assert not facts.is_relevant("torch.zeros")  # patched only to rewrite a 'cuda' device argument
    assert not facts.is_relevant("torch.nn.Linear")


def test_npu_op_names_come_from_the_shipped_custom_ops(facts):
    assert "npu_rotary_mul" in facts.npu_op_names and "npu_fusion_attention" in facts.npu_op_names


def test_bad_files_raise_knowledge_base_errors(tmp_path):
    with pytest.raises(KnowledgeBaseError, match="missing"):
        load_source_facts(tmp_path / "none.json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"format": 99}), encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="format"):
        load_source_facts(wrong)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(KnowledgeBaseError, match="not valid JSON"):
        load_source_facts(broken)
    assert load_source_facts().provenance["generator"] == "tools/kb_source.py"
