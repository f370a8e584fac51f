"""Resume state (issue 21, item 4): a report edited between runs is scanned again, and so is every model when the
run's gates change; an untouched report under the same gates is reused."""
from __future__ import annotations

import json
from dataclasses import replace

from opassess.ci.policy import Policy
from opassess.options import ScanOptions
from opassess.portfolio import STATE_FILE, PortfolioOptions, scan_portfolio
from opassess.portfolio.state import fingerprint

TINY = """
import torch
from torch import nn

def build_model():
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU())

def example_inputs():
    return (torch.randn(2, 4),)
"""


def _run(tmp_path, **kw):
    model = tmp_path / "tiny.py"
    model.write_text(TINY)
    return PortfolioOptions(targets=(str(model),), scan=ScanOptions(target=""), out_dir=tmp_path / "out", jobs=1,
                            timeout=120.0, **kw)


def _kinds(run):
    events = []
    scan_portfolio(run, events.append)
    return [e.kind for e in events]


def test_an_edited_report_is_rescanned_and_an_untouched_one_reused(tmp_path):
    run = _run(tmp_path)
    scan_portfolio(run, lambda event: None)
    state = json.loads((tmp_path / "out" / STATE_FILE).read_text())["models"]
    (entry,) = state.values()
    assert set(entry["sha256"]) == set(entry["reports"]) and all(len(d) == 64 for d in entry["sha256"].values())
    assert _kinds(replace(run, resume=True)) == ["resumed"]
    report = tmp_path / "out" / "tiny.json"
    report.write_text(report.read_text().replace('"person_days"', '"person_days" ', 1))
    assert _kinds(replace(run, resume=True)) == ["start", "done"]
    assert _kinds(replace(run, resume=True)) == ["resumed"]  # the rescan recorded the new report's digest


def test_the_gates_are_part_of_the_fingerprint(tmp_path):
    run = _run(tmp_path)
    target = run.targets[0]
    gated = replace(run, policy=Policy(fail_on=("custom-dev",)))
    assert fingerprint(run, target) != fingerprint(gated, target)
    assert fingerprint(gated, target) == fingerprint(replace(run, policy=Policy(fail_on=("custom-dev",))), target)
