"""opassess.profile.fit and `opassess calibrate --profile-data`: the time model's efficiencies and launch costs
fitted to measured operator times.

The recovery test measures synthetic operators with known parameters (cube efficiency 0.45 and launch 8 us, vector
efficiency 0.30 and launch 3 us, memory efficiency 0.50) through the time model's own roofline, then fits from the
shipped Atlas A2 profile: the known values must come back. Cube work is compute-bound (large FLOPs, few bytes),
one vector operator compute-bound and the others memory-bound (bytes, no FLOPs); each kind at 1 and at 50 calls, so
launch cost and throughput separate (50 calls of the same work cost 50 launches).
"""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.perf import load_profile
from opassess.profile.fit import FitRow, fit, parameters, predict, with_parameters
from tests.profile.test_profile import kernel_details, report

TRUE = {"cube.efficiency": 0.45, "cube.launch_us": 8.0, "vector.efficiency": 0.30, "vector.launch_us": 3.0,
        "memory.efficiency": 0.50}


def synthetic_rows(profile) -> list[FitRow]:
    truth = with_parameters(profile, {**parameters(profile), **TRUE})
    shapes = [("matmul", "cube", 2e11, 1e6), ("matmul_small", "cube", 4e9, 1e5),
              ("gelu", "vector", 5e10, 1e5), ("copy", "vector", 0.0, 4e8), ("add", "vector", 0.0, 3e6)]
    rows = []
    for name, unit, flops, moved in shapes:
        for calls in (1, 50):
            row = FitRow(op=f"{name}x{calls}", unit=unit, unit_from="synthetic", dtype="bfloat16", calls=calls,
                         flops=flops * calls, bytes=moved * calls, fixed_us=0.0, measured_us=1.0)
            rows.append(FitRow(**{**row.__dict__, "measured_us": predict(row, truth)}))
    return rows


def test_the_fit_recovers_known_efficiencies_and_launch_costs():
    profile = load_profile("Atlas A2")
    result = fit(synthetic_rows(profile), profile)
    assert set(result.fitted) == set(TRUE)  # no AI CPU row: its parameters are not fitted
    for name, value in TRUE.items():
        assert result.after[name] == pytest.approx(value, rel=0.01), name
    assert result.error_before > 0.1 and result.error_after < 0.001


def test_calibrate_profile_data_writes_an_overlay_the_time_model_reads(tmp_path):
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(report()), encoding="utf-8")
    export = tmp_path / "kernel_details.csv"
    export.write_text(kernel_details(steps=2), encoding="utf-8")
    out = tmp_path / "device.toml"
    result = CliRunner().invoke(app, ["calibrate", "--profile-data", str(export), "--report", str(report_path),
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "fit error:" in result.output and "cube (time model)" in result.output
    # the ArgSort kernel ran on the AI CPU, though the time model puts torch.argsort on the vector unit
    assert "aicpu (placement AI_CPU)" in result.output
    fitted = load_profile("Atlas A2", overlay=out)
    shipped = load_profile("Atlas A2")
    assert fitted.overlay is not None and str(out) in fitted.overlay
    assert fitted.efficiency["cube"] != shipped.efficiency["cube"] or \
        fitted.launch_us["cube"] != shipped.launch_us["cube"]
    assert CliRunner().invoke(app, ["calibrate", "--profile-data", str(export)]).exit_code == 2  # no --report


def test_rows_take_the_unit_and_added_penalties_from_the_time_model():
    from opassess.profile.fit import fit_rows

    document = json.loads(json.dumps(report()))
    ops = {op["op"]: op for op in document["operators"]}
    ops["torch.relu"].pop("estimated_time", None)  # without the time model the placement names the unit
    ops["torch.argsort"].pop("estimated_time", None)
    linear = ops["torch.nn.Linear"]
    linear["estimated_time"] = {"us": 30.0, "at_risk_us": 12.0, "bound": "compute", "unit": "cube", "calls": 1,
                                "penalties": [{"code": "unaligned-cube", "us": 5.0}, {"code": "fp32-cube", "us": 7.0}]}
    measured = {"operators": [{"op": "torch.nn.Linear", "measured_us": 20.0, "placement": "AI_VECTOR_CORE"},
                              {"op": "torch.relu", "measured_us": 4.0, "placement": "AI_VECTOR_CORE"},
                              {"op": "torch.argsort", "measured_us": 50.0, "placement": "COMMUNICATION"}]}
    rows, skipped = fit_rows(measured, document)
    by_op = {row.op: row for row in rows}
    # the time model's unit wins over the placement; fp32-cube is carved out of the roofline, not added to it
    assert (by_op["torch.nn.Linear"].unit, by_op["torch.nn.Linear"].fixed_us) == ("cube", 5.0)
    assert by_op["torch.relu"].unit == "vector" and by_op["torch.relu"].unit_from == "placement AI_VECTOR_CORE"
    assert skipped == [("torch.argsort", "placement COMMUNICATION names no unit")]
