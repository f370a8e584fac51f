"""--gpu-baseline: the same captured calls timed on an NVIDIA GPU's datasheet figures (gpus.json from
gpu_figures.tsv), the NPU/GPU ratio, per operator, and --match-gpus."""
from __future__ import annotations

import json
import math

import pytest

from opassess.errors import UsageError
from opassess.options import ParallelLayout, ScanOptions
from opassess.perf import CallWork, load_profile
from opassess.perf.gpu import gpu_baseline, gpu_profile
from opassess.pipeline.assess import assess
from opassess.report import render
from tests.support import MODELS


def test_a_bf16_4096_cubed_matmul_on_h100_gives_the_ratio_of_the_two_peaks():
    """Atlas A2: 1.374e11 / (353.9e12 x 0.7) + 5 us = 559.8 us; H100 SXM5: 1.374e11 / (989.5e12 x 0.7) + 5 us =
    203.4 us (compute bound on both: 3 x 32 MiB over 3.35e12 x 0.6 B/s is 50 us); 2.75 against 989.5 / 353.9 = 2.80
    (the launch is the same on both)."""
    n = 4096
    work = CallWork(node="mm", op="torch.matmul", unit="cube", dtype="bfloat16", flops=2 * n ** 3,
                    bytes=3 * n * n * 2, matmul=True, inner_axes=(n,))
    a2 = load_profile("Atlas A2")
    h100 = gpu_profile("H100", a2)
    assert h100.peaks["cube"]["bfloat16"] == 989.5e12 and h100.hbm_bandwidth == 3.35e12
    assert h100.cite["peak.cube.bfloat16"].startswith("gpu_figures.tsv:")
    base = gpu_baseline([work], 559.79, h100)
    assert base.step_us == pytest.approx(2 * n ** 3 / (989.5e12 * 0.7) * 1e6 + 5, rel=1e-4)
    assert base.ratio == pytest.approx(2.752, abs=0.005)
    assert base.ratio == pytest.approx(989.5 / 353.9, rel=0.02)
    assert base.operators == {"torch.matmul": base.step_us}


def test_gpus_without_figures_are_refused_or_said_so():
    a2 = load_profile("Atlas A2")
    with pytest.raises(UsageError, match="no figures for that GPU") as caught:
        gpu_profile("V100", a2)
    assert caught.value.option == "--gpu-baseline"
    with pytest.raises(UsageError, match="no compute peak"):
        gpu_profile("H800", a2)
    h200 = gpu_profile("h200", a2)  # bf16 only: float32 work is timed by its bytes, and the notes say so
    assert h200.product == "H200" and math.isinf(h200.peaks["vector"]["float32"])
    assert any("no non-tensor float32 peak" in n for n in h200.notes)
    with pytest.raises(UsageError, match="--gpu-baseline"):
        ScanOptions(target="m.py", match_gpus=8)


def test_the_scan_reports_the_baseline_per_operator_and_the_npus_matching_n_gpus():
    """perf_linear_stack in bf16 on A2 vs H100 with --match-gpus 8 under tp=2: N x ratio NPUs, whole tp replicas."""
    a = assess(ScanOptions(target=str(MODELS / "perf_linear_stack.py"), dtype="bfloat16", project_scan=False,
                           graph_mode="off", gpu_baseline="H100", match_gpus=8, parallel=ParallelLayout(tp=2)))
    base = a.performance.gpu_baseline
    assert base.gpu == "H100" and base.ratio == pytest.approx(a.performance.step.step_us / base.step_us)
    assert base.matching_npus == math.ceil(8 * base.ratio / 2) * 2
    doc = json.loads(render(a, "json"))
    assert doc["performance"]["gpu_baseline"]["ratio"] == pytest.approx(base.ratio, abs=1e-3)
    linear = next(o for o in doc["operators"] if o["op"] == "torch.nn.Linear")
    assert linear["estimated_time"]["gpu_us"] == pytest.approx(base.step_us, abs=0.1)
    md = render(a, "md")
    assert "| H100 |" in md and f"{base.matching_npus} NPUs match 8 GPUs" in md
    assert "<th class=\"num\">H100</th>" in render(a, "html")
