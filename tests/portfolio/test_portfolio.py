"""Portfolio: shared effort worked by hand, greedy order, custom-dev ranking, and the worker processes (a crash, a
hang past the timeout, a resumed run, real example models)."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from opassess.ci.snapshot import read_snapshot
from opassess.errors import ConfigError
from opassess.options import ScanOptions
from opassess.portfolio import STATE_FILE, PortfolioOptions, expand_targets, plan_portfolio, scan_portfolio
from opassess.portfolio.report import render_portfolio
from opassess.records import Effort
from opassess.score.weights.load import load_weights
from tests.ci.records import op, report, sig

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = load_weights(None)

CONV = sig("direct", count=4)
GELU = sig("custom-dev", attrs={"approximate": "none"})
BN_A = sig("param-converted", shapes=([2, 32, 16, 16],))
BN_B = sig("param-converted", shapes=([2, 64, 8, 8],))  # another shape: its own conversion and test


def conv():
    return op("torch.nn.Conv2d", "direct", days=(1.0, 1.5, 2.0), signatures=[CONV])


def gelu():
    return op("mylib::gelu", "custom-dev", days=(10.0, 12.0, 24.0), composite=0.2, signatures=[GELU])


def bn(signature):
    # param-converted, composite 0.5: placed 3 + 0.5 x (5 - 3) = 4.0 likely, 3.2 low, 6.4 high (one signature)
    return op("torch.nn.BatchNorm2d", "param-converted", days=(3.2, 4.0, 6.4), composite=0.5, signatures=[signature])


# Four models (likely person-days alone):
#   cnn  = Conv2d 1.5 + mylib::gelu 12.0                        = 13.5
#   mlp  = Linear 1.5 + mylib::gelu 12.0 + mylib::attn 15.0     = 28.5
#   bn1  = Conv2d 1.5 + BatchNorm2d (shape A) 4.0               =  5.5
#   bn2  = Conv2d 1.5 + BatchNorm2d (shape B) 4.0               =  5.5      standalone sum 53.0
MODELS = [
    ("cnn", "cnn.py", read_snapshot(report("cnn.py", [conv(), gelu()]))),
    ("mlp", "mlp.py", read_snapshot(report("mlp.py", [
        op("torch.nn.Linear", "direct", days=(1.0, 1.5, 2.0)), gelu(),
        op("mylib::attn", "custom-dev", days=(12.0, 15.0, 30.0), composite=0.5)]))),
    ("bn1", "bn1.py", read_snapshot(report("bn1.py", [conv(), bn(BN_A)]))),
    ("bn2", "bn2.py", read_snapshot(report("bn2.py", [conv(), bn(BN_B)]))),
]


def test_a_shared_operator_is_paid_once_and_models_are_ordered_by_marginal_effort():
    plan, demands, standalone, shared = plan_portfolio(MODELS, WEIGHTS)
    e = WEIGHTS.effort
    # Greedy, cheapest next:
    #  1. bn1 5.5 (ties with bn2 at 5.5; bn1 comes first in the target list) -> pays Conv2d and BatchNorm2d(A).
    #  2. bn2: Conv2d shared (same signature) 0; BatchNorm2d already ported but shape B is new: effort(A, B) -
    #     effort(A) = per_occurrence = 0.02 (shipped weights): the report names no limit that shape B trips
    #     differently from A, so it needs no conversion of its own (per_extra_signature counts only different
    #     limits) -> 0.02, cheaper than cnn (12.0: Conv2d shared, gelu new) and mlp (28.5).
    #  3. cnn 12.0 (mylib::gelu new), cheaper than mlp 28.5.
    #  4. mlp: Linear 1.5 + gelu shared 0 + attn 15.0 = 16.5.
    # Shared total 5.5 + 0.02 + 12.0 + 16.5 = 34.02 against 53.0 standalone: the second gelu (12.0), the second,
    # third and fourth Conv2d (3 x 1.5) and BatchNorm2d but for its new shape (4.0 - 0.02) are not paid again.
    extension = e.per_occurrence
    assert [p.name for p in plan] == ["bn1", "bn2", "cnn", "mlp"]
    assert [round(p.marginal.likely, 4) for p in plan] == [5.5, round(extension, 4), 12.0, 16.5]
    assert round(standalone.likely, 4) == 53.0
    assert round(shared.likely, 4) == round(5.5 + extension + 12.0 + 16.5, 4)
    assert round(plan[-1].cumulative.likely, 4) == round(shared.likely, 4)
    bn2 = plan[1]
    assert (bn2.new_ops, bn2.extended_ops, bn2.shared_ops) == ((), ("torch.nn.BatchNorm2d",), ("torch.nn.Conv2d",))
    assert plan[3].shared_ops == ("mylib::gelu",) and plan[3].new_ops == ("torch.nn.Linear", "mylib::attn")
    # the extension is a share of BatchNorm2d's own range: 0.02 / 4.0 of (3.2, 4.0, 6.4), so never more than alone
    assert (round(bn2.marginal.low, 4), round(bn2.marginal.high, 4)) == (round(3.2 * extension / 4.0, 4),
                                                                         round(6.4 * extension / 4.0, 4))


def test_custom_dev_operators_are_ranked_by_models_unblocked():
    _, demands, _, _ = plan_portfolio(MODELS, WEIGHTS)
    # gelu is needed by cnn and mlp (and is cnn's only custom-dev op); attn by mlp alone.
    assert [(d.op, d.models, d.sole_blocker_of) for d in demands] == [
        ("mylib::gelu", ("cnn", "mlp"), ("cnn",)),
        ("mylib::attn", ("mlp",), ()),
    ]
    assert demands[0].effort.likely == 12.0  # paid once: cnn paid 12.0, mlp 0


def test_expand_targets_takes_model_files_from_directories_and_names_clashes_apart(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "net.py").write_text("def build_model():\n    pass\n")
    (tmp_path / "b" / "net.py").write_text("def build_model():\n    pass\n")
    (tmp_path / "b" / "helpers.py").write_text("X = 1\n")
    models, skipped = expand_targets([str(tmp_path), "torchvision.models:resnet50"])
    names = [m.name for m in models]
    assert len(names) == 3 and names[2] == "resnet50"
    assert names[0].startswith("net-") and names[1].startswith("net-") and names[0] != names[1]
    assert [(Path(s.path).name, s.reason) for s in skipped] == [("helpers.py", "defines no build_model()")]
    # portfolio.py and portfolio.state.py would write portfolio.json and portfolio.state.json (the resume state).
    (tmp_path / "c").mkdir()
    for name in ("portfolio.py", "portfolio.state.py"):
        (tmp_path / "c" / name).write_text("def build_model():\n    pass\n")
    reserved, _ = expand_targets([str(tmp_path / "c")])
    assert all(m.name.startswith(("portfolio-", "portfolio.state-")) for m in reserved), reserved


def test_resume_rescans_after_the_weights_file_changes(tmp_path):
    # --resume keeps a finished model only when it would be scanned the same way: the same --weights path with
    # other numbers in it gives other estimates, so it must not count as the same scan.
    from opassess.portfolio.state import fingerprint as _fingerprint

    model = tmp_path / "net.py"
    model.write_text("def build_model():\n    pass\n")
    weights = tmp_path / "w.toml"
    weights.write_text("[effort]\nper_occurrence = 0.02\n")
    options = PortfolioOptions(targets=(str(model),), scan=ScanOptions(target="", weights=weights),
                               out_dir=tmp_path / "out")
    before = _fingerprint(options, str(model))
    assert _fingerprint(options, str(model)) == before  # stable while nothing changes
    weights.write_text("[effort]\nper_occurrence = 0.1\n")
    assert _fingerprint(options, str(model)) != before


# ---------------------------------------------------------------- worker processes

CRASH = """
import os
def build_model():
    os.abort()  # takes the whole interpreter down: the worker dies with SIGABRT
def example_inputs():
    return ()
"""

HANG = """
import time
def build_model():
    time.sleep(120)
def example_inputs():
    return ()
"""

GREEDY = """
def build_model():
    return bytearray(8 * 2**30)  # 8 GiB, over the worker's 2 GiB address-space cap: MemoryError
"""

RAISE = """
def build_model():
    raise ValueError("no weights for you")
"""

TINY = """
import torch
from torch import nn

def build_model():
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, {out}))

def example_inputs():
    return (torch.randn(2, 8),)
"""


def options(tmp_path, targets, **kw):
    kw.setdefault("jobs", 2)
    kw.setdefault("timeout", 60.0)
    return PortfolioOptions(targets=tuple(str(t) for t in targets), scan=ScanOptions(target=""),
                            out_dir=tmp_path / "out", **kw)


def test_a_crash_a_hang_and_running_out_of_memory_fail_with_their_cause(tmp_path, model_file):
    crash = model_file(CRASH, "crash.py")
    hang = model_file(HANG, "hang.py")
    greedy = model_file(GREEDY, "greedy.py")
    broken = model_file(RAISE, "broken.py")
    portfolio = scan_portfolio(options(tmp_path, [crash, hang, greedy, broken], timeout=3.0, jobs=2,
                                       memory_limit=2 * 2**30))
    causes = {r.name: (r.status, r.cause) for r in portfolio.results}
    assert causes["greedy"][0] == "failed"
    assert causes["greedy"][1].startswith("out of memory under the memory cap of 2.0 GiB: ")
    assert causes["greedy"][1].endswith("greedy.py: build_model() raised MemoryError (at line 3)")  # path said once
    assert causes["crash"] == ("failed", "worker crashed: SIGABRT (aborted)")
    assert causes["hang"] == ("failed", "timed out after 3 s (worker killed)")
    assert causes["broken"][0] == "failed" and "ValueError: no weights for you" in causes["broken"][1]
    state = json.loads((tmp_path / "out" / STATE_FILE).read_text())
    assert {entry["status"] for entry in state["models"].values()} == {"failed"}
    assert render_portfolio(portfolio, "md").count("| failed") == 0  # failures are listed in their own table
    assert "worker crashed: SIGABRT" in render_portfolio(portfolio, "md")


def test_examples_interrupted_then_resumed_with_shared_conv2d_counted_once(tmp_path):
    """resnet_like and custom_op_model, one worker: interrupt after the first model, resume, check the sharing."""
    run = options(tmp_path, [ROOT / "examples" / "resnet_like.py", ROOT / "examples" / "custom_op_model.py"],
                  jobs=1, timeout=120.0)

    def interrupt(event):
        if event.kind == "done":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        scan_portfolio(run, interrupt)
    state = json.loads((tmp_path / "out" / STATE_FILE).read_text())["models"]
    assert [entry["name"] for entry in state.values()] == ["resnet_like"]  # persisted before the interruption
    assert not (tmp_path / "out" / "custom_op_model.json").exists()

    events = []
    portfolio = scan_portfolio(replace(run, resume=True), events.append)
    assert [(e.kind, e.name) for e in events] == [("resumed", "resnet_like"), ("start", "custom_op_model"),
                                                  ("done", "custom_op_model")]
    assert [r.resumed for r in portfolio.results] == [True, False]

    resnet = read_snapshot(tmp_path / "out" / "resnet_like.json")
    custom = read_snapshot(tmp_path / "out" / "custom_op_model.json")
    plan = {p.name: p for p in portfolio.plan}
    assert [p.name for p in portfolio.plan] == ["resnet_like", "custom_op_model"]  # cheaper alone, and first
    costs = dict(plan["custom_op_model"].costs)
    # nn.Conv2d is direct in both, in each model's validation block: its share is part of the validation line, which
    # each model pays in full (its own outputs compared), so the operator type itself costs nothing the second time
    # although custom_op_model's 6 calls bring new shapes.
    conv_alone = custom.operator("torch.nn.Conv2d")
    assert (resnet.operator("torch.nn.Conv2d").count, conv_alone.count) == (20, 6)
    assert conv_alone.cost == "validation-block" and "torch.nn.Conv2d" in plan["custom_op_model"].extended_ops
    assert "torch.nn.Conv2d" not in costs
    # what custom_op_model adds = its new operator types in full + the extensions of the shared ones
    new_days = sum(custom.operator(op).person_days.likely for op in plan["custom_op_model"].new_ops
                   if custom.operator(op).cost != "validation-block")
    assert "opassess_examples::fused_bias_gelu" in plan["custom_op_model"].new_ops
    # ... + its model-level work: its own validation, accuracy alignment and tuning, but not the environment bring-up
    # on Atlas A2, which resnet_like paid
    activities = dict(custom.activities)
    own = plan["custom_op_model"].model_level
    decisions = sum(once.likely for _, _, once in custom.decisions)
    assert own.likely == pytest.approx(sum(days.likely for days in activities.values()) + decisions
                                       - activities["environment"].likely, abs=0.02)
    assert plan["custom_op_model"].marginal.likely == pytest.approx(
        new_days + sum(costs.get(op, Effort(0, 0, 0)).likely for op in plan["custom_op_model"].extended_ops)
        + own.likely)
    assert plan["resnet_like"].standalone.likely == pytest.approx(resnet.total.likely)  # alone: its report's total
    assert portfolio.shared_total.likely == pytest.approx(resnet.total.likely + plan["custom_op_model"].marginal.likely)
    assert portfolio.shared_total.likely < portfolio.standalone_total.likely
    # the headline is the simulated sum's P50 with its band; alone, the models' P50s are their reports' own
    p10, p50, p90 = portfolio.shared_band
    assert portfolio.shared_total.low <= p10 < p50 < p90 <= portfolio.shared_total.high
    assert portfolio.standalone_band[1] == pytest.approx(resnet.band[1] + custom.band[1], rel=0.05)
    assert p50 < portfolio.standalone_band[1]
    document = json.loads(render_portfolio(portfolio, "json"))
    assert document["person_days"]["shared_band"]["p50"] == round(p50, 2)
    assert document["person_days"]["headline"].startswith(f"{p50:.1f} person-days (P10-P90 {p10:.1f}-{p90:.1f})")
    page = render_portfolio(portfolio, "md")
    assert f"**{p50:.1f}**" in page and "Likely person-days" not in page
    # fused_bias_gelu is a composite to register (its reference runs only NPU ops), not a custom kernel
    assert document["custom_dev"] == []


def test_a_manifest_gives_each_model_its_own_settings(tmp_path):
    (tmp_path / "nets").mkdir()
    (tmp_path / "nets" / "a.py").write_text("def build_model(): ...\n")
    manifest = tmp_path / "portfolio.toml"
    manifest.write_text('[[model]]\ntarget = "nets/a.py"\nname = "half"\ndtype = "float16"\n'
                        'input_shape = ["1,3,8,8"]\nlabel = "a-half"\n\n'
                        '[[model]]\ntarget = "pkg.zoo:build_vit"\ninput_dtype = "int64"\n')
    models, skipped = expand_targets([str(manifest)])
    assert skipped == () and [m.name for m in models] == ["half", "build_vit"]
    half = models[0].scan_options(ScanOptions(target="", dtype="bfloat16"))
    assert (half.target, half.dtype, half.input_shapes, half.label) == (
        str(tmp_path / "nets" / "a.py"), "float16", ((1, 3, 8, 8),), "a-half")
    assert models[1].scan_options(ScanOptions(target="")).input_dtype == "int64"
    twice = manifest.read_text() + '\n[[model]]\ntarget = "nets/a.py"\nentry = "build_small"\n'
    manifest.write_text(twice)  # the same file twice (another entry, another dtype): refused, never one dropped
    with pytest.raises(ConfigError, match=r"portfolio.toml: \[\[model\]\] 3: .*a.py is listed already "
                                          r"\(.*portfolio.toml: \[\[model\]\] 1 \(half\)\)"):
        expand_targets([str(manifest)])
    manifest.write_text('[[model]]\ntarget = "nets/a.py"\ntrain = true\n')
    with pytest.raises(Exception, match=r"portfolio.toml.*train"):
        expand_targets([str(manifest)])


def test_a_manifest_portfolio_writes_portfolio_html_and_says_a_cause_once(tmp_path):
    from typer.testing import CliRunner

    from opassess.cli import app

    (tmp_path / "pf2").mkdir()
    (tmp_path / "pf2" / "x.py").write_text("def build_model():\n    raise ValueError('no weights here')\n")
    manifest = tmp_path / "models.toml"
    manifest.write_text(f'[[model]]\ntarget = "{ROOT / "examples" / "resnet_like.py"}"\ndtype = "float16"\n\n'
                        '[[model]]\ntarget = "pf2/x.py"\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["scan", str(manifest), "-o", str(out), "-q", "--jobs", "1", "--lang", "zh-CN"])
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("opassess: error:")]
    assert len(errors) == 1 and errors[0].count("x.py: ") == 1, errors  # not 'pf2/x.py: pf2/x.py: ...'
    assert json.loads((out / "resnet_like.json").read_text())["model"]["dtype"] == "float16"
    page = (out / "portfolio.html").read_text()
    assert '<html lang="zh-CN">' in page and "迁移顺序" in page and 'href="resnet_like.md"' in page
    assert "no weights here" in page


def test_the_porting_order_says_its_figures_are_sums_of_the_most_likely_values():
    """The page's headline is P50; the porting order's Alone / Marginal / Cumulative are sums of the most likely
    values (a marginal has no simulation of its own): said so, in both languages, so 'Alone 13.5' is not read as
    that model's P50 headline (here cnn alone: 13.5 likely)."""
    from opassess.ci.policy import Policy
    from opassess.portfolio import _assemble
    from opassess.portfolio.records import ModelResult

    results = [ModelResult(target=target, name=name, status="ok", cause=None, reports=(), seconds=1.0,
                           snapshot=snapshot) for name, target, snapshot in MODELS]
    portfolio = _assemble(results, (), Policy(), WEIGHTS, None)
    for fmt in ("md", "html"):
        page = render_portfolio(portfolio, fmt)
        order = page[page.index("Porting order"):]
        assert "sums of the most likely values, not P50" in order
        zh = render_portfolio(portfolio, fmt, language="zh-CN")
        assert "最可能值之和，不是 P50" in zh


def test_the_assessor_is_warmed_once_while_the_first_workers_start(tmp_path, model_file, monkeypatch):
    """What assessing takes (torch, the stages, the KB) is loaded once the first workers are started, before their
    captures are assessed: beside the forkserver's start rather than after it."""
    from opassess.portfolio import workers

    seen: list[str] = []
    warm, render = workers.warm_assessor, workers.render_outcome
    monkeypatch.setattr(workers, "warm_assessor", lambda opts: (seen.append("warm"), warm(opts))[1])
    monkeypatch.setattr(workers, "render_outcome", lambda *a, **k: (seen.append("assess"), render(*a, **k))[1])
    models = [model_file(TINY.format(out=n), f"m{n}.py") for n in (2, 3, 4)]
    portfolio = scan_portfolio(options(tmp_path, models))
    assert [r.status for r in portfolio.results] == ["ok"] * 3
    assert seen == ["warm", "assess", "assess", "assess"]
