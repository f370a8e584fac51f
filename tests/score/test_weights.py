"""Tests for opassess.weights: the shipped file's integrity, layering, and one test per validation error."""
from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

from opassess.errors import ConfigError
from opassess.records import CATEGORIES
from opassess.resources import shipped_path
from opassess.score.weights import CRITERIA, DIMENSIONS
from opassess.score.weights.load import load_weights


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "weights.toml"
    path.write_text(text)
    return path


def error_line(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_weights(path)
    message = str(info.value)
    assert "\n" not in message  # one line
    assert str(path) in message  # names the user's file
    return message


# ------------------------------------------------------------------ the shipped file


def test_shipped_file_is_the_30_50_20_model():
    weights = load_weights(None)
    assert dict(weights.dimensions) == {"functional": 0.3, "performance": 0.5, "ecosystem": 0.2}
    assert weights.source == str(shipped_path("weights.toml"))
    for dimension in DIMENSIONS:
        assert tuple(weights.criteria[dimension]) == CRITERIA[dimension]
        assert math.isclose(sum(weights.criteria[dimension].values()), 1.0)


def test_shipped_ranges_follow_the_practice_table():
    effort = load_weights(None, "classic").effort.categories
    assert (effort["direct"].low, effort["direct"].high) == (1, 2)
    assert (effort["param-converted"].low, effort["param-converted"].high) == (3, 5)
    assert effort["custom-dev"].low == 10 and effort["custom-dev"].high >= 10


def test_shipped_file_comments_every_number():
    # Every "key = value" line carries a "why" comment, on the line itself or on the line above it (a run of
    # siblings such as "high = 2.0" under "low = 1.0  # the table's range" shares its neighbour's comment).
    lines = shipped_path("weights.toml").read_text().splitlines()
    uncommented = [
        line
        for index, line in enumerate(lines)
        if "=" in line and not line.lstrip().startswith("#") and "#" not in line and "#" not in lines[index - 1]
    ]
    assert uncommented == []


# ----------------------------------------------------------------------------- layering


def test_user_file_overrides_only_its_keys(tmp_path):
    # Moving 0.1 from performance to functional keeps the sum at 1: 0.4 + 0.4 + 0.2.
    path = write(tmp_path, "functional = 0.4\nperformance = 0.4\n[effort.custom-dev]\nhigh = 30\n")
    weights = load_weights(path)
    assert dict(weights.dimensions) == {"functional": 0.4, "performance": 0.4, "ecosystem": 0.2}
    assert weights.effort.categories["custom-dev"].high == 30
    assert weights.effort.categories["custom-dev"].low == 10  # from the shipped file
    assert weights.source == f"{shipped_path('weights.toml')} < {path}"


def test_user_file_may_add_a_dtype(tmp_path):
    path = write(tmp_path, "[signals.dtype_support.difficulty]\nfloat8_e4m3fn = 0.7\n")
    weights = load_weights(path)
    assert weights.signals.dtype_support.difficulty["float8_e4m3fn"] == 0.7
    assert weights.signals.dtype_support.difficulty["float64"] == 1.0


# ----------------------------------------------------------------- validation errors


def test_dimensions_not_summing_to_one(tmp_path):
    message = error_line(tmp_path, "functional = 0.4\n")  # 0.4 + 0.5 + 0.2 = 1.1
    assert "'functional', 'performance', 'ecosystem'" in message
    assert "sum to 1.1" in message


def test_criteria_not_summing_to_one(tmp_path):
    message = error_line(tmp_path, "[criteria.performance]\nfusion = 0.5\n")  # 0.5 + 0.2 + 0.4 = 1.1
    assert "key 'criteria.performance'" in message
    assert "sum to 1.1" in message


def test_sum_within_tolerance_is_accepted(tmp_path):
    # 0.3 + 0.5 + 0.2000001 misses 1 by 1e-7 < 1e-6; 0.200002 misses by 2e-6 > 1e-6.
    load_weights(write(tmp_path, "ecosystem = 0.2000001\n"))
    with pytest.raises(ConfigError):
        load_weights(write(tmp_path, "ecosystem = 0.200002\n"))


def test_unknown_top_level_key(tmp_path):
    message = error_line(tmp_path, "functionnal = 0.3\n")
    assert "key 'functionnal': unknown key" in message


def test_unknown_criterion(tmp_path):
    message = error_line(tmp_path, "[criteria.functional]\nshape_mismatch = 0.0\n")
    assert "key 'criteria.functional.shape_mismatch': unknown key" in message


def test_unknown_nested_key(tmp_path):
    message = error_line(tmp_path, "[effort.direct]\nlikely = 1.5\n")
    assert "key 'effort.direct.likely': unknown key" in message


def test_negative_value(tmp_path):
    message = error_line(tmp_path, "[effort]\nper_occurrence = -0.1\n")
    assert "key 'effort.per_occurrence': negative value -0.1" in message


def test_negative_weight(tmp_path):
    # -0.1 + 0.6 + 0.5 sums to 1, so only the sign is wrong.
    message = error_line(tmp_path, "[criteria.performance]\nfusion = -0.1\nmemory_layout = 0.6\npipeline = 0.5\n")
    assert "key 'criteria.performance.fusion': negative value" in message


def test_low_above_high(tmp_path):
    message = error_line(tmp_path, "[effort.param-converted]\nlow = 6\n")  # shipped high is 5
    assert "key 'effort.param-converted.low': low 6 is greater than high 5" in message


def test_wrong_type_string_for_number(tmp_path):
    message = error_line(tmp_path, 'performance = "half"\n')
    assert "key 'performance': expected a number, got a string 'half'" in message


def test_wrong_type_boolean_for_number(tmp_path):
    message = error_line(tmp_path, "[estimate]\npert_lambda = true\n")
    assert "key 'estimate.pert_lambda': expected a number, got a boolean" in message


def test_wrong_type_float_for_integer(tmp_path):
    message = error_line(tmp_path, "[estimate]\nsamples = 1000.5\n")
    assert "key 'estimate.samples': expected an integer" in message


def test_wrong_type_value_for_table(tmp_path):
    message = error_line(tmp_path, "criteria = 1\n")
    assert "key 'criteria': expected a table, got int 1" in message


def test_wrong_type_list(tmp_path):
    message = error_line(tmp_path, "[signals.memory_layout]\nlayout_ops = [1, 2]\n")
    assert "key 'signals.memory_layout.layout_ops': expected a list of strings" in message


def test_difficulty_above_one(tmp_path):
    message = error_line(tmp_path, "[signals.dtype_support.difficulty]\nfloat64 = 2\n")
    assert "key 'signals.dtype_support.difficulty.float64': expected a value from 0 to 1" in message


def test_level_outside_grid(tmp_path):
    message = error_line(tmp_path, "[risk.likelihood]\ncustom-dev = 6\n")
    assert "key 'risk.likelihood.custom-dev': expected a level from 1 to 5, got 6" in message


def test_share_levels_not_ascending(tmp_path):
    message = error_line(tmp_path, "[risk.impact]\nshare_levels = [0.3, 0.15, 0.05, 0.02]\n")
    assert "key 'risk.impact.share_levels': expected ascending shares" in message


def test_bad_version_string(tmp_path):
    message = error_line(tmp_path, '[signals.version_compat]\nnewest = "v2.15"\n')
    assert "key 'signals.version_compat.newest': expected a torch release" in message


def test_toml_syntax_error(tmp_path):
    message = error_line(tmp_path, "functional = = 0.3\n")
    assert "TOML syntax error" in message
    assert "line 1" in message


def test_syntax_error_chains_the_cause(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_weights(write(tmp_path, "[effort\n"))
    assert isinstance(info.value.__cause__, tomllib.TOMLDecodeError)


def test_missing_file(tmp_path):
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=f"{missing}: cannot read weights file"):
        load_weights(missing)


def test_every_category_has_a_range_and_levels():
    weights = load_weights(None)
    assert set(weights.effort.categories) == set(CATEGORIES)
    assert set(weights.risk.likelihood.base) == set(CATEGORIES)
    assert set(weights.risk.stars.base) == set(CATEGORIES)
