"""Assessments for the report tests: real ones from assess(), and hand-built ones over a real inventory.

The hand-built assessment keeps the reporters' tests independent of the classifier and the scoring weights:
its categories, scores, person-days and risk cells are chosen here, so the expected numbers in the tests
are worked out from this file alone.
"""
from __future__ import annotations

import difflib
import functools
import os
from dataclasses import replace
from pathlib import Path

import pytest

from opassess.assessment import Assessment
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.pipeline.capture import scan_inventory
from opassess.records import (
    CaptureAttempt,
    ClassifiedOp,
    Effort,
    Finding,
    Inventory,
    OpScore,
    Reason,
    Risk,
    SubScore,
)
from opassess.score.records import Estimate, OpEstimate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
GOLDEN = ROOT / "tests" / "golden"
ARTIFACTS = ROOT / "test-artifacts"
UPDATE_GOLDEN = os.environ.get("UPDATE_GOLDEN") == "1"

# Hand-chosen facts per operator key for the synthetic assessment; anything else is "direct".
CATEGORY = {"torch.nn.BatchNorm2d": "param-converted", "torch.nn.MaxPool2d": "param-converted",
            "torch.nn.AdaptiveAvgPool2d": "custom-dev"}
EFFORT = {"direct": Effort(1.0, 1.5, 2.0), "param-converted": Effort(3.0, 4.0, 5.0),
          "custom-dev": Effort(10.0, 12.0, 16.0)}
RISK = {"direct": (1, 2), "param-converted": (3, 3), "custom-dev": (5, 4)}  # (likelihood, impact)


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.py"))


def _relative(target: Path) -> str:
    """Scan by a path relative to the repo root, so reports name 'examples/x.py' whatever the checkout path."""
    try:
        return str(target.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(target)


@functools.cache
def real_assessment(name: str) -> Assessment:
    """assess() on examples/<name>.py, run from the repo root (cached: tracing a model takes seconds)."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return assess(ScanOptions(target=f"examples/{name}.py"))
    finally:
        os.chdir(cwd)


@functools.cache
def model_assessment(name: str) -> Assessment:
    """assess() on tests/models/<name>.py, run from the repo root (cached)."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return assess(ScanOptions(target=f"tests/models/{name}.py"))
    finally:
        os.chdir(cwd)


def synthetic_assessment(inventory: Inventory) -> Assessment:
    """An Assessment over a real inventory with categories, scores, efforts and risks taken from the tables above."""
    classified, estimates = [], []
    for operator in inventory.operators:
        category = CATEGORY.get(operator.key, "direct")
        known = category != "custom-dev"
        reason = (Reason("kernel", f"{operator.key} has an NPU kernel", "npu_aten_ops: test") if known
                  else Reason("not-in-kb", "the knowledge base has no fact about it", "test"))
        op = ClassifiedOp(operator=operator, category=category,
                          signature_categories=tuple(category for _ in operator.signatures), reasons=(reason,),
                          replacement="torch_npu.npu_test" if category == "param-converted" else None,
                          cann_op="TestOp" if known else None, known=known,
                          aten_support={a: known for a in operator.aten})
        classified.append(op)
        composite = {"direct": 0.1, "param-converted": 0.5, "custom-dev": 0.9}[category]
        score = OpScore(classified=op, functional=composite, performance=composite, ecosystem=composite,
                        composite=composite,
                        subscores=(SubScore("functional", "dtype_support", composite, 1.0, "input dtype float32"),))
        likelihood, impact = RISK[category]
        estimates.append(OpEstimate(score=score, person_days=EFFORT[category],
                                    risk=Risk(likelihood, impact, max(likelihood, impact), ("test",)), pareto=False))
    estimates.sort(key=lambda e: -e.person_days.likely)  # stable: ties keep inventory order
    total = sum(e.person_days for e in estimates)
    # Pareto: the largest operators until 80% of the likely total is reached.
    pareto, running = [], 0.0
    for e in estimates:
        if running >= 0.8 * total.likely:
            break
        pareto.append(e.score.classified.operator.key)
        running += e.person_days.likely
    estimates = [replace(e, pareto=e.score.classified.operator.key in pareto) for e in estimates]
    matrix = [[[] for _ in range(5)] for _ in range(5)]
    for e in estimates:
        matrix[e.risk.likelihood - 1][e.risk.impact - 1].append(e.score.classified.operator.key)
    by_module: dict[str, Effort] = {"": total}
    for e in estimates:
        share = 1 / len(e.score.classified.operator.modules)
        part = Effort(e.person_days.low * share, e.person_days.likely * share, e.person_days.high * share)
        for module in e.score.classified.operator.modules:
            parts = module.split(".") if module else []
            for depth in range(1, len(parts) + 1):
                ancestor = ".".join(parts[:depth])
                by_module[ancestor] = by_module.get(ancestor, Effort(0.0, 0.0, 0.0)) + part
    by_category = {c: sum((e.person_days for e in estimates if e.score.classified.category == c), Effort(0.0, 0.0, 0.0))
                   for c in EFFORT}
    estimate = Estimate(ops=tuple(estimates), total=total, p50=total.likely, p90=total.high * 0.9,
                        p10=total.low * 1.1, by_origin={"project": total},
                        method="test: p10 = 1.1 x low, p50 = likely, p90 = 0.9 x high", pareto_ops=tuple(pareto),
                        pareto_share_of_types=len(pareto) / len(estimates), by_category=by_category,
                        by_module=by_module,
                        risk_matrix=tuple(tuple(tuple(cell) for cell in row) for row in matrix))
    first = inventory.operators[0]
    finding = Finding(kind="fusion", title=f"{first.key} followed by an activation", nodes=(first.nodes[0].name,),
                      ops=(first.key,), source=first.sources[0] if first.sources else None,
                      npu_api="torch_npu.npu_fused_test", effect="performance +0.1")
    return Assessment(tool_version="0.0.test", model=inventory.model, capture=inventory.capture, inventory=inventory,
                      target="Atlas A2", torch_version="2.1.0", kb_version="test-kb", classified=tuple(classified),
                      estimate=estimate, findings=(finding,), weights_source="/abs/weights.toml",
                      seconds={"load": 0.5, "trace": 1.25})


@functools.cache
def synthetic_example(name: str) -> Assessment:
    """synthetic_assessment over the real inventory of examples/<name>.py."""
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        return synthetic_assessment(scan_inventory(ScanOptions(target=f"examples/{name}.py")))
    finally:
        os.chdir(cwd)


def empty_assessment() -> Assessment:
    """The hand-built ResNet-18 assessment with every operator taken away (a model that is nn.Identity())."""
    assessment = synthetic_example("resnet_like")
    empty = Estimate(ops=(), total=Effort(0.0, 0.0, 0.0), p50=0.0, p90=0.0, method="none", pareto_ops=(),
                     pareto_share_of_types=0.0, by_category={}, by_module={},
                     risk_matrix=tuple(tuple(() for _ in range(5)) for _ in range(5)))
    return replace(assessment, inventory=replace(assessment.inventory, operators=()), classified=(), estimate=empty,
                   findings=())


def scrubbed(assessment: Assessment) -> Assessment:
    """The assessment with its volatile fields (versions, timings, absolute paths) fixed, for golden files."""
    capture = replace(assessment.capture,
                      attempts=tuple(replace(a, seconds=0.0) for a in assessment.capture.attempts))
    inventory = replace(assessment.inventory, capture=capture)
    return replace(assessment, tool_version="VERSION", kb_version="KB-VERSION", capture=capture, inventory=inventory,
                   weights_source="weights.toml", seconds={}, torch_running=None)


# A model whose class and module names are markup: a report that runs them is an injection hole.
HOSTILE_MODEL = """
import torch
from torch import nn

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.proj(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module(IMG, Block())
        self.add_module(SCRIPT, nn.Linear(8, 4))

    def forward(self, x):
        return getattr(self, SCRIPT)(getattr(self, IMG)(x))


Model.__name__ = Model.__qualname__ = SCRIPT


def build_model():
    return Model()


def example_inputs():
    return (torch.randn(2, 8),)
"""


def hostile_assessment(directory: Path) -> Assessment:
    """assess() on HOSTILE_MODEL written to `directory` under a file name that is markup too."""
    path = directory / "evil<b>model.py"
    path.write_text(HOSTILE_MODEL)
    return assess(ScanOptions(target=str(path)))


GOLDEN_TORCH = ("2.13", "2.14")


def check_golden(name: str, text: str) -> None:
    """Compare text with tests/golden/<name>; UPDATE_GOLDEN=1 rewrites the file instead."""
    path = GOLDEN / name
    import torch

    if not torch.__version__.startswith(GOLDEN_TORCH):  # the goldens are recorded on the torch lines CI tests first
        pytest.skip(f"golden reports are checked on torch {' and '.join(GOLDEN_TORCH)}: torch {torch.__version__} "
                    "dispatches some modules' ATen ops in another order (nn.Linear: _unsafe_view before mm)")
    if UPDATE_GOLDEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    if not path.exists():
        raise AssertionError(f"{path} is missing; create it with "
                             "UPDATE_GOLDEN=1 python -m pytest tests/report/")
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(list(difflib.unified_diff(expected.splitlines(True), text.splitlines(True), str(path),
                                                 "rendered"))[:80])
        raise AssertionError(f"rendered report differs from {path} (if the change is intended, regenerate with "
                             f"UPDATE_GOLDEN=1 python -m pytest tests/report/):\n{diff}")


__all__ = ["check_golden", "hostile_assessment", "ARTIFACTS", "CaptureAttempt", "EXAMPLES", "GOLDEN", "UPDATE_GOLDEN",
           "example_files", "real_assessment", "scrubbed", "synthetic_assessment", "synthetic_example"]
