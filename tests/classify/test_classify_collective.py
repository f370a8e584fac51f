"""Collectives a model calls in its step (classify/collective.py): with --train, `dist.all_reduce` on a float64 tensor
is param-converted before the Ascend 950 generation and direct on it, judged against hccl_distributed_support.tsv
instead of c10d's kernel-less ATen op; the source site at the same line is that operator (costed once)."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opassess.cli import app

runner = CliRunner()
MODEL = '''\
import torch
import torch.distributed as dist
from torch import nn

STORE = __import__("tempfile").mkdtemp(prefix="opassess-store-") + "/store"  # the worker's own temp folder


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        total = y.double().sum()
        dist.all_reduce(total)
        ones = torch.ones(2)
        dist.all_reduce(ones)
        return y + total.float() + ones.sum()


def build_model():
    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method="file://" + STORE, rank=0, world_size=1)
    return Net()


def example_inputs():
    return (torch.randn(2, 4),)
'''


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "ddp_step.py"
    path.write_text(MODEL)
    return path


def _scan(model, target):
    result = runner.invoke(app, ["scan", str(model), "--device", "cpu", "--train", "--target", target, "-f", "json",
                                 "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_float64_all_reduce_in_the_step_is_judged_by_the_hccl_facts(model):
    a2 = _scan(model, "Atlas A2")
    op = next(o for o in a2["operators"] if o["op"].endswith(".all_reduce"))
    by_dtype = {s["input_dtypes"][0]: s["category"] for s in op["signatures"]}
    assert by_dtype == {"float64": "param-converted", "float32": "direct"}
    assert op["category"] == "param-converted" and op["known"]
    cited = {r["evidence"].split()[0] for r in op["reasons"]}
    assert cited == {"hccl_distributed_support.tsv:8", "hccl_distributed_support.tsv:13"}
    assert all(r["code"] == "hccl" for r in op["reasons"])
    # the source scan saw the float64 collective at line 16: the same call, carried by the operator
    site = next(s for s in a2["source_findings"] if s["kind"] == "collective")
    assert site["line"] == 16 and site["covered_by"] == op["op"] and site["person_days"]["likely"] == 0.0

    on_950 = next(o for o in _scan(model, "950")["operators"] if o["op"].endswith(".all_reduce"))
    assert on_950["category"] == "direct"


FUNCTIONAL = '''\
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from torch import nn

STORE = __import__("tempfile").mkdtemp(prefix="opassess-store-") + "/store"  # the worker's own temp folder


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return funcol.all_reduce(self.fc(x).double(), "sum", dist.group.WORLD).float()


def build_model():
    if not dist.is_initialized():
        dist.init_process_group("gloo", init_method="file://" + STORE, rank=0, world_size=1)
    return Net()


def example_inputs():
    return (torch.randn(2, 4),)
'''


def test_functional_collectives_are_judged_as_their_collective(tmp_path):
    path = tmp_path / "funcol_model.py"
    path.write_text(FUNCTIONAL)
    result = runner.invoke(app, ["scan", str(path), "--device", "cpu", "-f", "json", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    ops = {o["op"]: o for o in json.loads(result.stdout)["operators"]}
    reduce = ops["_c10d_functional::all_reduce"]
    assert reduce["category"] == "param-converted"  # float64 before the 950 generation
    assert reduce["reasons"][0]["evidence"].startswith("hccl_distributed_support.tsv:8")
    plumbing = [o for key, o in ops.items() if key.startswith("_c10d_functional::") and key != reduce["op"]]
    assert plumbing and all(o["category"] == "direct" for o in plumbing)  # waits and autograd wrappers
