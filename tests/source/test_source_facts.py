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


def test_indexed_lookups_answer_as_a_scan_of_the_rows_does(facts):
    """The lookups read dicts built once per facts file; for every name the tables hold (and some they do not), each
    answers what reading the rows in table order answers (the definition the indexes replace)."""
    from fnmatch import fnmatchcase

    def migration(api, kwargs):
        exact = [r for r in facts.rules if api in r.apis and r.applies(kwargs)]
        if exact:
            return exact[0]
        for rule in facts.rules:
            if rule.applies(kwargs) and any("*" in p and fnmatchcase(api, p) for p in rule.apis):
                patched = dict(rule.condition).get("patched")
                if not patched or any(p.kind == patched for p in facts.patches(api)):
                    return rule
        return None

    def library_rows(api):
        exact = tuple(lib for lib in facts.libraries if api in lib.symbols)
        root, last = api.split(".")[0], api.rsplit(".", 1)[-1]
        return exact or tuple(lib for lib in facts.libraries
                              if any(s.split(".")[0] == root and s.rsplit(".", 1)[-1] == last for s in lib.symbols))

    def covering(module):
        return tuple(lib for lib in facts.libraries
                     if any(module == m or module.startswith(m + ".") for m in lib.modules))

    apis = {a for r in facts.rules for a in r.apis} | {s for lib in facts.libraries for s in lib.symbols}
    apis |= {f"{a}.sub" for a in list(apis)} | {"torch.cuda.memory_stats", "flash_attn.other.flash_attn_func", "x"}
    modules = {m for lib in facts.libraries for m in lib.modules} | {a.rsplit(".", 1)[0] for a in apis} | {"nope"}
    for api in sorted(apis):
        for kwargs in ({}, {"map_location": "cuda"}, {"backend": "cudagraphs"}):
            assert facts.migration(api, kwargs) == migration(api, kwargs), api
        assert facts.library_rows(api) == library_rows(api), api
    for module in sorted(modules):
        assert facts.libraries_for_module(module) == covering(module), module
        assert facts.library_for_module(module) == next((lib for lib in covering(module) if lib.library != "torch"),
                                                        None), module
    for word in {w for r in facts.rules for w in (*r.literals, *r.imports)} | {"nothing"}:
        assert facts.migration_for_literal(word) == next((r for r in facts.rules if word in r.literals), None)
        assert facts.migration_for_import(word) == next((r for r in facts.rules if word in r.imports), None)
