"""ScanOptions checks the rules between its own fields where it is made (opassess/options.py); the CLI reports a
broken rule as bad usage (exit 2) naming the option, as typer reports a bad value."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.errors import EXIT_USAGE, UsageError
from opassess.options import DEFAULT_PRODUCT, OutputOptions, ScanOptions
from tests.support import EXAMPLES


@pytest.mark.parametrize("fields, option, message", [
    ({"device": "cuda"}, "--device", "expected meta or cpu"),
    ({"amp": "bf16"}, "--amp", "needs --train"),
    ({"train": True, "amp": "fp8"}, "--amp", "expected bf16 or fp16"),
    ({"train": True, "methods": ("fx",)}, "--capture", "does not apply with --train"),
    ({"graph_mode": "off", "graph_backend": "ge"}, "--graph-backend", "which is off"),
    ({"graph_mode": "eager"}, "--graph-mode", "expected one of capture, dynamo, off"),
    ({"route": "tflite"}, "--route", "expected one of onnx, vllm-ascend"),
    ({"route": "onnx", "exporter": "jit"}, "--exporter", "expected auto, dynamo or torchscript"),
    ({"route": "onnx", "quant": "w8a8"}, "--quant", "needs --route vllm-ascend"),
    ({"dtype": "float16", "input_shapes": ((1, 4),), "input_dtype": "bfloat16"}, "--input-dtype",
     "contradicts --dtype float16"),
    ({"graph_backend": "xla"}, "--graph-backend", "expected one of inductor, npugraph_ex, ge"),
])
def test_a_broken_rule_is_a_usage_error_naming_the_option(fields, option, message):
    with pytest.raises(UsageError, match=message) as info:
        ScanOptions(target="m.py", **fields)
    assert info.value.option == option and info.value.exit_code == EXIT_USAGE


def test_the_rules_hold_for_every_caller_not_only_the_cli():
    trained = ScanOptions(target="m.py", train=True, amp="fp16", device="cpu")
    assert trained.amp == "fp16" and ScanOptions(target="m.py").product == DEFAULT_PRODUCT == "Atlas A2"
    import dataclasses

    with pytest.raises(UsageError, match="needs --train"):
        dataclasses.replace(trained, train=False)  # a copy is checked too


@pytest.mark.parametrize("args, option, message", [
    (["--amp", "bf16"], "'--amp'", "needs --train"),
    (["--device", "cuda"], "'--device'", "expected meta or cpu"),
    (["--train", "--capture", "fx"], "'--capture'", "does not apply with --train"),
    # a back-end for an analysis that is off was silently accepted (exit 0)
    (["--graph-backend", "ge", "--no-graph-mode"], "'--graph-backend'", "which is off"),
    (["--graph-backend", "npugraph_ex", "--graph-mode", "off"], "'--graph-backend'", "which is off"),
    (["--fail-on-new"], "'--fail-on-new'", "needs --baseline"),
    # the inputs were cast to --dtype while the report named them --input-dtype
    (["--input-shape", "1,3,32,32", "--input-dtype", "bf16", "--dtype", "fp16"], "'--input-dtype'",
     "contradicts --dtype float16"),
])
def test_the_cli_reports_a_broken_rule_as_bad_usage(args, option, message):
    result = CliRunner().invoke(app, ["scan", str(EXAMPLES / "resnet_like.py"), *args])
    assert result.exit_code == 2
    assert f"Invalid value for {option}" in result.output and message in result.output
    assert "Traceback" not in result.output


def test_input_dtypes_the_cast_keeps_are_accepted():
    shaped = {"dtype": "float16", "input_shapes": ((1, 4),)}
    for input_dtype in ("float32", "float16", "int64", "bool"):  # the default, the same, and ones the cast leaves
        assert ScanOptions(target="m.py", input_dtype=input_dtype, **shaped).input_dtype == input_dtype
    assert ScanOptions(target="m.py", dtype="float16", input_dtype="bfloat16").input_shapes == ()  # (manifest's)


def test_output_options_check_their_own_rule():
    with pytest.raises(UsageError, match="needs --baseline") as info:
        OutputOptions(fail_on_new=True)
    assert info.value.option == "--fail-on-new"
    assert OutputOptions(fail_on_new=True, baseline=EXAMPLES / "old.json").fail_on_new


def test_the_default_product_is_stated_once():
    """Every --target default and every fallback for a report without a target is options.DEFAULT_PRODUCT: the
    string "Atlas A2" is a constant in one module only (docstrings and comments aside)."""
    import ast

    from tests.support import ROOT

    stated = sorted({str(p.relative_to(ROOT)) for p in (ROOT / "opassess").rglob("*.py")
                     for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
                     if isinstance(node, ast.Constant) and node.value == "Atlas A2"})
    assert stated == ["opassess/options.py"], stated
