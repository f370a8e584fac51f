"""The job under --parallel: collectives sized and timed by hand on the product's interconnect figures, the pipeline
bubble, the data-parallel gradient all-reduce of a 7B model, and the JSON/terminal view of it."""
from __future__ import annotations

import math
from dataclasses import replace

import pytest

from opassess.options import ParallelLayout, ScanOptions
from opassess.perf import load_profile
from opassess.perf.interconnect import collective_us, load_interconnect
from opassess.perf.parallel import parallel_step
from opassess.perf.step import call_works
from opassess.pipeline.assess import assess
from tests.support import MODELS

LLAMA2_7B = 6_738_415_616
_RUNS: dict = {}


def run(name: str, **options):
    key = (name, tuple(sorted(options.items())))
    if key not in _RUNS:
        _RUNS[key] = assess(ScanOptions(target=str(MODELS / name), project_scan=False, graph_mode="off", **options))
    return _RUNS[key]


def test_interconnect_figures_come_from_the_comm_table_with_citations():
    a2 = load_interconnect("Atlas A2")
    hccs, roce = a2.tiers
    assert (hccs.name, hccs.ranks, hccs.bandwidth, hccs.latency_us, hccs.efficiency) == ("HCCS", 8, 196e9, 0.5, 0.7)
    assert (roce.name, roce.bandwidth, roce.latency_us) == ("RoCE", 25e9, 1.5)
    assert hccs.cite == "ascend_comm_figures.tsv:3:value" and a2.launch_us == 10.0
    a3 = load_interconnect("Atlas A3")
    assert [t.name for t in a3.tiers] == ["SIO", "HCCS", "HCCS supernode"] and a3.tiers[0].bandwidth == 224e9
    assert load_interconnect("Ascend 950").launch_us == 5.0
    assert load_interconnect("Atlas training series") is None


def test_a_tp8_all_reduce_of_a_4096_token_layer_by_hand():
    """32 MiB (4096 tokens x 4096 hidden x 2 B) over tp=8 on A2's HCCS full mesh: bw = 196e9 x 0.7 = 1.372e11 B/s;
    ring 2 x 7 x 0.5 us + 2 x 7/8 x 33,554,432 / 1.372e11 s = 7 + 428.0 us, tree 3 + 489.1 us: 435.0 us + 10 us launch.
    Over two ranks of the mesh a send uses 1 of 7 links: 196e9 x 0.7 / 7 = 1.96e10 B/s."""
    a2 = load_interconnect("Atlas A2")
    tier, reached = a2.tier(8)
    assert reached and tier.name == "HCCS"
    message = 4096 * 4096 * 2
    assert collective_us("tp-all-reduce", message, 8, tier, a2.launch_us) == pytest.approx(445.0, abs=0.1)
    assert tier.effective(2) == pytest.approx(1.96e10)
    assert a2.tier(16)[0].name == "RoCE"  # two nodes: the group leaves HCCS


def test_tensor_parallel_layers_add_two_all_reduces_per_layer_and_pass():
    """bert_shaped (12 layers, hidden 768, input (1, 128)): a training step has 12 x 2 x 2 = 48 all-reduces of
    128 x 768 x 4 B = 384 KiB per micro-batch; with sp, 48 all-gathers and 48 reduce-scatters instead."""
    a = run("bert_shaped.py", train=True)
    works = call_works(a.inventory, a.classified, a.findings, load_profile("Atlas A2"))
    a2, links = load_profile("Atlas A2"), load_interconnect("Atlas A2")
    job = parallel_step(a.inventory, works, a2, ParallelLayout(tp=8), None, links)
    (ar,) = job.collectives
    assert (ar.kind, ar.group, ar.tier, ar.calls, ar.bytes) == ("tp-all-reduce", 8, "HCCS", 48, 128 * 768 * 4)
    assert ar.us == pytest.approx(48 * collective_us("tp-all-reduce", ar.bytes, 8, links.tiers[0], 10.0))
    sp = parallel_step(a.inventory, works, a2, ParallelLayout(tp=8, sp=True), None, links)
    assert [(c.kind, c.calls) for c in sp.collectives] == [("sp-all-gather", 48), ("sp-reduce-scatter", 48)]
    assert job.compute_us < parallel_step(a.inventory, works, a2, ParallelLayout(), None, links).compute_us


def test_a_pp4_pipeline_bubble_is_p_minus_1_micro_batch_times():
    """perf_linear_stack forward (micro-batch 2048), pp=4, 8 micro-batches: bubble = 3 t_mb, step = (8 + 3) t_mb:
    the bubble is (p - 1) / m = 3/8 of the work."""
    a = run("perf_linear_stack.py", dtype="bfloat16")
    works = call_works(a.inventory, a.classified, a.findings, load_profile("Atlas A2"))
    job = parallel_step(a.inventory, works, load_profile("Atlas A2"), ParallelLayout(pp=4), 8 * 2048,
                        load_interconnect("Atlas A2"))
    assert job.micro_batches == 8
    t_mb = job.bubble_us / 3
    assert job.step_us == pytest.approx(11 * t_mb)
    assert job.bubble_us / (job.step_us - job.bubble_us) == pytest.approx(3 / 8)
    (p2p,) = job.collectives
    assert (p2p.kind, p2p.calls, p2p.bytes) == ("pp-send-recv", 8, 2048 * 2048 * 2)


def test_the_data_parallel_all_reduce_of_7b_gradients_by_hand():
    """6.74e9 bf16 gradients over dp=8 (one A2 node): 169 buckets of 40M parameters (80 MB); each ring all-reduce
    7 us + 2 x 7/8 x 8e7 / 1.372e11 s = 1,027.4 us + 10 us launch: 175.3 ms for the step; dp=16 crosses RoCE."""
    a = run("perf_linear_stack.py", dtype="bfloat16", train=True)
    inventory = replace(a.inventory, model=replace(a.inventory.model, parameters=LLAMA2_7B))
    works = call_works(a.inventory, a.classified, a.findings, load_profile("Atlas A2"))
    job = parallel_step(inventory, works, load_profile("Atlas A2"), ParallelLayout(dp=8), None,
                        load_interconnect("Atlas A2"))
    (dp,) = job.collectives
    assert (dp.kind, dp.group, dp.tier, dp.calls, dp.bytes) == ("dp-all-reduce", 8, "HCCS",
                                                                math.ceil(LLAMA2_7B / 40e6), 8e7)
    assert dp.us / 1e3 == pytest.approx(169 * 1.0374, abs=0.1)
    assert dp.exposed_us < dp.us  # overlapped with the last micro-batch's backward: the tiny backward hides little
    across = parallel_step(inventory, works, load_profile("Atlas A2"), ParallelLayout(dp=16), 16 * 2048,
                           load_interconnect("Atlas A2")).collectives[0]
    assert across.tier == "RoCE" and across.us > 5 * dp.us


def test_the_report_shows_the_layout_and_its_json():
    import json

    from opassess.report import render

    a = run("bert_shaped.py", train=True, parallel=ParallelLayout(tp=2, pp=2, dp=2), global_batch=16)
    doc = json.loads(render(a, "json"))["performance"]["parallel"]
    assert {k: doc[k] for k in ("tp", "pp", "dp", "ep", "sp", "cp", "devices", "micro_batches")} == \
        {"tp": 2, "pp": 2, "dp": 2, "ep": 1, "sp": False, "cp": 1, "devices": 8, "micro_batches": 8}
    assert doc["step_us"] == pytest.approx(doc["compute_us"] + doc["comm_us"] + doc["bubble_us"], rel=1e-3)
    assert doc["tokens_per_s_per_device"] > 0 and doc["memory"]["fits"] is True
    assert {c["kind"] for c in doc["collectives"]} == {"tp-all-reduce", "pp-send-recv", "dp-all-reduce"}
    for fmt in ("terminal", "md", "html"):
        assert "Layout tp=2,pp=2,dp=2 on 8 devices" in render(a, fmt, width=200)


def test_an_a3_device_is_timed_as_two_dies_over_sio():
    """Atlas A3's profile is one die's; without --parallel the device's step is the step split over its two dies:
    tp=2 all-reduces over SIO (224 GB/s x 0.7, 0.2 us a step), 12 layers x 2 x 2 of them for bert_shaped's training
    step."""
    a = run("bert_shaped.py", train=True, product="Atlas A3")
    pair = a.performance.two_dies
    (ar,) = pair.collectives
    assert (ar.kind, ar.group, ar.tier, ar.calls) == ("tp-all-reduce", 2, "SIO", 48)
    # bert_shaped's small calls are host-bound in eager mode: each die's host dispatches every kernel of the forward
    # and backward (the optimizer's own step comes on top), whatever the split
    assert pair.step_us == pytest.approx(pair.compute_us + pair.comm_us)
    assert pair.compute_us >= a.performance.step.host_us - 20.0 * sum(
        1 for c in a.performance.step.calls if c.op.startswith("torch.optim") and c.unit != "none")
    assert any("host-bound" in n for n in pair.notes)
    assert any("a rank is a die" in n for n in pair.notes)
    assert run("bert_shaped.py", train=True).performance.two_dies is None  # Atlas A2: one die


def test_a_micro_batch_of_many_small_calls_takes_its_host_dispatch_time():
    """findings_llm forward over dp=2: each micro-batch's 22 kernel calls cost 22 x 20 us of host dispatch, more than
    their device time: the step's compute is the host's, and the notes say so."""
    a = run("findings_llm.py")
    works = call_works(a.inventory, a.classified, a.findings, load_profile("Atlas A2"))
    job = parallel_step(a.inventory, works, load_profile("Atlas A2"), ParallelLayout(dp=2), None,
                        load_interconnect("Atlas A2"))
    assert job.compute_us == pytest.approx(a.performance.step.host_us)
    assert any("host-bound" in n for n in job.notes)
