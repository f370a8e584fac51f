"""JSON report: valid against opassess/report/assessment.schema.json for every example model, stable and parseable."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import jsonschema
import pytest

import opassess.report
from opassess.report import render
from tests.report.support import ROOT, example_files, model_assessment, real_assessment, synthetic_example

SCHEMA_PATH = Path(opassess.report.__file__).parent / "assessment.schema.json"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, document):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


@pytest.mark.parametrize("name", [p.stem for p in example_files()])
def test_report_of_every_example_validates(validator, name):
    assessment = real_assessment(name)
    document = json.loads(render(assessment, "json"))
    assert _errors(validator, document) == []
    assert document["format_version"] == 1
    assert document["model"]["source"] == f"examples/{name}.py"
    # every operator of the inventory is reported, none dropped
    assert sorted(op["op"] for op in document["operators"]) == sorted(o.key for o in assessment.inventory.operators)
    assert document["summary"]["operator_types"] == len(assessment.inventory.operators)
    assert sum(document["summary"]["categories"].values()) == len(assessment.inventory.operators)
    # every stage the pipeline runs says how long it took, scoring included
    assert {"load", "trace", "classify", "findings", "score", "estimate"} <= set(document["seconds"])


def test_custom_op_with_a_composite_reference_is_registered_not_written(validator):
    """fused_bias_gelu is F.gelu(x + bias) registered for the CPU only: its reference runs aten::add and aten::gelu,
    both with NPU kernels, so the work is registering that composite for PrivateUse1 (issue 40: was custom-dev at
    13.3 person-days), the fused kernel the performance option priced apart."""
    document = json.loads(render(real_assessment("custom_op_model"), "json"))
    op = next(o for o in document["operators"] if o["op"] == "opassess_examples::fused_bias_gelu")
    assert (op["category"], op["known"], op["kind"]) == ("param-converted", False, "custom")
    assert [r["code"] for r in op["reasons"]] == ["register-composite"]
    assert "aten::add.Tensor, aten::gelu" in op["reasons"][0]["message"]
    assert op["person_days"]["likely"] < 2.0
    assert [u["op"] for u in document["unknown_operators"]] == ["opassess_examples::fused_bias_gelu"]
    assert op["source"] and all(":" in s for s in op["source"])


def test_hand_built_assessment_values(validator):
    document = json.loads(render(synthetic_example("resnet_like"), "json"))
    assert _errors(validator, document) == []
    first = document["operators"][0]
    assert first["op"] == "torch.nn.AdaptiveAvgPool2d"
    assert first["person_days"] == {"low": 10.0, "likely": 12.0, "high": 16.0}
    assert first["risk"] == {"likelihood": 5, "impact": 4, "stars": 5, "signals": ["test"]}
    assert first["scores"]["composite"] == 0.9 and first["scores"]["subscores"][0]["criterion"] == "dtype_support"
    assert document["summary"]["by_category"]["custom-dev"] == {"low": 10.0, "likely": 12.0, "high": 16.0}
    assert document["findings"][0]["kind"] == "fusion"


def test_assessment_without_estimate_validates(validator):
    document = json.loads(render(replace(synthetic_example("resnet_like"), estimate=None), "json"))
    assert _errors(validator, document) == []
    assert document["risk_matrix"] is None and document["summary"]["p90"] is None


def test_schema_rejects_a_broken_report(validator):
    document = json.loads(render(synthetic_example("resnet_like"), "json"))
    document["operators"][0]["category"] = "easy"
    del document["summary"]["categories"]["direct"]
    document["risk_matrix"] = document["risk_matrix"][:4]
    errors = _errors(validator, document)
    assert len(errors) == 3, errors


def test_top_level_key_order_is_the_documented_one():
    document = json.loads(render(synthetic_example("resnet_like"), "json"))
    assert list(document)[:6] == ["format_version", "tool", "model", "target", "torch_npu", "kb_version"]


def test_a_deprecated_replacement_is_in_the_contract(validator):
    document = json.loads(render(model_assessment("nms"), "json"))
    assert not _errors(validator, document)
    nms = next(op for op in document["operators"] if op["op"] == "torchvision::nms")
    assert nms["replacement_deprecated"] == {"successor": None}
    assert all(op["replacement_deprecated"] is None for op in document["operators"] if op is not nms)


def _properties(node, path=""):
    """Every (path, property schema) under a `properties` keyword, however deep (items, oneOf, $defs ...)."""
    if isinstance(node, dict):
        for key, value in (node.get("properties") or {}).items():
            yield f"{path}/{key}", value
        for key, value in node.items():
            if key != "properties":
                yield from _properties(value, f"{path}/{key}")
        for key, value in (node.get("properties") or {}).items():
            yield from _properties(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _properties(value, f"{path}[{i}]")


@pytest.mark.parametrize("schema_path", sorted((ROOT / "opassess").rglob("*.schema.json")), ids=lambda p: p.name)
def test_every_property_of_every_shipped_schema_has_a_description(schema_path):
    """The assessment, profile and op-description schemas alike: a reader of any document opassess writes can look
    each key up (a $ref property is described where it is used)."""
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    properties = list(_properties(schema))
    missing = sorted({path for path, node in properties if isinstance(node, dict) and "description" not in node})
    assert properties and missing == []


def test_every_schema_property_has_a_description():
    schema = json.loads(SCHEMA_PATH.read_text())
    properties = list(_properties(schema))
    assert len(properties) > 100  # the walk reaches nested and $defs properties
    missing = [path for path, prop in properties if not isinstance(prop, dict) or not prop.get("description")]
    assert missing == []


def test_training_step_report_validates_and_carries_backward_and_optimizer(validator):
    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess
    from tests.report.support import ROOT

    assessment = assess(ScanOptions(target=str(ROOT / "tests" / "models" / "train_lgamma.py"), train=True))
    document = json.loads(render(assessment, "json"))
    assert _errors(validator, document) == []
    assert document["model"]["capture"]["step"] == "train" and "AdamW" in document["model"]["capture"]["step_note"]
    ops = {op["op"]: op for op in document["operators"]}
    assert ops["torch.lgamma"]["backward_aten"][0] == "aten::digamma"
    assert ops["torch.lgamma"]["backward_support"]["aten::digamma"] is False
    assert sorted(op["op"] for op in document["operators"] if op["kind"] == "optimizer") == [
        "torch.nn.utils.clip_grad_norm_", "torch.optim.AdamW.step"]
    assert ops["torch.optim.AdamW.step"]["replacement"] == "torch.optim.AdamW(fused=True)"


def test_forward_report_says_forward_step_with_empty_backward(validator):
    document = json.loads(render(real_assessment("resnet_like"), "json"))
    assert document["model"]["capture"]["step"] == "forward" and document["model"]["capture"]["step_note"] is None
    assert all(op["backward_aten"] == [] and op["kind"] != "optimizer" for op in document["operators"])


def test_schema_documents_backward_aten_and_the_optimizer_kind():
    operator = json.loads(SCHEMA_PATH.read_text())["$defs"]["operator"]["properties"]
    assert "optimizer" in operator["kind"]["enum"] and "optimizer" in operator["kind"]["description"]
    assert "backward" in operator["backward_aten"]["description"]
    assert operator["backward_support"]["description"]


@pytest.mark.parametrize("name", [p.stem for p in example_files()])
def test_summary_orders_the_band_inside_the_range_and_splits_by_origin(validator, name):
    doc = json.loads(render(real_assessment(name), "json"))
    summary = doc["summary"]
    days = summary["person_days"]
    assert days["low"] <= summary["p10"] <= summary["p50"] <= summary["p90"] <= days["high"]
    assert summary["headline"].startswith(f"{summary['p50']:.1f} person-days (P10-P90 ")
    assert sum(e["likely"] for e in summary["by_origin"].values()) == pytest.approx(days["likely"], abs=0.05)
    assert summary["profile"] == "default" and "assumptions until calibrated" in summary["assumptions"]
    assert {op["cost"] for op in doc["operators"]} <= {"zero-cost", "validation-block", "per-operator"}


def test_schema_documents_the_band_and_by_origin():
    schema = json.loads((Path(opassess.report.__file__).parent / "assessment.schema.json").read_text())
    summary = schema["properties"]["summary"]["properties"]
    for key in ("p10", "p50", "p90", "by_origin", "activities", "cost_bases", "profile", "assumptions", "band"):
        assert summary[key].get("description"), key
    assert "low <= p10 <= p50 <= p90" in summary["p50"]["description"]
    assert "transformers" in summary["by_origin"]["description"]
