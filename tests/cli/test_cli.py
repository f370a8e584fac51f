"""CLI: the scan command end to end through typer's CliRunner, exit codes and one-line errors."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opassess.cli import app, pick_format
from tests.support import EXAMPLES, MODELS

runner = CliRunner()


def scan(*args):
    return runner.invoke(app, ["scan", *map(str, args)])


def test_scan_writes_json_report(tmp_path):
    out = tmp_path / "report.json"
    result = scan(EXAMPLES / "resnet_like.py", "-f", "json", "-o", out, "-q")
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["format_version"] == 1
    counts = {op["op"]: op["count"] for op in report["operators"]}
    assert counts["torch.nn.Conv2d"] == 20 and counts["Tensor.add"] == 8  # hand counts: see test_inventory
    assert report["model"]["capture"]["method"] == "fx"
    conv = next(op for op in report["operators"] if op["op"] == "torch.nn.Conv2d")
    assert conv["aten"] == ["aten::convolution"] and "aten::conv2d" in conv["entry"]
    assert conv["category"] in ("direct", "param-converted", "custom-dev") and conv["person_days"]["likely"] > 0


def test_format_follows_the_output_extension(tmp_path):
    assert pick_format(None, "r.html") == "html" and pick_format(None, "r.md") == "md"
    assert pick_format("json", "r.html") == "json" and pick_format(None, None) == "terminal"
    out = tmp_path / "r.csv"
    assert scan(EXAMPLES / "lstm_tagger.py", "-o", out, "-q").exit_code == 0
    assert out.read_text().splitlines()[0].startswith("op,")


def test_terminal_summary_is_the_default():
    result = scan(EXAMPLES / "resnet_like.py", "-q")
    assert result.exit_code == 0
    assert "torch.nn.Conv2d" in result.output and "person-days" in result.output


def test_piped_terminal_summary_honours_columns_and_ends_with_action_items():
    result = runner.invoke(app, ["scan", str(EXAMPLES / "custom_op_model.py"), "-q"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.rstrip().splitlines()
    assert max(len(line) for line in lines if not line.startswith("Full report:")) <= 80
    actions = lines[lines.index("Action items:") + 1:]
    # fused_bias_gelu's reference is F.gelu(x + bias): registered as a composite, not written as a kernel (issue 40)
    assert "- param-converted: opassess_examples::fused_bias_gelu:" in actions
    assert not any(line.startswith("- custom-dev") for line in actions)
    assert all(line.startswith(("- ", "    ")) for line in actions)


def test_profile_classic_and_unknown_profile(tmp_path):
    out = tmp_path / "r.json"
    assert scan(EXAMPLES / "resnet_like.py", "--profile", "classic", "-o", out, "-q").exit_code == 0
    report = json.loads(out.read_text())
    assert report["summary"]["profile"] == "classic" and report["summary"]["activities"] == []
    assert all(op["person_days"]["likely"] >= 1 for op in report["operators"])
    result = scan(EXAMPLES / "resnet_like.py", "--profile", "fast", "-q")
    assert result.exit_code == 2 and "'fast': expected one of default, classic" in result.output  # bad usage


@pytest.mark.parametrize("name, expected", [
    ("syntax_error.py", "syntax error"),
    ("no_build_model.py", "defines no build_model()"),
    ("forward_raises.py", "forward() of"),
    ("wrong_shape.py", "forward() of"),
    ("build_raises.py", "build_model() raised KeyError"),
    ("does_not_exist.py", "no such model file"),
])
def test_bad_input_exits_1_with_one_line_and_no_report(tmp_path, name, expected):
    out = tmp_path / "report.json"
    result = scan(MODELS / "bad" / name, "-o", out, "-q")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines() if result.stderr else result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("opassess: error:") and expected in lines[0], lines
    assert name in lines[0]
    assert "Traceback" not in result.output
    assert not out.exists()


def test_debug_shows_the_traceback():
    result = scan(MODELS / "bad" / "forward_raises.py", "--debug", "-q")
    assert result.exit_code == 1 and "Traceback" in result.output


def test_broken_weights_file_is_an_input_error(tmp_path):
    weights = tmp_path / "weights.toml"
    weights.write_text("functional = [\n")
    result = scan(EXAMPLES / "resnet_like.py", "--weights", weights, "-q")
    assert result.exit_code == 1 and str(weights) in result.output


@pytest.mark.parametrize("args", [
    ["scan"],
    ["scan", "x.py", "--format", "pdf"],
    ["scan", "x.py", "--device", "cuda"],
    ["scan", "x.py", "--no-such-flag"],
    ["scan", "x.py", "--amp", "bf16"],  # --amp needs --train
    ["scan", "x.py", "--train", "--amp", "fp8"],
    ["scan", "x.py", "--train", "--capture", "fx"],
])
def test_usage_errors_exit_2(args):
    assert runner.invoke(app, args).exit_code == 2


def test_mixed_precision_dtype_is_recorded(tmp_path):
    out = tmp_path / "r.json"
    assert scan(EXAMPLES / "lstm_tagger.py", "--dtype", "bf16", "-o", out, "-q").exit_code == 0
    assert json.loads(out.read_text())["model"]["dtype"] == "bfloat16"


def test_terminal_says_why_an_earlier_capture_was_not_used():
    # examples/llama_like.py slices a causal-mask buffer by the sequence length: torch.fx cannot trace that
    result = scan(EXAMPLES / "llama_like.py", "-q")
    assert result.exit_code == 0
    assert "captured with dispatch" in result.output
    assert "fx capture not used: TypeError: slice indices must be integers" in result.output


@pytest.mark.parametrize("flag, value, expected", [
    ("--target", "Atlas Z9", "unknown Ascend product 'Atlas Z9'"),
    ("--torch-npu", "1.0", "torch version 1.0 is not covered"),
])
def test_unknown_target_or_version_fails_before_the_model_runs(tmp_path, model_file, flag, value, expected):
    marker = tmp_path / "ran"
    path = model_file(f'''
        import pathlib, torch, torch.nn as nn
        def build_model():
            pathlib.Path({str(marker)!r}).write_text("built")
            return nn.Linear(2, 2)
        def example_inputs(): return (torch.randn(1, 2),)
    ''')
    result = scan(path, flag, value, "-q")
    assert result.exit_code == 2 and expected in result.output  # an option value opassess does not accept
    assert not marker.exists()


def test_model_code_printing_leaves_the_json_on_stdout_valid(model_file):
    # The model file prints while imported, built and run: its text goes to stderr, the report alone to stdout.
    path = model_file('''
        import torch, torch.nn as nn
        print("importing")
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)
            def forward(self, x):
                print("forward", tuple(x.shape))
                return self.fc(x)
        def build_model():
            print("building")
            return Net()
        def example_inputs(): return (torch.randn(2, 4),)
    ''')
    result = scan(path, "-f", "json", "-q")
    assert result.exit_code == 0, result.output
    assert [op["op"] for op in json.loads(result.stdout)["operators"]] == ["torch.nn.Linear"]
    assert "importing" in result.stderr and "building" in result.stderr and "forward (2, 4)" in result.stderr


def test_a_report_of_each_capture_method_validates_against_the_schema(tmp_path):
    import jsonschema

    from tests.support import ROOT

    schema = json.loads((ROOT / "opassess" / "report" / "assessment.schema.json").read_text())
    # tests/models/masked_unless_compiling.py: plain dispatch fails on meta, dispatch-compiling succeeds
    path = MODELS / "masked_unless_compiling.py"
    for capture in ("fx", "dispatch", "dispatch-compiling", "export"):
        out = tmp_path / f"{capture}.json"
        args = [EXAMPLES / "resnet_like.py"] if capture != "dispatch-compiling" else [path]
        assert scan(*args, "--capture", capture if capture != "dispatch-compiling" else "dispatch,dispatch-compiling",
                    "-o", out, "-q").exit_code == 0
        report = json.loads(out.read_text())
        assert report["model"]["capture"]["method"] == capture
        jsonschema.validate(report, schema)


def test_output_extensions_come_from_the_reporter_registry():
    from opassess.report import REPORTERS

    for reporter in REPORTERS.values():
        for extension in reporter.extensions:
            assert pick_format(None, f"report{extension.upper()}") == reporter.name
    assert pick_format(None, "r.markdown") == "md" and pick_format(None, "r.htm") == "html"
    assert pick_format(None, "r.unknown") == "terminal"


def test_a_bug_in_opassess_is_an_internal_error_with_its_traceback_behind_debug(monkeypatch):
    # every capture method's hooks broken: opassess's own line raises while the model runs
    import opassess.trace.dispatch as dispatch
    import opassess.trace.fx as fx

    monkeypatch.setattr(dispatch, "call_attrs", None)
    monkeypatch.setattr(fx, "call_attrs", None)
    result = scan(EXAMPLES / "lstm_tagger.py", "--capture", "fx,dispatch", "-q")
    lines = result.output.strip().splitlines()
    assert result.exit_code == 1 and len(lines) == 1 and "Traceback" not in result.output
    assert lines[0].startswith("opassess: internal error: ") and "a bug in opassess, not in the model" in lines[0]
    assert lines[0].endswith("(run with --debug for the traceback)")
    debug = scan(EXAMPLES / "lstm_tagger.py", "--capture", "fx,dispatch", "--debug", "-q")
    assert debug.exit_code == 1 and "Traceback" in debug.output and "opassess/trace/" in debug.output


def test_terminal_header_says_forward_pass_only_without_train():
    result = scan(MODELS / "lgamma.py", "-q")
    assert result.exit_code == 0 and "Forward pass only" in result.output


def test_train_flag_reports_the_step_in_every_human_format(tmp_path):
    result = scan(MODELS / "train_lgamma.py", "--train", "-q")
    assert result.exit_code == 0, result.output
    assert "Training step (forward, backward, optimizer)" in result.output and "optimizer" in result.output
    md, csv = tmp_path / "r.md", tmp_path / "r.csv"
    assert scan(MODELS / "train_lgamma.py", "--train", "-o", md, "-q").exit_code == 0
    text = md.read_text()
    assert "device. Training step (forward, backward, optimizer)" in text
    assert "Step: forward + backward; backward ATen ops: `aten::digamma` (no NPU kernel)" in text
    assert "Step: optimizer" in text
    assert scan(MODELS / "train_lgamma.py", "--train", "-o", csv, "-q").exit_code == 0
    header, *rows = csv.read_text().splitlines()
    assert "step" in header.split(",") and "backward_aten" in header.split(",")
    assert any(row.startswith("torch.optim.AdamW.step,optimizer") and ",optimizer," in row for row in rows)


def test_help_shows_the_extras_and_the_hugging_face_options():
    """Help text is plain: 'opassess[ray]' keeps its brackets (rich markup would eat them as a style)."""
    scan_help = runner.invoke(app, ["scan", "--help"], env={"COLUMNS": "200"}).output
    assert "opassess[ray]" in scan_help and "opassess[onnx]" in scan_help
    for option in ("--task", "--seq-len", "--batch-size", "--trust-remote-code"):
        assert option in scan_help
    assert "config.json" in scan_help


def test_the_source_hint_names_a_real_file(tmp_path, monkeypatch):
    project = tmp_path / "myproject"
    project.mkdir()
    (project / "train.py").write_text("import torch\nx = torch.zeros(2).cuda()\n")
    monkeypatch.chdir(project)
    result = runner.invoke(app, ["source", "."])
    assert result.exit_code == 0, result.output
    assert "-o myproject.html" in result.output and "..html" not in result.output
