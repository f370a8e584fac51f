"""ScanOptions checks the rules between its own fields where it is made (opassess/options.py); the CLI reports a
broken rule as bad usage (exit 2) naming the option, as typer reports a bad value."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.errors import EXIT_USAGE, UsageError
from opassess.options import DEFAULT_PRODUCT, ScanOptions
from tests.support import EXAMPLES


@pytest.mark.parametrize("fields, option, message", [
    ({"device": "cuda"}, "--device", "expected meta or cpu"),
    ({"amp": "bf16"}, "--amp", "needs --train"),
    ({"train": True, "amp": "fp8"}, "--amp", "expected bf16 or fp16"),
    ({"train": True, "methods": ("fx",)}, "--capture", "does not apply with --train"),
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
])
def test_the_cli_reports_a_broken_rule_as_bad_usage(args, option, message):
    result = CliRunner().invoke(app, ["scan", str(EXAMPLES / "resnet_like.py"), *args])
    assert result.exit_code == 2
    assert f"Invalid value for {option}" in result.output and message in result.output
    assert "Traceback" not in result.output
