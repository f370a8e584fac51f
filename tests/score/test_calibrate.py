"""Tests for opassess.calibrate and the `calibrate` command: fitted ranges and errors worked by hand."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from opassess.cli.calibrate import calibrate_command, format_snippet, format_table
from opassess.errors import ConfigError
from opassess.score.calibrate import calibrate
from opassess.score.weights.load import load_weights

WEIGHTS = load_weights(None, "classic")  # the hand-worked ranges below are the practice table's


def write(tmp_path: Path, text: str, name: str = "actuals.csv") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def fit(result, category):
    return next(f for f in result.categories if f.category == category)


# Five param-converted actuals 5, 6, 7, 9, 13 (no composite: predictions sit mid-range), two direct ones.
ACTUALS = """\
    operator,category,person_days
    torch.nn.LSTM,param-converted,5
    torch.nn.functional.interpolate,param-converted,6
    torch.nn.MaxPool2d,param-converted,7
    torch.topk,param-converted,9
    torch.nn.GELU,param-converted,13
    torch.nn.Conv2d,direct,1
    torch.nn.Linear,direct,2
"""


def test_median_centred_range_without_composites(tmp_path):
    # param-converted: median 7; P10 = 5 + 0.4 x (6 - 5) = 5.4, P90 = 9 + 0.6 x (13 - 9) = 11.4: width 6;
    # low = 7 - 0.5 x 6 = 4, high = 10. Predictions: before 3 + 0.5 x 2 = 4, after 4 + 0.5 x 6 = 7.
    # MAE before (1 + 2 + 3 + 5 + 9) / 5 = 4.0; after (2 + 1 + 0 + 2 + 6) / 5 = 2.2.
    # Inside before [3, 5]: only 5 -> 20%; after [4, 10]: 5, 6, 7, 9 -> 80%.
    result = calibrate(write(tmp_path, ACTUALS), WEIGHTS)
    pc = fit(result, "param-converted")
    assert (pc.before, pc.after) == ((3.0, 5.0), (4.0, 10.0))
    assert (pc.mae_before, pc.mae_after) == pytest.approx((4.0, 2.2))
    assert (pc.inside_before, pc.inside_after) == pytest.approx((0.2, 0.8))
    assert "median-centred" in pc.method


def test_too_few_actuals_keep_the_range(tmp_path):
    # direct has 2 actuals < min_rows 3: kept at 1-2. Predictions 1.5: MAE (0.5 + 0.5) / 2 = 0.5 both ways.
    # custom-dev has none. Whole file: before (20 + 1) / 7 = 3.0, after (11 + 1) / 7 = 1.714.
    result = calibrate(write(tmp_path, ACTUALS), WEIGHTS)
    direct = fit(result, "direct")
    assert direct.after == direct.before == (1.0, 2.0) and not direct.changed
    assert "fewer than calibration.min_rows = 3" in direct.method
    assert fit(result, "custom-dev").mae_before is None
    assert (result.mae_before, result.mae_after) == pytest.approx((3.0, 12 / 7))


def test_min_rows_and_quantiles_from_weights(tmp_path):
    # min_rows 6: the 5 param-converted actuals are too few, the range stays 3-5.
    strict = write(tmp_path, "[calibration]\nmin_rows = 6\n", "strict.toml")
    strict_weights = load_weights(strict, "classic")
    assert fit(calibrate(write(tmp_path, ACTUALS), strict_weights), "param-converted").after == (3.0, 5.0)
    # spread_quantiles [0.25, 0.75]: P25 = 6, P75 = 9, width 3: low 7 - 1.5 = 5.5, high 8.5.
    narrow = write(tmp_path, "[calibration]\nspread_quantiles = [0.25, 0.75]\n", "narrow.toml")
    narrow_weights = load_weights(narrow, "classic")
    assert fit(calibrate(write(tmp_path, ACTUALS), narrow_weights), "param-converted").after == (5.5, 8.5)


def test_least_squares_with_composites(tmp_path):
    # custom-dev actuals on the line y = 10 + 20 c: (0.2, 14), (0.4, 18), (0.8, 26) -> low 10, high 30.
    # Before (10-20) predicts 12, 14, 18: errors 2, 4, 8, MAE 14 / 3; after predicts exactly: 0.
    path = write(tmp_path, """\
        operator,category,person_days,composite
        torchvision.ops.nms,custom-dev,14,0.2
        torchvision.ops.roi_align,custom-dev,18,0.4
        mylib::fused_gelu,custom-dev,26,0.8
    """)
    result = calibrate(path, WEIGHTS)
    cd = fit(result, "custom-dev")
    assert cd.after == (10.0, 30.0)
    assert (cd.mae_before, cd.mae_after) == pytest.approx((14 / 3, 0.0))
    assert "least squares" in cd.method
    assert "composite from the CSV" in result.prediction


def test_low_clamped_at_zero_keeps_the_median(tmp_path):
    # direct 0.2, 0.3, 3: median 0.3; P10 = 0.2 + 0.2 x 0.1 = 0.22, P90 = 0.3 + 0.8 x 2.7 = 2.46, width 2.24;
    # 0.3 - 0.5 x 2.24 < 0, so low 0 and width 0.3 / 0.5 = 0.6: the midpoint stays on the median.
    path = write(tmp_path, """\
        operator,category,person_days
        a,direct,0.2
        b,direct,0.3
        c,direct,3
    """)
    assert fit(calibrate(path, WEIGHTS), "direct").after == (0.0, 0.6)


def test_fallback_does_not_depend_on_row_order(tmp_path):
    # direct (c 0, 6 days), (c 1, 4 days), (c 0.5, 5 days): least squares runs backwards (slope -2), so the range is
    # median-centred for the median composite 0.5 (not for whichever row came first: c 0 gave 5-6.6, c 1 3.4-5):
    # median 5; P10 = 4 + 0.2 x 1 = 4.2, P90 = 5 + 0.8 x 1 = 5.8, width 1.6; low = 5 - 0.5 x 1.6 = 4.2, high 5.8,
    # in either row order. MAE (1.8 + 1.8 + 0) / 3 = 1.2, down from the 1-2 range's (5 + 2 + 3.5) / 3 = 3.5.
    rows = ["a,direct,6,0.0", "b,direct,4,1.0", "c,direct,5,0.5"]
    header = "operator,category,person_days,composite\n"
    first = write(tmp_path, header + "\n".join(rows) + "\n", "first.csv")
    second = write(tmp_path, header + "\n".join(rows[1:] + rows[:1]) + "\n", "second.csv")
    assert fit(calibrate(first, WEIGHTS), "direct").after == (4.2, 5.8)
    assert fit(calibrate(second, WEIGHTS), "direct").after == (4.2, 5.8)
    assert fit(calibrate(first, WEIGHTS), "direct").mae_after == pytest.approx(1.2)


def test_a_fit_that_raises_the_error_is_not_proposed(tmp_path):
    # direct (c 0, 1 day), (c 1, 5), (c 0.5, 0.5), (c 0.9, 0.4). Least squares: mean c 0.6, mean y 1.725,
    # slope (-0.6 x -0.725 + 0.4 x 3.275 - 0.1 x -1.225 + 0.3 x -1.325) / (0.36 + 0.16 + 0.01 + 0.09) = 1.47 / 0.62
    # = 2.371, low 1.725 - 2.371 x 0.6 = 0.302: range 0.3-2.7 (rounded). Its predictions 0.3, 2.7, 1.5, 2.46 miss by
    # 0.7, 2.3, 1.0, 2.06: MAE 1.515, worse than the current 1-2 (predictions 1, 2, 1.5, 1.9: MAE 5.5 / 4 = 1.375).
    path = write(tmp_path, """\
        operator,category,person_days,composite
        a,direct,1,0.0
        b,direct,5,1.0
        c,direct,0.5,0.5
        d,direct,0.4,0.9
    """)
    direct = fit(calibrate(path, WEIGHTS), "direct")
    assert direct.after == direct.before == (1.0, 2.0) and not direct.changed
    assert direct.mae_after == pytest.approx(1.375)
    assert "kept: the fitted range 0.3-2.7" in direct.method and "1.52 > 1.38" in direct.method


def test_snippet_is_toml_that_loads_as_weights(tmp_path):
    result = calibrate(write(tmp_path, ACTUALS), WEIGHTS)
    snippet = format_snippet(result)
    assert "[effort.param-converted]" in snippet and "[effort.direct]" not in snippet
    proposed = load_weights(write(tmp_path, snippet, "proposed.toml"))
    category = proposed.effort.categories["param-converted"]
    assert (category.low, category.high) == (4.0, 10.0)
    assert "MAE 3.00 -> 1.71" in snippet


def test_table_shows_before_and_after(tmp_path):
    table = format_table(calibrate(write(tmp_path, ACTUALS), WEIGHTS))
    row = next(line for line in table.splitlines() if line.startswith("param-converted"))
    assert row.split() == ["param-converted", "5", "3-5", "4-10", "4.00", "2.20", "20%", "80%"]
    assert next(line for line in table.splitlines() if line.startswith("all")).split() == ["all", "7", "3.00", "1.71"]


@pytest.mark.parametrize("text, message", [
    ("operator,person_days\nx,1\n", "missing column(s) category"),
    ("operator,category,person_days\nx,easy,1\n", ":2: category 'easy' is not one of"),
    ("operator,category,person_days\nx,direct,two\n", ":2: person_days 'two' is not a number"),
    ("operator,category,person_days\nx,direct,-1\n", ":2: person_days '-1' must be a number >= 0"),
    ("operator,category,person_days,composite\nx,direct,1,1.5\n", ":2: composite 1.5 is above 1"),
    ("operator,category,person_days\n", "no actuals"),
    ("operator,category,person_days\nx,direct,1,surplus\n", ":2: 4 fields, the header has 3"),
])
def test_bad_actuals(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        calibrate(path, WEIGHTS)
    assert str(path) in str(info.value) and message in str(info.value)


def test_a_file_that_is_not_utf8_text(tmp_path):
    path = tmp_path / "actuals.csv"
    path.write_bytes(b"\xff\xfeo\x00p\x00")  # UTF-16, as some spreadsheet exports write it
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        calibrate(path, WEIGHTS)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read actuals"):
        calibrate(tmp_path / "nope.csv", WEIGHTS)


def command_app() -> typer.Typer:
    app = typer.Typer()
    app.command("calibrate")(calibrate_command)
    app.command("other")(lambda: None)  # two commands, so typer keeps the command name on the line
    return app


def test_command_prints_table_and_snippet(tmp_path):
    result = CliRunner().invoke(command_app(), ["calibrate", str(write(tmp_path, ACTUALS))])
    assert result.exit_code == 0, result.output
    assert "MAE before" in result.output
    assert "[effort.param-converted]" in result.output


def test_command_error_is_one_line_and_exit_1(tmp_path):
    result = CliRunner().invoke(command_app(), ["calibrate", str(write(tmp_path, "a,b\n1,2\n"))])
    assert result.exit_code == 1
    assert "opassess: error:" in result.output and "missing column(s)" in result.output


def test_registered_in_the_opassess_cli(tmp_path):
    from opassess.cli import app

    result = CliRunner().invoke(app, ["calibrate", str(write(tmp_path, ACTUALS))])
    assert result.exit_code == 0, result.output
    assert "[effort.param-converted]" in result.output


def test_output_writes_a_profile_that_loads_with_the_calibrated_ranges(tmp_path):
    # Three direct actuals 3, 4, 5 on the classic profile: median-centred 4, P10-P90 3.2-4.8 -> low 3.2, high 4.8.
    actuals = write(tmp_path, """\
        operator,category,person_days
        torch.nn.Conv2d,direct,3
        torch.nn.Linear,direct,4
        torch.nn.ReLU,direct,5
    """)
    out = tmp_path / "ours.toml"
    result = CliRunner().invoke(command_app(), ["calibrate", str(actuals), "--profile", "classic", "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert "on top of the 'classic' profile" in text and text.count("[effort.direct]") == 1
    weights = load_weights(out)  # the written profile carries the classic keys: no --profile needed
    assert (weights.effort.categories["direct"].low, weights.effort.categories["direct"].high) == (3.2, 4.8)
    assert weights.effort.block_direct is False and all(a.high == 0 for a in weights.activities)
