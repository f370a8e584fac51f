"""Tests for opassess.report.sections.plan: paths a reader can use, repeated modules grouped, action items, wrapping."""
from __future__ import annotations

from opassess.records import Effort, Finding
from opassess.report.reading import read_document
from opassess.report.sections.plan import (
    action_items,
    group_repeats,
    is_library_source,
    project_source,
    shorten_paths,
    shown_source,
    wrap,
)


def days(likely: float) -> dict[str, float]:
    return {"low": likely, "likely": likely, "high": likely}


LIB = "/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py:301"


def test_library_paths_shown_relative_to_their_package():
    assert is_library_source(LIB) and not is_library_source("examples/model.py:3")
    assert shown_source(LIB) == "transformers/models/llama/modeling_llama.py:301"
    assert shown_source("examples/model.py:3") == "examples/model.py:3"
    assert shorten_paths(f"TypeError (at {LIB})") == "TypeError (at transformers/models/llama/modeling_llama.py:301)"


def test_project_source_never_points_into_a_library():
    assert project_source(LIB, "models/llama.py") == "models/llama.py"
    assert project_source("models/llama.py:12", "models/llama.py") == "models/llama.py:12"
    assert project_source(LIB, "transformers.models.llama:build") is None  # no file to point at


def test_thirty_two_layers_are_one_row_with_their_summed_effort():
    by_module = {"": Effort(3.2, 6.4, 9.6), "model": Effort(3.2, 6.4, 9.6), "model.layers": Effort(3.2, 6.4, 9.6)}
    types = {"model": "LlamaModel", "model.layers": "ModuleList"}
    for i in range(32):
        by_module[f"model.layers.{i}"] = Effort(0.1, 0.2, 0.3)
        by_module[f"model.layers.{i}.self_attn"] = Effort(0.05, 0.1, 0.15)
        types[f"model.layers.{i}"] = "LlamaDecoderLayer"
        types[f"model.layers.{i}.self_attn"] = "LlamaAttention"
    grouped, classes = group_repeats(by_module, types)
    assert sorted(grouped) == ["", "model", "model.layers", "model.layers.[0-31]", "model.layers.[0-31].self_attn"]
    assert classes["model.layers.[0-31]"] == "x32 (LlamaDecoderLayer)"
    assert grouped["model.layers.[0-31]"].likely == 6.4 or abs(grouped["model.layers.[0-31]"].likely - 6.4) < 1e-9
    assert classes["model.layers.[0-31].self_attn"] == "LlamaAttention"


def test_numbered_siblings_of_different_classes_stay_apart():
    by_module = {"blocks.0": Effort(1, 1, 1), "blocks.1": Effort(2, 2, 2)}
    grouped, _ = group_repeats(by_module, {"blocks.0": "Conv", "blocks.1": "Attn"})
    assert sorted(grouped) == ["blocks.0", "blocks.1"]


def test_action_items_name_what_to_do_and_who_owns_the_code():
    document = read_document({"tool": {"name": "opassess", "version": "0"}, "model": {"source": "m.py"}, "operators": [
        {"op": "mylib::gelu", "category": "custom-dev", "person_days": days(12.0), "origin": "project"},
        {"op": "transformers.masking_utils.sdpa_mask", "category": "param-converted", "origin": "transformers",
         "person_days": days(3.5),
         "reasons": [{"code": "api-supported", "message": "documented"},
                     {"code": "dtype-cast", "message": "int64 mask is cast to int32."}]},
        {"op": "torch.nn.Conv2d", "category": "direct", "cost": "validation-block"},
        {"op": "torch.nn.Linear", "category": "param-converted", "cost": "decision", "person_days": days(0.05),
         "cost_note": "precision plan check 0.02-0.05-0.15", "reasons": [{"code": "dtype", "message": "no bf16"}]},
        {"op": "torch.topk", "category": "param-converted", "cost": "priced-change", "person_days": days(0.5),
         "cost_note": "sorted=False: local-rewrite 0.25-0.5-1 (pass sorted=True)", "reasons": []},
    ], "summary": {"decisions": [{"name": "precision", "title": "precision plan: run in float16",
                                  "operators": ["torch.nn.Linear"], "person_days": days(2.05),
                                  "plan": ["run in float16", "GradScaler(init_scale=1024)"]}]}})
    finding = Finding(kind="rmsnorm", title="RMSNorm by hand", nodes=(), ops=(), source=None,
                      npu_api="torch_npu.npu_rms_norm", effect="x")
    compute = Finding(kind="compute", title="share", nodes=(), ops=(), source=None, npu_api=None, effect="y")
    mixed = Finding(kind="mixed-precision", title="Linear: no bf16", nodes=(), ops=("torch.nn.Linear",), source=None,
                    npu_api=None, effect="z")
    items = action_items(document, [finding, compute, mixed])
    # the decision is one item (its operator none of its own, nor its mixed-precision finding); the priced change
    # says its edit
    assert [(i.kind, i.subject) for i in items] == [("decision", "precision plan: run in float16"),
                                                   ("custom-dev", "mylib::gelu"),
                                                   ("param-converted", "transformers.masking_utils.sdpa_mask"),
                                                   ("param-converted", "torch.topk"),
                                                   ("rmsnorm", "RMSNorm by hand")]
    assert items[0].action == "run in float16; GradScaler(init_scale=1024)" and items[0].days_text == "2.0 person-days"
    assert items[1].action.startswith("write an NPU kernel") and items[1].days_text == "12.0 person-days"
    assert items[2].action == "int64 mask is cast to int32 (in transformers: upstream code)"
    assert items[3].action.startswith("sorted=False: local-rewrite") and items[3].days_text == "0.5 person-days"
    assert items[4].action == "adopt torch_npu.npu_rms_norm"


def test_wrap_breaks_long_names_after_dots_and_double_colons():
    name = "transformers.models.llama.modeling_llama.LlamaAttention.forward"
    lines = wrap(f"- param-converted: {name}: use torch_npu.npu_fusion_attention", 40, indent="    ")
    assert all(len(line) <= 40 for line in lines)
    assert "".join(line.strip() for line in lines).replace(" ", "") == \
        f"-param-converted:{name}:usetorch_npu.npu_fusion_attention"
    assert any(line.rstrip().endswith(".") for line in lines[:-1])  # broken after a dot, not mid-word
    assert wrap("a::b::c", 10) == ["a::b::c"]
    assert all(len(line) <= 12 for line in wrap("ns::" + "x" * 30, 12))


def test_project_source_prefers_the_nearest_project_frame():
    assert project_source(LIB, "models/net.py:31") == "models/net.py:31"
    assert project_source(LIB, LIB) is None


def test_shorten_paths_takes_the_portable_marker_too():
    """The display reads the scrubbed document ('site-packages/torchvision/...'): people see the package path."""
    assert shorten_paths("boom (at site-packages/torchvision/ops/boxes.py:41)") == \
        "boom (at torchvision/ops/boxes.py:41)"
    assert shorten_paths("(at /venv/lib/python3.11/site-packages/t/x.py:3)") == "(at t/x.py:3)"
    assert shorten_paths("my-site-packages/x.py") == "my-site-packages/x.py"  # a project folder of that name stays
