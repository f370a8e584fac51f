"""opassess.handoff.opdesc: op_desc_<op>.json (msOpGen's operator prototype form) and op_plugin_<op>.yaml per
custom-dev operator, on tests/models/opdesc_custom.py (a torch.library op with attributes, called in float32 and
float16) and tests/models/two_custom_ops.py.

By hand for opassess_desc::scaled_clamp: op type ScaledClamp; two tensor inputs x0, x1 with type columns
[float, float16] (float32 -> msOpGen's "float"); one output y of the first input's dtype per column; attributes
scale (float, two values: required), dims (list_int, one value [1]: optional, default [1]), keep (bool, one value
true: optional, default true).
"""
from __future__ import annotations

import functools
import json

import jsonschema

from opassess.handoff import handoff_files
from opassess.handoff.opdesc import SCHEMA, describe, op_type
from opassess.kb.wheel_import import parse_functions_yaml
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view
from tests.score.records import MODELS


@functools.cache
def document(model: str) -> dict:
    return build_view(assess(ScanOptions(target=str(MODELS / model)))).document


def _op(model: str, key: str) -> dict:
    return next(op for op in document(model)["operators"] if op["op"] == key)


def test_op_description_of_a_custom_dev_op_validates_and_carries_the_captured_signatures():
    files = handoff_files(document("opdesc_custom.py"))
    text = files["op_desc_opassess_desc__scaled_clamp.json"]
    prototype = json.loads(text)
    jsonschema.validate(prototype, json.loads(SCHEMA.read_text(encoding="utf-8")))
    [op] = prototype
    assert op["op"] == "ScaledClamp" and op["language"] == "cpp"
    assert [(d["name"], d["param_type"], d["type"], d["format"]) for d in op["input_desc"]] == [
        ("x0", "required", ["float", "float16"], ["ND", "ND"]), ("x1", "required", ["float", "float16"], ["ND", "ND"])]
    assert op["output_desc"] == [{"name": "y", "param_type": "required", "format": ["ND", "ND"],
                                  "type": ["float", "float16"]}]
    assert op["attr"] == [{"name": "scale", "param_type": "required", "type": "float"},
                          {"name": "dims", "param_type": "optional", "type": "list_int", "default_value": [1]},
                          {"name": "keep", "param_type": "optional", "type": "bool", "default_value": True}]
    inferred = {item["field"] for item in op["opassess_inferred"]}
    assert {"op", "format", "output_desc", "attr scale.param_type"} <= inferred
    # msOpGen matches type and format lists column by column: every parameter has the same number of columns
    assert {len(d["type"]) for d in op["input_desc"] + op["output_desc"]} == {2}


def test_op_plugin_entry_binds_the_prototype_and_says_what_was_inferred():
    text = handoff_files(document("opdesc_custom.py"))["op_plugin_opassess_desc__scaled_clamp.yaml"]
    assert "# Inferred" in text
    [entry] = parse_functions_yaml(text, "op_plugin.yaml")["custom"]  # op-plugin's YAML subset, as kb import reads it
    assert entry["func"] == ("npu_scaled_clamp(Tensor x0, Tensor x1, *, float scale, int[] dims=[1], bool keep=True)"
                             " -> Tensor")
    assert entry["gen_opapi"]["exec"] == "aclnnScaledClamp" and entry["op_api"] == "[v2.13, newest]"


def test_only_custom_dev_operators_get_a_description():
    files = handoff_files(document("two_custom_ops.py"))
    assert sorted(n for n in files if n.startswith("op_desc_")) == ["op_desc_opassess_two__gated_tanh.json",
                                                                    "op_desc_opassess_two__row_rescale.json"]
    [gated] = json.loads(files["op_desc_opassess_two__gated_tanh.json"])
    assert gated["op"] == "GatedTanh" and "attr" not in gated  # no attributes captured
    assert describe(_op("two_custom_ops.py", "torch.nn.Linear"))["op"] == "Linear"


def test_op_type_is_upper_camel_case():
    assert op_type("opassess_two::row_rescale") == "RowRescale"
    assert op_type("custom_op.SignSTE") == "SignSTE"
    assert op_type("mylib::fused_bias_gelu_v2") == "FusedBiasGeluV2"
