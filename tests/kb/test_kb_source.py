"""tools/kb_source.py: the table parsers, a rebuild from ../shared reproducing the shipped file, the shipped data."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from opassess.vocabulary import Category

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_source  # noqa: E402

FACTS = ROOT.parent / "shared" / "reference" / "ascend"
SHIPPED = ROOT / "opassess" / "data" / "kb" / "source_facts.json"
HANDLINGS = {"automatic", "hand-edit", "unsupported", "no-op-on-npu"}
PATCH_KINDS = {"module-swap", "device-arg-rewrite", "rebind", "backend-string", "disabled", "library-wrapper"}
DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64",
          "bfloat16", "bool", "float8", "float4", "float8e4", "float8e5"}


@pytest.fixture(scope="module")
def shipped():
    return json.loads(SHIPPED.read_text(encoding="utf-8"))


# ------------------------------------------------------------------ parsers


def test_bare_names_inherit_the_module_of_the_dotted_name_before_them():
    parts = kb_source.split_list("torch.cuda.amp.autocast / torch.cuda.amp.GradScaler / custom_fwd", "/")
    assert kb_source.qualify(parts) == ["torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler",
                                        "torch.cuda.amp.custom_fwd"]
    assert kb_source.qualify(["torch.cuda.<Type>Tensor"]) == ["torch.cuda.*Tensor"]
    assert kb_source.qualify(["torch.backends.cudnn.benchmark = True", "False"]) == ["torch.backends.cudnn.benchmark"]


def test_library_symbols_are_qualified_with_the_import_name():
    # bnb is bitsandbytes' alias; 'amp.scale_loss' in the apex row is relative to apex.
    assert kb_source.qualify(["bnb.nn.Linear4bit", "Params4bit"], "bitsandbytes", ("bitsandbytes",)) == [
        "bitsandbytes.nn.Linear4bit", "bitsandbytes.nn.Params4bit"]
    assert kb_source.qualify(["amp.scale_loss"], "apex", ("apex", "amp_C")) == ["apex.amp.scale_loss"]
    assert kb_source.library_modules("flash_attn (direct calls)") == ("flash_attn", ("flash_attn",), "direct calls")
    with pytest.raises(ValueError):
        kb_source.library_modules("unheard_of_lib (x)")


def test_match_conditions_and_forms():
    assert kb_source.match_condition("call torch.load without map_location") == {"absent": "map_location"}
    assert kb_source.match_condition("call torch.compile with backend='cudagraphs'") == {
        "present": "backend", "value": "cudagraphs"}
    assert kb_source.match_condition("call torch.cuda.<name> where <name> is in torch_npu.npu.__all__") == {
        "patched": "module-swap"}
    assert kb_source.match_form("assignment to torch.backends.cudnn.benchmark") == "assignment"
    assert kb_source.match_form("string literal 'nccl' in a comparison") == "string"


def test_triton_argument_constraints():
    assert kb_source.arg_constraints("sem!=acq_rel; scope!=gpu; padding_option; acc dtype fp16") == [
        ["sem", "!=", "acq_rel"], ["scope", "!=", "gpu"], ["padding_option", "set", ""], ["acc dtype fp16", "note", ""]]
    assert kb_source.triton_names("operator & (tl.and)") == ["triton.language.and"]
    assert kb_source.triton_names("triton.Config") == ["triton.Config"]


def test_chinese_remarks_are_dropped_and_never_shipped():
    assert kb_source.english("Ascend/MindSpeed@005894b8:README.md (快速上手: import x)") == \
        "Ascend/MindSpeed@005894b8:README.md"
    with pytest.raises(ValueError):
        kb_source.english("约束说明")


# ------------------------------------------------------------------ shipped data


def test_shipped_provenance(shipped):
    assert shipped["format"] == 1 and shipped["generator"] == "tools/kb_source.py"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", shipped["generated_at"])
    assert {s["table"] for s in shipped["sources"].values()} == set(kb_source.TABLES.values())
    assert all(re.fullmatch(r"[0-9a-f]{64}", s["sha256"]) for s in shipped["sources"].values())
    assert len(shipped["upstream"]) == 4
    assert all(re.fullmatch(r"[0-9a-f]{40}", u["commit"]) for u in shipped["upstream"])


def test_every_row_is_shipped_once(shipped):
    rows = {key: s["rows"] for key, s in shipped["sources"].items()}
    patch_rows = [r[3] for entries in shipped["patches"].values() for r in entries]
    assert len(patch_rows) == len(set(patch_rows)) == rows["patches"] == 330
    assert [r["row"] for r in shipped["migration"]] == list(range(2, rows["migration"] + 2))
    assert [r["row"] for r in shipped["libraries"]] == list(range(2, rows["libraries"] + 2))
    triton = shipped["triton"]
    triton_rows = {e["row"] for e in triton["apis"].values()} | {r["row"] for r in triton["rules"]}
    assert triton_rows == set(range(2, rows["triton"] + 2))


def test_shipped_values_use_the_vocabularies(shipped):
    assert {r[0] for entries in shipped["patches"].values() for r in entries} == PATCH_KINDS
    assert {r["handling"] for r in shipped["migration"]} == HANDLINGS
    assert {r["gpu2ascend"] for r in shipped["migration"]} <= HANDLINGS
    for lib in shipped["libraries"]:
        Category.parse(lib["category"])
    for api in shipped["triton"]["apis"].values():
        assert set(api.get("unsupported_dtypes", [])) <= DTYPES
        assert set(api.get("ascend_dtypes", [])) <= DTYPES


def test_known_facts_are_in_the_shipped_file(shipped):
    assert shipped["patches"]["torch.cuda.set_device"][0][0] == "module-swap"
    nccl = next(r for r in shipped["migration"] if "nccl" in r.get("literals", []))
    assert nccl["handling"] == "hand-edit" and nccl["npu_equivalent"] == "'hccl'"
    atomic = shipped["triton"]["apis"]["triton.language.atomic_add"]
    assert "int64" in atomic["unsupported_dtypes"] and ["sem", "!=", "acq_rel"] in atomic["unsupported_args"]
    fa = [lib for lib in shipped["libraries"] if "flash_attn.flash_attn_func" in lib["symbols"]]
    assert [lib["row"] for lib in fa] == [2, 3, 5]


def test_shipped_file_has_no_chinese_text():
    assert not re.search(r"[\u4e00-\u9fff]", SHIPPED.read_text(encoding="utf-8"))


# ------------------------------------------------------------------ rebuild


@pytest.mark.skipif(not FACTS.is_dir(), reason="../shared/reference/ascend is not beside the checkout")
def test_rebuild_from_facts_reproduces_the_shipped_file(tmp_path):
    assert kb_source.main(["--facts", str(FACTS), "--out", str(tmp_path)]) == 0
    rebuilt = json.loads((tmp_path / "source_facts.json").read_text(encoding="utf-8"))
    assert rebuilt == json.loads(SHIPPED.read_text(encoding="utf-8")), "rerun tools/kb_source.py"


@pytest.mark.skipif(not FACTS.is_dir(), reason="../shared/reference/ascend is not beside the checkout")
def test_a_changed_content_gets_a_new_date(tmp_path, monkeypatch):
    old = tmp_path / "source_facts.json"
    old.write_text(json.dumps({"generated_at": "2000-01-01T00:00:00Z", "format": 0}), encoding="utf-8")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    assert kb_source.build(FACTS, tmp_path)["generated_at"] != "2000-01-01T00:00:00Z"
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    assert kb_source.build(FACTS, tmp_path)["generated_at"] == "1970-01-01T00:00:00Z"
