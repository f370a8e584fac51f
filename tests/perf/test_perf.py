"""opassess.perf: the time model on work of known size, checked against hand arithmetic (see each model's docstring),
the device profiles it reads and the overlay format."""
from __future__ import annotations

import pytest

from opassess.errors import ConfigError
from opassess.options import ScanOptions
from opassess.perf import CallWork, NoDeviceProfile, estimate_performance, load_profile, time_call
from opassess.pipeline.assess import assess
from tests.support import MODELS

_RUNS: dict = {}


def run(name: str, dtype: str | None = None, compare=()):
    key = (name, dtype)
    if key not in _RUNS:
        _RUNS[key] = assess(ScanOptions(target=str(MODELS / name), dtype=dtype, project_scan=False))
    a = _RUNS[key]
    return estimate_performance(a.inventory, a.classified, a.findings, a.target, compare=compare)


def test_profiles_convert_the_tables_units_on_purpose():
    a2 = load_profile("Atlas A2")
    assert a2.variant == "ATLAS_800_A2_376T_64G"
    assert a2.peaks["cube"]["bfloat16"] == pytest.approx(353.9e12)
    assert a2.hbm_bandwidth == pytest.approx(1.6 * 1024 ** 4)  # the source tool writes x * 1024^4 B/s
    assert (a2.efficiency["cube"], a2.memory_efficiency) == (0.7, 0.6)
    assert dict(a2.launch_us) == {"cube": 5.0, "vector": 2.0, "communication": 10.0, "aicpu": 2.0}
    assert a2.cite["peak.cube.bfloat16"] == "ascend_hw_figures.tsv:4:peak"
    a3 = load_profile("Atlas A3")
    assert a3.variant.endswith("_DIE") and any("per-die" in n for n in a3.notes)
    device = load_profile("Atlas A3", variant="ATLAS_800_A3_752T_128G_DEVICE")
    assert device.peaks["cube"]["bfloat16"] == pytest.approx(2 * a3.peaks["cube"]["bfloat16"])
    assert any("derived" in n for n in device.notes)
    a5 = load_profile("Ascend 950")
    assert a5.launch_us["communication"] == 5.0 and any("Atlas 350" in n for n in a5.notes)
    for product in ("Atlas training series", "Atlas inference series"):
        with pytest.raises(NoDeviceProfile, match="no published figures"):
            load_profile(product)


def test_one_matmul_by_hand():
    """bf16 4096^3 matmul on A2: 1.374e11 / (353.9e12 x 0.7) = 554.8 us, + 5 us launch."""
    n = 4096
    work = CallWork(node="mm", op="torch.matmul", unit="cube", dtype="bfloat16", flops=2 * n ** 3,
                    bytes=3 * n * n * 2, matmul=True, inner_axes=(n,))
    call = time_call(work, load_profile("Atlas A2"))
    assert call.compute_us == pytest.approx(554.79, rel=1e-3)
    assert call.us == pytest.approx(559.79, rel=1e-3) and call.bound == "compute" and call.at_risk_us == 0


def test_bf16_linear_stack_within_2x_of_flops_over_peak():
    step = run("perf_linear_stack.py", "bfloat16").step
    hand = 4 * 2 * 2048 ** 3 / (353.9e12 * 0.7) * 1e6  # 277.4 us
    assert hand / 2 <= step.by_unit["cube"] <= hand * 2
    assert step.operator("torch.nn.Linear").bound == "compute"
    assert step.at_risk_us == 0


def test_elementwise_add_within_2x_of_bytes_over_bandwidth():
    step = run("perf_add.py").step
    hand = 3 * 4096 ** 2 * 4 / (1.6 * 1024 ** 4 * 0.6) * 1e6  # 190.7 us
    add = next(o for o in step.operators if o.unit == "vector")
    assert hand / 2 <= add.us <= hand * 2 and add.bound == "memory"


def test_a_cpu_fallback_between_two_matmuls_ranks_first_in_time_at_risk():
    step = run("perf_fallback.py").step
    first = step.operators[0]
    assert first.op == "torch.i0" and first.unit == "cpu-fallback" and first.bound == "host"
    assert first.at_risk_us > 5000  # 134 MB over a 25 GB/s link is 5.4 ms on its own
    linear = step.operator("torch.nn.Linear")
    assert linear.at_risk_us < first.at_risk_us and "cpu-fallback" not in linear.penalties


def test_the_same_model_is_faster_on_a_product_with_more_compute():
    perf = run("perf_linear_stack.py", "bfloat16", compare=("Ascend 950", "Atlas training series"))
    others = dict(perf.compare)
    assert others["Atlas training series"] is None  # no figures in the tables: no step, not a guess
    assert others["Ascend 950"].step_us < perf.step.step_us  # 378 x 0.9 vs 353.9 x 0.7 TFLOPS


def test_overlay_overrides_efficiencies_and_refuses_unknown_keys(tmp_path):
    overlay = tmp_path / "a2.toml"
    overlay.write_text('product = "Atlas A2"\nsource = "profiler run"\n[cube]\nefficiency = 0.35\nlaunch_us = 8\n'
                       '[memory]\nbandwidth_gb_per_s = 1000\n[host]\nlink_gb_per_s = 50\n', encoding="utf-8")
    profile = load_profile("Atlas A2", overlay=overlay)
    assert profile.efficiency["cube"] == 0.35 and profile.efficiency["vector"] == 0.7
    assert profile.launch_us["cube"] == 8 and profile.hbm_bandwidth == 1e12 and profile.host.link == 50e9
    assert profile.cite["efficiency.cube"].startswith("overlay") and "profiler run" in profile.overlay
    work = CallWork(node="mm", op="mm", unit="cube", dtype="bfloat16", flops=1e12, bytes=0)
    assert time_call(work, profile).us == pytest.approx(2 * time_call(work, load_profile("Atlas A2")).us - 5 + 8 - 5,
                                                        rel=1e-3)
    overlay.write_text('[cube]\nefficency = 0.3\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="efficency"):
        load_profile("Atlas A2", overlay=overlay)
    overlay.write_text('product = "Atlas A3"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="calibrates 'Atlas A3'"):
        load_profile("Atlas A2", overlay=overlay)


def test_a_fallback_op_carrying_most_of_the_step_is_the_top_risk_and_says_so():
    """i0 is 12.1 of 16.1 ms (75%) in perf_fallback.py: five stars, the risk signal names its share of the step,
    its performance.pipeline sub-score is 1 from its time at risk; the action item says what it recovers."""
    from opassess.report.view import build_view

    assessment = _RUNS.get(("perf_fallback.py", None)) or assess(
        ScanOptions(target=str(MODELS / "perf_fallback.py"), project_scan=False))
    top = max(assessment.estimate.ops, key=lambda e: (e.risk.stars, e.risk.likelihood * e.risk.impact))
    assert top.score.classified.operator.key == "torch.i0" and top.risk.stars == 5
    assert any(s.startswith("carries 7") and "of the estimated step time on Atlas A2" in s for s in top.risk.signals)
    assert top.score.classified.operator.key in assessment.estimate.risk_matrix[4][4]
    pipeline = next(s for s in top.score.subscores if s.criterion == "pipeline")
    assert pipeline.value == 1.0 and "at risk" in pipeline.signal
    actions = build_view(assessment).display.actions
    assert actions[0].subject == "torch.i0" and "recovers ~12.00 ms per step (estimate)" in actions[0].time_text


def test_a_backward_takes_the_flops_its_calls_counted():
    # --train: a backward's FLOPs are what its ATen calls counted (the capture's formulas); a backward with none
    # counted is twice a cube forward (input and weight gradients)
    from opassess.perf.inputs import backward_work
    from opassess.records import AtenCall, OpNode

    call = AtenCall("aten::mm", "default", ((4, 8), (8, 2)), ("float32", "float32"), ((4, 2),), ("float32",))
    node = OpNode("mm", "torch.mm", "function", "", {}, ((4, 8), (8, 2)), ("float32", "float32"), ((4, 2),),
                  ("float32",), (call,), None, flops=128, backward=(call, call))
    forward = CallWork(node="mm", op="torch.mm", unit="cube", dtype="float32", flops=128.0, bytes=0.0)
    assert backward_work(forward, node).flops == 256
    counted = backward_work(forward, OpNode(**{**node.__dict__, "backward_flops": 300}))
    assert counted.flops == 300 and counted.launches == 2


def test_a_binding_still_to_write_runs_on_the_cpu_until_it_is_written():
    # lgamma.py: aten::lgamma has no torch_npu registration but CANN documents aclnnLgamma (reason binding,
    # param-converted). As the model stands torch_npu falls back to the CPU: the call is timed so, its roofline is
    # the NPU time once the binding is written, and the penalty names the binding it waits for.
    perf = run("lgamma.py")
    (call,) = [c for c in perf.step.calls if c.op == "torch.lgamma"]
    assert call.unit == "cpu-fallback" and call.bound == "host" and call.us > call.roofline_us > 0
    (penalty,) = call.penalties
    assert penalty.code == "cpu-fallback" and penalty.us == pytest.approx(call.us - call.roofline_us)
    assert penalty.why.startswith("no torch_npu registration for aten::lgamma yet (CANN has the kernel): until its "
                                  "op-plugin binding is written, it runs on the CPU")
    # a param-converted operator whose kernel exists is timed on the NPU: float64.py's Linear (a cast to make)
    linear = [c for c in run("float64.py").step.calls if c.op == "torch.nn.Linear"]
    assert linear and all(c.unit == "cube" and "cpu-fallback" not in {p.code for p in c.penalties} for c in linear)
