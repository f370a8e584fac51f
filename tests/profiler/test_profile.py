"""opassess.profiler and `opassess profile`: profiler exports in the documented column variants joined to a real scan
report (tests/models/profile_ranker.py), checks, formats, hostile files.

The CSVs below are written in the documented formats (profiler_csv_columns.tsv): torch_npu's kernel_details.csv with
the real PipeUtilization header sample, msprof's op_summary with its own spellings, and a Level0 op_summary whose
types, shapes and placement read N/A. Expected results by hand:
  - aclnnSort_SortAiCpu_ArgSort (AI_CPU, 50 us per step): aclnnSort -> aten::sort -> torch.argsort; flagged AI CPU
    with op-plugin's fix (cast to float32);
  - aclnnAddmm_MatMulCommon_MatMulV2 (AI_CORE, 20 us): aclnnAddmm -> aten::addmm -> torch.nn.Linear; the inner
    axis 64 is not a multiple of 256 (advisor cube shape affinity);
  - aclnnRelu_ReluAiCore_Relu (AI_VECTOR_CORE, 4 us): -> torch.relu; aiv_vec_ratio 0.3 < 0.6 (checklist);
  - aclnnCast_CastAiCore_Cast: aclnnCast is npu_dtype_cast's kernel, which no operator of the report dispatches;
    joined by what it did: a Cast (data/kernel_types.toml: _to_copy) on (8, 96), Tensor.to's input -> Tensor.to;
  - TransData: unmatched (no such op).
So the operators, slowest first: torch.argsort 50, torch.nn.Linear 20, torch.relu 4, Tensor.to 3 (per step).
"""
from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.profiler import ProfileError, assess_profile
from opassess.profiler.facts import load_facts
from opassess.profiler.formats import PROFILE_FORMATS, render_profile
from opassess.profiler.read import read_profile
from opassess.report import build_view
from tests.score.records import MODELS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "opassess" / "profiler" / "profile.schema.json"

KERNEL_HEADER = ("Step Id,Model ID,Task ID,Stream ID,Name,Type,OP State,Accelerator Core,Start Time(us),Duration(us),"
                 "Wait Time(us),Block Dim,Mix Block Dim,HF32 Eligible,Input Shapes,Input Data Types,Input Formats,"
                 "Output Shapes,Output Data Types,Output Formats,Context ID,aicore_time(us),aic_total_cycles,"
                 "aic_mac_time(us),aic_mac_ratio,aic_scalar_time(us),aic_scalar_ratio,aic_mte1_time(us),"
                 "aic_mte1_ratio,aic_mte2_time(us),aic_mte2_ratio,aic_fixpipe_time(us),aic_fixpipe_ratio,"
                 "aic_icache_miss_rate,aiv_time(us),aiv_total_cycles,aiv_vec_time(us),aiv_vec_ratio,"
                 "aiv_scalar_time(us),aiv_scalar_ratio,aiv_mte2_time(us),aiv_mte2_ratio,aiv_mte3_time(us),"
                 "aiv_mte3_ratio,aiv_icache_miss_rate,cube_utilization(%)")
# name, type, placement, duration, shapes, dtypes, aic_mac_ratio, aiv_vec_ratio
KERNELS = [
    ("aclnnAddmm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 20.0, "8,64;96,64;96", "FLOAT;FLOAT;FLOAT", 0.5, ""),
    ("aclnnRelu_ReluAiCore_Relu", "Relu", "AI_VECTOR_CORE", 4.0, "8,96", "FLOAT", "", 0.3),
    ("aclnnCast_CastAiCore_Cast", "Cast", "AI_VECTOR_CORE", 3.0, "8,96", "FLOAT", "", 0.9),
    ("aclnnSort_SortAiCpu_ArgSort", "ArgSort", "AI_CPU", 50.0, "8,96", "INT64", "", ""),
    ("TransData", "TransData", "AI_CORE", 2.0, "8,96", "FLOAT", "", ""),
]


def kernel_details(steps: int = 2) -> str:
    columns = KERNEL_HEADER.split(",")
    lines = [KERNEL_HEADER]
    for step in range(1, steps + 1):
        for name, ktype, placement, duration, shapes, dtypes, mac, vec in KERNELS:
            row = dict.fromkeys(columns, "N/A")
            row.update({"Step Id": str(step), "Name": name, "Type": ktype, "Accelerator Core": placement,
                        "Duration(us)": str(duration), "Block Dim": "8", "Input Shapes": f'"{shapes}"',
                        "Input Data Types": dtypes, "OP State": "static", "aic_mac_ratio": str(mac),
                        "aiv_vec_ratio": str(vec)})
            lines.append(",".join(row[c] for c in columns))
    return "\n".join(lines) + "\n"


def op_summary(level0: bool = False) -> str:
    header = ("Device_id,Model Name,Model ID,Task ID,Stream ID,Infer ID,Op Name,OP Type,OP State,Task Type,"
              "Task Start Time(us),Task Duration(us),Task Wait Time(us),Block Num,Mix Block Num,HF32 Eligible,"
              "Input Shapes,Input Data Types,Input Formats,Output Shapes,Output Data Types,Output Formats,Context ID")
    lines = [header]
    for index, (name, ktype, placement, duration, shapes, dtypes, _, _) in enumerate(KERNELS):
        if level0:
            ktype = placement = shapes = dtypes = state = "N/A"
        else:
            shapes, state = f'"{shapes}"', "static"
        lines.append(f"0,resnet,1,{index},2,0,{name},{ktype},{state},{placement},{index * 100},{duration},0,8,0,"
                     f"N/A,{shapes},{dtypes},ND,N/A,N/A,ND,N/A")
    return "\n".join(lines) + "\n"


@functools.cache
def report() -> dict:
    return build_view(assess(ScanOptions(target=str(MODELS / "profile_ranker.py")))).document


@pytest.fixture
def report_file(tmp_path) -> Path:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report()), encoding="utf-8")
    return path


def _ops(document: dict) -> list[tuple[str, float, str]]:
    return [(r["op"], r["measured_us"], r["placement"]) for r in document["operators"]]


def test_kernel_details_joins_kernels_to_operators_slowest_first(tmp_path, report_file):
    folder = tmp_path / "run_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    (folder / "kernel_details.csv").write_text(kernel_details(steps=2), encoding="utf-8")
    document = assess_profile(tmp_path / "run_ascend_pt", report_file)
    assert document["profile"]["steps"] == 2 and document["profile"]["variants"] == ["kernel_details"]
    assert _ops(document) == [("torch.argsort", 50.0, "AI_CPU"), ("torch.nn.Linear", 20.0, "AI_CORE"),
                              ("torch.relu", 4.0, "AI_VECTOR_CORE"), ("Tensor.to", 3.0, "AI_VECTOR_CORE")]
    linear = document["operators"][1]
    assert linear["calls"] == 1 and linear["kernels"][0]["shape_match"] is True
    predicted = next(op for op in report()["operators"] if op["op"] == "torch.nn.Linear")["estimated_time"]["us"]
    assert linear["predicted_us"] == predicted and linear["ratio"] == round(20.0 / predicted, 3)
    unmatched = {r["name"]: r["why"] for r in document["unmatched"]}
    assert set(unmatched) == {"TransData"}
    cast = document["operators"][3]["kernels"][0]
    assert cast["joined_by"].startswith("type Cast -> aten::_to_copy") and cast["shape_match"] is True
    checks = {(c["check"], c["op"]): c for c in document["checks"]}
    ai_cpu = checks[("ai-cpu", "torch.argsort")]
    assert "cast the inputs to float32" in ai_cpu["fix"] and "ArgsortKernelNpu.cpp:32" in ai_cpu["evidence"]
    assert "inner axis 64 is not a multiple of 256" in checks[("shape-affinity", "torch.nn.Linear")]["message"]
    assert "aiv_vec_ratio = 0.30" in checks[("checklist:vector_utilisation", "torch.relu")]["message"]
    assert ("checklist:vector_utilisation", "torch.argsort") not in checks  # no PMU value for the AI CPU kernel
    jsonschema.validate(document, json.loads(SCHEMA.read_text(encoding="utf-8")))


def test_a_kernel_is_joined_by_what_it_did_whatever_its_name_prefix(tmp_path, report_file):
    """A MatMulV2 kernel named after an aclnn API the op-plugin map does not list (a wrapper's prefix) is joined by its
    type and input shapes (the Linear's (8, 64) input); one whose shapes, or dtypes (float16 where the capture saw
    float32), match no captured signature is not joined on the type alone; an AI CPU kernel no fact covers still gets
    a fix."""
    global KERNELS
    saved = KERNELS
    KERNELS = [("aclnnWrapperMm_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 20.0, "8,64;96,64;96",
                "FLOAT;FLOAT;FLOAT", 0.5, ""),
               ("aclnnOther_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 5.0, "3,7;7,5", "FLOAT;FLOAT", 0.5, ""),
               ("aclnnHalf_MatMulCommon_MatMulV2", "MatMulV2", "AI_CORE", 5.0, "8,64;96,64", "FLOAT16;FLOAT16", 0.5,
                ""),
               ("UniqueWithCountsExt", "UniqueWithCountsExt", "AI_CPU", 9.0, "8,96", "INT64", "", "")]
    try:
        export = tmp_path / "kernel_details.csv"
        export.write_text(kernel_details(steps=1), encoding="utf-8")
        document = assess_profile(export, report_file)
    finally:
        KERNELS = saved
    linear = next(op for op in document["operators"] if op["op"] == "torch.nn.Linear")
    assert linear["measured_us"] == 20.0 and linear["kernels"][0]["shape_match"] is True
    assert "MatMulV2" in linear["kernels"][0]["joined_by"]
    unmatched = {r["name"]: r["why"] for r in document["unmatched"]}
    assert {"aclnnOther_MatMulCommon_MatMulV2", "aclnnHalf_MatMulCommon_MatMulV2", "UniqueWithCountsExt"} <= set(
        unmatched)
    assert all(check["fix"] for check in document["checks"])


def test_op_summary_variant_reads_the_same_kernels(tmp_path, report_file):
    prof = tmp_path / "PROF_000001" / "mindstudio_profiler_output"
    prof.mkdir(parents=True)
    (prof / "op_summary_20260101.csv").write_text(op_summary(), encoding="utf-8")
    document = assess_profile(tmp_path / "PROF_000001", report_file)
    assert document["profile"]["variants"] == ["op_summary"] and document["profile"]["steps"] == 1
    assert _ops(document) == [("torch.argsort", 50.0, "AI_CPU"), ("torch.nn.Linear", 20.0, "AI_CORE"),
                              ("torch.relu", 4.0, "AI_VECTOR_CORE"), ("Tensor.to", 3.0, "AI_VECTOR_CORE")]
    assert not [c for c in document["checks"] if c["check"].startswith("checklist")]  # no PMU columns here


def test_level0_export_joins_by_name_and_says_what_it_lacks(tmp_path, report_file):
    path = tmp_path / "op_summary_0.csv"
    path.write_text(op_summary(level0=True), encoding="utf-8")
    document = assess_profile(path, report_file)
    assert document["profile"]["level0"] is True
    assert _ops(document) == [("torch.argsort", 50.0, "N/A"), ("torch.nn.Linear", 20.0, "N/A"),
                              ("torch.relu", 4.0, "N/A")]
    assert document["operators"][1]["kernels"][0]["shape_match"] is None  # no shapes to compare at Level0
    why = {r["name"]: r["why"] for r in document["unmatched"]}
    assert "N/A at Level0" in why["TransData"]
    assert not [c for c in document["checks"] if c["check"] in ("ai-cpu", "shape-affinity")]


def test_every_format_renders(tmp_path, report_file):
    path = tmp_path / "kernel_details.csv"
    path.write_text(kernel_details(steps=1), encoding="utf-8")
    document = assess_profile(path, report_file)
    for fmt in PROFILE_FORMATS:
        text = render_profile(document, fmt)
        assert "torch.argsort" in text and "TransData" in text, fmt
    assert "default-src 'none'" in render_profile(document, "html")
    md = render_profile(document, "md")
    assert md.index("torch.argsort") < md.index("torch.nn.Linear") < md.index("torch.relu")


def test_predicted_time_and_ratio_follow_the_reports_time_model(tmp_path):
    document = json.loads(json.dumps(report()))
    for op in document["operators"]:
        op["estimated_time"] = {"us": 10.0, "at_risk_us": 0.0, "bound": "memory", "unit": "vector", "penalties": []}
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(document), encoding="utf-8")
    path = tmp_path / "kernel_details.csv"
    path.write_text(kernel_details(steps=1), encoding="utf-8")
    profile = assess_profile(path, report_path)
    linear = next(r for r in profile["operators"] if r["op"] == "torch.nn.Linear")
    assert linear["predicted_us"] == 10.0 and linear["ratio"] == 2.0
    assert profile["summary"]["predicted_us"] == 40.0  # four operators measured (Tensor.to: its Cast)
    for op in document["operators"]:  # a report without the time model: no prediction, no ratio
        op.pop("estimated_time")
    report_path.write_text(json.dumps(document), encoding="utf-8")
    profile = assess_profile(path, report_path)
    assert all(r["predicted_us"] is None and r["ratio"] is None for r in profile["operators"])
    assert profile["report"]["has_time_model"] is False and profile["summary"]["predicted_us"] is None


def test_cli_writes_json_and_hostile_exports_are_one_line_errors(tmp_path, report_file):
    good = tmp_path / "kernel_details.csv"
    good.write_text(kernel_details(steps=1), encoding="utf-8")
    out = tmp_path / "profile.json"
    result = CliRunner().invoke(app, ["profile", str(good), "--report", str(report_file), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text(encoding="utf-8"))["operators"][0]["op"] == "torch.argsort"
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("Name,Duration(us)\ncaf\xe9,1\n".encode("latin-1"))
    not_csv = tmp_path / "other.csv"
    not_csv.write_text("a,b\n1,2\n", encoding="utf-8")
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"Name,Duration(us)\nx\x00y,1\n")
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    for path, words in ((latin, "not UTF-8"), (not_csv, "not a profiler export"), (nul, "not a CSV"),
                        (fifo, "FIFO"), (tmp_path / "missing", "no such file")):
        result = CliRunner().invoke(app, ["profile", str(path), "--report", str(report_file)])
        assert result.exit_code == 1, (path, result.output)
        assert words in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1


def test_huge_export_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    from opassess.profiler import read

    monkeypatch.setattr(read, "CSV_LIMIT", 1000)
    path = tmp_path / "kernel_details.csv"
    path.write_text(kernel_details(steps=3), encoding="utf-8")
    with pytest.raises(ProfileError, match="larger than 1000 bytes"):
        read_profile(path, load_facts())


SINC_MODEL = """
import torch
from torch import nn


class Sinc(nn.Module):
    def forward(self, x):
        return torch.sinc(torch.relu(x))


def build_model():
    return Sinc()


def example_inputs():
    return (torch.randn(4, 8),)
"""


def test_cpu_fallback_and_the_aclnn_dtype_fix(tmp_path, model_file):
    # The facts give aten::sinc an NPU kernel (the report says direct), but op-plugin's sinc kernel warns that it
    # runs on the CPU: a profile with no device kernel for torch.sinc flags it. The relu kernel ran on the AI CPU
    # with float64 inputs, which aclnnRelu's doc does not list for Atlas A2: the fix is a cast into its float dtypes.
    document = build_view(assess(ScanOptions(target=str(model_file(SINC_MODEL))))).document
    assert {op["op"]: op["category"] for op in document["operators"]}["torch.sinc"] == "direct"
    report_path = tmp_path / "sinc.json"
    report_path.write_text(json.dumps(document), encoding="utf-8")
    export = tmp_path / "op_summary_1.csv"
    export.write_text("Op Name,OP Type,Task Type,Task Duration(us),Input Shapes,Input Data Types\n"
                      'aclnnRelu_ReluAiCpu_Relu,Relu,AI_CPU,9.5,"4,8",DOUBLE\n', encoding="utf-8")
    checks = {c["check"]: c for c in assess_profile(export, report_path)["checks"]}
    fallback = checks["cpu-fallback"]
    assert fallback["op"] == "torch.sinc" and "SincKernelNpu.cpp:22" in fallback["evidence"]
    ai_cpu = checks["ai-cpu"]
    assert ai_cpu["op"] == "torch.relu"
    assert ai_cpu["fix"].startswith("cast float64 to one of bfloat16, float16, float32 (aclnnRelu's documented")


def test_memory_bound_and_dynamic_shape_checks(tmp_path, report_file):
    # op_summary with PipeUtilization columns: memory_bound = mte2_ratio / max(mac_ratio, vec_ratio), > 1 is
    # memory-bound (profiler_csv_columns.tsv); every kernel's OP State dynamic: the advisor's dynamic-shape rule.
    export = tmp_path / "op_summary_2.csv"
    export.write_text(
        "Op Name,OP Type,OP State,Task Type,Task Duration(us),Input Shapes,Input Data Types,aiv_vec_ratio,"
        "aiv_mte2_ratio,memory_bound\n"
        'aclnnRelu_ReluAiCore_Relu,Relu,dynamic,AI_VECTOR_CORE,4.0,"8,96",FLOAT,0.2,0.5,2.5\n'
        'aclnnRelu_ReluAiCore_Relu,Relu,dynamic,AI_VECTOR_CORE,4.0,"8,96",FLOAT,0.4,0.5,0.5\n', encoding="utf-8")
    document = assess_profile(export, report_file)
    checks = {c["check"]: c for c in document["checks"]}
    # duration-weighted means over the two launches: memory_bound (2.5 + 0.5) / 2 = 1.5, vec ratio 0.3
    assert "memory_bound = 1.50 > 1" in checks["memory-bound"]["message"]
    assert "aiv_vec_ratio = 0.30" in checks["checklist:vector_utilisation"]["message"]
    assert "set_compile_mode(jit_compile=False)" in checks["dynamic-shape"]["fix"]
    assert document["profile"]["pmu_columns"] == ["aiv_mte2_ratio", "aiv_vec_ratio", "memory_bound"]


def test_a_multi_device_export_is_averaged_per_device(tmp_path, report_file):
    # two devices ran the same step: 2 x 50 us of ArgSort in the export is 50 us per step and device
    single = op_summary().splitlines()
    lines = [single[0]] + single[1:] + [line.replace("0,resnet", "1,resnet", 1) for line in single[1:]]
    export = tmp_path / "op_summary_3.csv"
    export.write_text("\n".join(lines) + "\n", encoding="utf-8")
    document = assess_profile(export, report_file)
    assert document["profile"]["devices"] == 2 and document["profile"]["kernels"] == 2 * len(KERNELS)
    assert _ops(document)[0] == ("torch.argsort", 50.0, "AI_CPU")
    assert document["operators"][0]["calls"] == 1


def test_hostile_kernel_names_stay_inert(tmp_path, report_file):
    export = tmp_path / "op_summary_4.csv"
    export.write_text('Op Name,OP Type,Task Type,Task Duration(us)\n"<script>x</script>\x1b[31m|row",Evil,AI_CORE,1\n',
                      encoding="utf-8")
    document = assess_profile(export, report_file)
    assert document["unmatched"][0]["name"] == "<script>x</script>\x1b[31m|row"  # JSON keeps it as it is
    assert "<script>" not in render_profile(document, "html")
    assert "\x1b" not in render_profile(document, "terminal") and "\\x1b" in render_profile(document, "terminal")
    assert "\x1b" not in render_profile(document, "md") and "\\|row" in render_profile(document, "md")


@pytest.mark.parametrize(("change", "field"), [
    (lambda d: d["operators"][0].update(aten=5), "aten"),  # a number where a list of ATen ops belongs
    (lambda d: d["operators"][0].update(cann_op=["Relu"]), "cann_op"),
    (lambda d: d["operators"][0].update(signatures="abc"), "signatures"),
    (lambda d: d["operators"][0]["signatures"][0].update(input_shapes=[[1, [2]]]), "input_shapes"),
    (lambda d: d["operators"][0].update(aten=[3]), "aten"),
    (lambda d: d["operators"][0].update(estimated_time={"us": "fast"}), "estimated_time"),
    (lambda d: d["operators"][0].update(reasons=["cpu-fallback"]), "reasons"),
    (lambda d: d.update(model=5), "model"),
    (lambda d: d.update(target=["Atlas A2"]), "target"),
])
def test_a_report_of_the_wrong_shape_is_one_line_naming_the_field(tmp_path, change, field):
    """A JSON report whose operators hold the wrong types (hand-edited, another tool's) is one line naming the field
    (exit 1), for `profile` and `calibrate --profile-data` alike, never an internal error."""
    document = json.loads(json.dumps(report()))
    change(document)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(document), encoding="utf-8")
    export = tmp_path / "kernel_details.csv"
    export.write_text(kernel_details(steps=1), encoding="utf-8")
    for args in (["profile", str(export), "--report", str(bad), "-f", "json"],
                 ["calibrate", "--profile-data", str(export), "--report", str(bad), "-o", str(tmp_path / "d.toml")]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 1, (args[0], result.output)
        assert "not an opassess JSON report" in result.output and field in result.output, result.output
        assert "internal error" not in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "d.toml").exists()


def test_an_export_without_kernel_rows_is_one_line(tmp_path, report_file):
    """A header and no kernel row (a profiler stopped before the first step) measured nothing: it used to be a
    report of 0.0 us with no operator (exit 0); now one line naming the file (exit 1), as calibrate already was."""
    empty = tmp_path / "kernel_details.csv"
    empty.write_text(KERNEL_HEADER + "\n\n", encoding="utf-8")
    out = tmp_path / "profile.json"
    result = CliRunner().invoke(app, ["profile", str(empty), "--report", str(report_file), "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert "no kernel row" in result.output and "kernel_details.csv" in result.output
    assert len(result.output.strip().splitlines()) == 1 and not out.exists()


def test_a_large_export_is_held_in_little_memory_per_kernel_launch(tmp_path, report_file):
    """An export near the 256 MiB limit holds millions of launches: read and joined, each launch used to keep about
    1.3 KB (a 32 MB export took 600 MB), the text of its name, type and join reason copied per row. Repeated text is
    kept once and the records have slots. Measured as the memory that 10,000 more launches hold (about 780 bytes a
    launch), so caches filled on first use do not count: under 1,000 bytes. The measure runs in a fresh interpreter:
    in this one, what the tests run before it left (threads, caches) moves the figure."""
    done = subprocess.run([sys.executable, "-m", "tests.profiler.held_memory", str(report_file.parent)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    per_launch = float(done.stdout.split()[-1])
    assert per_launch < 1000, f"{per_launch:.0f} bytes per launch"


def test_no_prediction_is_not_blamed_on_a_report_that_has_a_time_model(tmp_path):
    """Kernels that join no operator of a report with a time model predict nothing: the text used to say 'the report
    has no time model', which is false; it says no joined operator carries one."""
    document = json.loads(json.dumps(report()))
    for op in document["operators"]:
        op["estimated_time"] = {"us": 10.0, "at_risk_us": 0.0, "bound": "memory", "unit": "vector", "penalties": []}
    report_path = tmp_path / "report.json"
    report_path.write_text(json.dumps(document), encoding="utf-8")
    export = tmp_path / "kernel_details.csv"
    export.write_text("Name,Type,Duration(us)\nTransData,TransData,2.0\n", encoding="utf-8")
    profile = assess_profile(export, report_path)
    assert profile["operators"] == [] and profile["summary"]["predicted_us"] is None
    text = render_profile(profile, "terminal")
    assert "the report has no time model" not in text and "no joined operator" in text


def test_absurd_durations_are_refused_not_summed_to_infinity(tmp_path, report_file):
    """Two launches of 1e308 us sum to inf: the JSON profile report held `Infinity` and `NaN`, which is not JSON. A
    duration beyond any run (over 1e12 us, 11.6 days) is one line naming the row (exit 1)."""
    export = tmp_path / "kernel_details.csv"
    export.write_text("Name,Type,Duration(us)\naclnnAddmm_MatMulCommon_MatMulV2,MatMulV2,1e308\n"
                      "aclnnAddmm_MatMulCommon_MatMulV2,MatMulV2,1e308\n", encoding="utf-8")
    out = tmp_path / "profile.json"
    result = CliRunner().invoke(app, ["profile", str(export), "--report", str(report_file), "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert "kernel_details.csv:2" in result.output and len(result.output.strip().splitlines()) == 1
    assert not out.exists()
