"""The job: memory per device (one device and under --parallel) and the --parallel option, on work of known size
checked by hand."""
from __future__ import annotations

from dataclasses import replace

import pytest

from opassess.errors import UsageError
from opassess.options import ParallelLayout, ScanOptions
from opassess.perf import load_profile
from opassess.perf.memory import step_memory
from opassess.pipeline.assess import assess
from tests.support import MODELS

GIB = 1024 ** 3
LLAMA2_7B = 6_738_415_616  # Llama-2-7B's parameters (benchmarks/llama2_7b_hf.py builds them)
_RUNS: dict = {}


def run(name: str, **options):
    key = (name, tuple(sorted(options.items())))
    if key not in _RUNS:
        _RUNS[key] = assess(ScanOptions(target=str(MODELS / name), project_scan=False, graph_mode="off", **options))
    return _RUNS[key]


def test_parallel_option_reads_every_key_and_refuses_the_rest():
    layout = ParallelLayout.parse("tp=8, pp=2,dp=4,ep=2,cp=1,sp,zero=1")
    assert (layout.tp, layout.pp, layout.dp, layout.ep, layout.cp, layout.sp, layout.zero) == (8, 2, 4, 2, 1, True, 1)
    assert layout.devices == 64 and layout.text() == "tp=8,pp=2,dp=4,ep=2,zero=1,sp"
    for bad in ("tp=0", "tp=two", "xp=2", "tp=2,tp=4", "sp", "tp=2,zero=4", "dp=2,ep=4", "tp"):
        with pytest.raises(UsageError) as caught:
            ParallelLayout.parse(bad)
        assert caught.value.option == "--parallel"
    with pytest.raises(UsageError, match="needs --parallel"):
        ScanOptions(target="m.py", global_batch=8)


def test_a_bf16_adamw_step_holds_16_bytes_per_parameter_and_its_forward_outputs():
    """perf_linear_stack in bf16: 4 x 2048^2 = 16,777,216 parameters x (2 + 2 + 2 x 4 + 4) B = 256 MiB; the forward
    keeps each Linear's (2048, 2048) bf16 output, 8 MiB, 4 of them = 32 MiB (and the loss's scalar)."""
    a = run("perf_linear_stack.py", dtype="bfloat16", train=True)
    memory = a.performance.memory
    params = 4 * 2048 ** 2
    assert memory.breakdown["weights"] == params * 2 and memory.breakdown["gradients"] == params * 2
    assert memory.breakdown["optimizer"] == params * (2 * 4 + 4)
    assert memory.breakdown["activations"] == pytest.approx(4 * 2048 * 2048 * 2, rel=0.01)
    assert memory.hbm_bytes == 64 * GIB and memory.fits is True
    assert "AdamW" in memory.basis


def test_an_inference_pass_holds_weights_the_largest_call_and_no_optimizer():
    """perf_linear_stack in float32, forward: 16.8M x 4 B = 64 MiB of weights; the largest call reads a (2048, 2048)
    input and writes its output: 2 x 16 MiB (its weight is counted with the weights)."""
    memory = run("perf_linear_stack.py").performance.memory
    assert set(memory.breakdown) == {"weights", "activations"}
    assert memory.breakdown["weights"] == 4 * 2048 ** 2 * 4
    assert memory.breakdown["activations"] == 2 * 2048 * 2048 * 4


def test_a_7b_adamw_step_does_not_fit_one_64gib_device_and_fits_under_tp8_or_zero1():
    """6.74e9 x 16 B = 100.4 GiB > 64 GiB on one Atlas A2; tp=8: 12.6 GiB; tp=1, dp=8 with ZeRO-1 (states and master
    copy sharded): 6.74e9 x (2 + 2 + 12 / 8) B = 34.5 GiB."""
    a = run("perf_linear_stack.py", dtype="bfloat16", train=True)
    inventory = replace(a.inventory, model=replace(a.inventory.model, parameters=LLAMA2_7B))
    hbm = load_profile("Atlas A2").hbm_bytes
    one = step_memory(inventory, hbm)
    assert one.fits is False
    assert (one.bytes - one.breakdown["activations"]) / GIB == pytest.approx(LLAMA2_7B * 16 / GIB) == \
        pytest.approx(100.4, abs=0.05)
    tp8 = step_memory(inventory, hbm, ParallelLayout(tp=8))
    assert tp8.fits is True and (tp8.bytes - tp8.breakdown["activations"]) / GIB == pytest.approx(12.55, abs=0.01)
    zero = step_memory(inventory, hbm, ParallelLayout(dp=8, zero=1))
    assert zero.fits is True and (zero.bytes - zero.breakdown["activations"]) / GIB == pytest.approx(34.5, abs=0.05)
    assert zero.breakdown["weights"] == one.breakdown["weights"]  # ZeRO-1 shards no weights


def test_tensor_parallel_splits_activations_wholly_only_with_sequence_parallel():
    """Without sp a tensor-parallel layer keeps 10 of its 34 units whole (Korthikanti et al.): 10/34 + 24/34/8."""
    a = run("perf_linear_stack.py", dtype="bfloat16", train=True)
    whole = a.performance.memory.breakdown["activations"]
    plain = step_memory(a.inventory, None, ParallelLayout(tp=8)).breakdown["activations"]
    sp = step_memory(a.inventory, None, ParallelLayout(tp=8, sp=True)).breakdown["activations"]
    assert sp == pytest.approx(whole / 8)
    assert plain == pytest.approx(whole * (0.294 + 0.706 / 8))
    held = step_memory(a.inventory, None, ParallelLayout(pp=4), micro_batches=2).breakdown["activations"]
    assert held == pytest.approx(whole * 2 / 4)  # the first stage holds 2 of its 4 micro-batches' quarter


def test_a_global_batch_the_replicas_do_not_divide_is_refused():
    with pytest.raises(UsageError, match="not a multiple") as caught:
        run("perf_linear_stack.py", parallel=ParallelLayout(dp=3), global_batch=4096)
    assert caught.value.option == "--global-batch"


def test_eager_mode_is_host_bound_for_many_small_calls_and_device_bound_for_large_ones():
    """findings_llm: each kernel call costs 20 us of host dispatch (time_model.toml, assumed), far above its device
    time: the eager step is the host's; perf_linear_stack's four 2048^3 bf16 matmuls (297 us) hide 4 x 20 us."""
    small = run("findings_llm.py").performance.step
    kernels = sum(1 for c in small.calls if c.unit in ("cube", "vector", "aicpu"))
    assert small.host_us == pytest.approx(kernels * 20.0) and small.host_us > small.step_us
    assert small.eager_us == pytest.approx(small.host_us)
    large = run("perf_linear_stack.py", dtype="bfloat16").performance.step
    assert large.host_us == pytest.approx(80.0) and large.eager_us == pytest.approx(large.step_us)


def test_bad_layout_flags_are_one_line_usage_errors_before_any_scan():
    from typer.testing import CliRunner

    from opassess.cli import app

    runner = CliRunner()
    model = str(MODELS / "perf_linear_stack.py")
    for args, words in ((["--parallel", "tp=0"], "at least 1"), (["--parallel", "tp=2,sp,pp"], "expected tp=N"),
                        (["--global-batch", "8"], "needs --parallel"), (["--gpu-baseline", "V100"], "no figures"),
                        (["--match-gpus", "8"], "needs --gpu-baseline")):
        result = runner.invoke(app, ["scan", model, "-q", *args])
        assert result.exit_code == 2, (args, result.output)
        assert words in result.output and "Traceback" not in result.output
