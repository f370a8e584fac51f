"""classify/reach.py and trace/reach.py: what the example run did not reach, judged as operators."""
from __future__ import annotations

import json

from opassess.classify.reach import judge_reach
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.pipeline.capture import scan_inventory
from opassess.report import RenderContext, build_view, render_view

MODEL = '''
import torch
from torch.nn import functional as F


def rare(x):
    if x.sum() < 1e9:
        return x * 2
    return torch.logcumsumexp(x, 0)


class M(torch.nn.Module):
    def forward(self, x):
        y = rare(x)
        if y.shape[0] > 100:
            y = F.relu(y)
        return y + 1


def build_model():
    return M()


def example_inputs():
    return (torch.randn(4, 4),)
'''


def test_a_call_on_a_line_that_did_not_run_is_present_not_reached(kb, model_file):
    # rare() returns early on every real input: torch.logcumsumexp (no NPU kernel: its composite calls
    # _logcumsumexp) is present, not reached, named with the branch that skipped it; F.relu is inside an `if` the
    # run did not take: present, not reached, direct.
    path = model_file(MODEL)
    inventory = scan_inventory(ScanOptions(target=str(path), device="cpu"))
    functions = {f.name: f for f in inventory.capture.reach}
    assert set(functions) == {"rare", "M.forward"}  # torch's own functions are never recorded
    assert functions["rare"].missed == (9,) and functions["rare"].ran == (7, 8)
    reach = judge_reach(inventory, kb, target="A2", torch_version="2.13")
    assert reach is not None and (reach.functions, reach.lines, reach.ran) == (2, 7, 5)
    calls = {c.operator: c for c in reach.calls}
    assert set(calls) == {"torch.logcumsumexp", "torch.nn.functional.relu"}
    lcse = calls["torch.logcumsumexp"]
    assert (lcse.line, lcse.function, lcse.category, lcse.captured) == (9, "rare", "custom-dev", False)
    assert lcse.branch == "if x.sum() < 1000000000.0: return" and "_logcumsumexp" in lcse.reason
    relu = calls["torch.nn.functional.relu"]
    assert relu.branch == "if y.shape[0] > 100:" and relu.category == "direct"
    assert [c.operator.key for c in reach.uncaptured] == ["torch.logcumsumexp"]


def test_the_report_says_it_first_and_prices_it_apart(model_file):
    path = model_file(MODEL)
    assessment = assess(ScanOptions(target=str(path), device="cpu"))
    view = build_view(assessment)
    block = view.document["reach"]
    assert block["not_direct"] == ["torch.logcumsumexp"] and block["share"] == round(5 / 7, 4)
    assert block["person_days"]["likely"] > 0  # a custom-dev site, apart from the total
    total = view.document["summary"]["person_days"]["likely"]
    assert all(op["op"] != "torch.logcumsumexp" for op in view.document["operators"])
    for fmt in ("terminal", "md", "html"):
        text = render_view(view, fmt, RenderContext())
        assert "torch.logcumsumexp custom-dev at model.py:9" in " ".join(text.split()), fmt
    assert json.loads(render_view(view, "json", RenderContext()))["summary"]["person_days"]["likely"] == total


def test_only_fail_on_unreached_gates_what_the_run_did_not_reach(model_file):
    from typer.testing import CliRunner

    from opassess.cli import app

    path = model_file(MODEL)
    plain = CliRunner().invoke(app, ["scan", str(path), "--fail-on", "custom-dev", "-q", "-f", "json", "-o",
                                     str(path.with_suffix(".json"))])
    assert plain.exit_code == 0, plain.output  # present, not reached: not in the ordinary gates
    gated = CliRunner().invoke(app, ["scan", str(path), "--fail-on", "unreached", "-q", "-f", "json", "-o",
                                     str(path.with_suffix(".json"))])
    assert gated.exit_code == 3
    assert "torch.logcumsumexp: custom-dev, present but not reached by this run at model.py:9" in gated.output
