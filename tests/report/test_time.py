"""The time model in the reports (report/sections/time.py) through the CLI: --compare gives one table with
a row per product (a product without published figures says so), --device-profile calibrates the target and a bad
overlay is one line with exit 1; the JSON carries performance and estimated_time."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.report.sections.performance import FindingTimePart
from opassess.report.sections.time import gain_text, us_text
from tests.support import MODELS

runner = CliRunner()


def scan(*args):
    return runner.invoke(app, ["scan", *map(str, args)])


def test_times_read_in_the_unit_that_fits():
    assert (us_text(333.33), us_text(6210.0), us_text(2.5e6), us_text(None)) == ("333.3 us", "6.21 ms", "2.50 s", "-")
    assert gain_text(FindingTimePart(gain_us=1800.0, step_at_risk_us=6200.0)) == "-1.80 ms of 6.20 ms at risk"
    assert gain_text(FindingTimePart(gain_us=0.0, step_at_risk_us=6200.0)) == ""


def test_compare_gives_one_table_and_json(tmp_path):
    md, js = tmp_path / "r.md", tmp_path / "r.json"
    assert scan(MODELS / "perf_linear_stack.py", "--dtype", "bf16", "--compare", "A3,950,310P", "-o", md,
                "-q").exit_code == 0
    text = md.read_text()
    assert "## Estimated time on Atlas A2" in text and "Every time here is an estimate" in text
    rows = [line for line in text.splitlines() if line.startswith(("| Atlas", "| Ascend"))]
    assert [r.split("|")[1].strip() for r in rows[:4]] == ["Atlas A2", "Atlas A3", "Ascend 950",
                                                            "Atlas inference series"]
    assert "no published figures in the tables" in rows[3]
    assert scan(MODELS / "perf_linear_stack.py", "--dtype", "bf16", "--compare", "950", "-o", js, "-q").exit_code == 0
    doc = json.loads(js.read_text())
    perf = doc["performance"]
    assert perf["product"] == "Atlas A2" and perf["variant"] == "ATLAS_800_A2_376T_64G"
    assert perf["compare"][0]["product"] == "Ascend 950" and perf["compare"][0]["step_us"] < perf["step_us"]
    linear = next(o for o in doc["operators"] if o["op"] == "torch.nn.Linear")
    assert linear["estimated_time"]["unit"] == "cube" and linear["estimated_time"]["bound"] == "compute"


def test_device_profile_calibrates_the_target_and_refuses_a_typo(tmp_path):
    overlay, js = tmp_path / "a2.toml", tmp_path / "r.json"
    overlay.write_text('product = "Atlas A2"\nsource = "measured"\n[cube]\nefficiency = 0.35\n', encoding="utf-8")
    base = tmp_path / "base.json"
    assert scan(MODELS / "perf_linear_stack.py", "--dtype", "bf16", "-o", base, "-q").exit_code == 0
    assert scan(MODELS / "perf_linear_stack.py", "--dtype", "bf16", "--device-profile", overlay, "-o", js,
                "-q").exit_code == 0
    slow, fast = json.loads(js.read_text())["performance"], json.loads(base.read_text())["performance"]
    assert slow["by_unit"]["cube"] > 1.9 * fast["by_unit"]["cube"]  # half the efficiency: about twice the time
    assert any("measured" in note for note in slow["notes"])
    overlay.write_text("[cube]\nefficency = 0.3\n", encoding="utf-8")
    result = scan(MODELS / "perf_linear_stack.py", "--device-profile", overlay, "-q")
    assert result.exit_code == 1 and "cube.efficency" in result.output and "Traceback" not in result.output
    assert scan(MODELS / "perf_linear_stack.py", "--compare", "nope", "-q").exit_code == 2


@pytest.mark.parametrize("target", ["examples/llama_like.py", "examples/transformer_lm.py",
                                    "tests/models/findings_llm.py", "tests/models/findings_fusion.py"])
def test_the_findings_gains_add_up_to_at_most_the_time_at_risk(target):
    """Each call's time at risk is claimed by one finding (issue 40: overlapping findings claimed the same calls, 150
    us of gains against 113 us at risk on a small Qwen3)."""
    from pathlib import Path

    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess
    from opassess.report.document import build_document

    document = build_document(assess(ScanOptions(target=str(Path(__file__).resolve().parents[2] / target))))
    gains = [f["time"]["gain_us"] for f in document["findings"] if f["time"]]
    assert gains and sum(gains) <= document["performance"]["at_risk_us"] + 0.01 * len(gains)
