"""--memory-limit and --jobs are the user's to get right (issue 21, item 6): a cap setrlimit cannot take, or a default
cap that --jobs would divide below the floor, is a usage error (exit 2, one line) before any model runs."""
from __future__ import annotations

import json
import threading

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.errors import UsageError
from opassess.options import ScanOptions
from opassess.portfolio import PortfolioOptions, records

runner = CliRunner()


def _options(tmp_path, **kw):
    return PortfolioOptions(targets=("a.py",), scan=ScanOptions(target=""), out_dir=tmp_path, **kw)


def test_jobs_beyond_the_cores_do_not_shrink_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "physical_memory", lambda: 16 * 2**30)
    monkeypatch.setattr(records, "default_jobs", lambda: 2)
    assert _options(tmp_path, jobs=100_000).memory_cap() == 8 * 2**30
    assert _options(tmp_path, jobs=100_000).memory_cap(models=1) == 16 * 2**30


def test_a_default_cap_below_the_floor_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "physical_memory", lambda: 3 * 2**30)
    monkeypatch.setattr(records, "default_jobs", lambda: 8)
    with pytest.raises(UsageError, match="below the 1 GiB a scan needs: pass fewer --jobs or an explicit"):
        _options(tmp_path, jobs=8)
    assert _options(tmp_path, jobs=8, memory_limit=0).memory_cap() == 0  # an explicit choice is kept


@pytest.mark.parametrize("value", ["1e30", "inf"])
def test_a_memory_limit_setrlimit_cannot_take_is_exit_2_in_one_line(tmp_path, value):
    (tmp_path / "a.py").write_text("def build_model():\n    pass\n")
    (tmp_path / "b.py").write_text("def build_model():\n    pass\n")
    result = runner.invoke(app, ["scan", str(tmp_path / "a.py"), str(tmp_path / "b.py"), "-o", str(tmp_path / "out"),
                                 "--memory-limit", value])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "--memory-limit" in lines[0] and "Traceback" not in result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_local_workers_and_ray_tasks_cap_memory_by_one_rule(tmp_path, monkeypatch):
    """The local executor and a Ray task on its node both divide by min(--jobs, the models, the cores)."""
    from opassess.isolation import Outcome
    from opassess.portfolio import ray_executor, workers

    monkeypatch.setattr(records, "physical_memory", lambda: 16 * 2**30)
    monkeypatch.setattr(records, "default_jobs", lambda: 4)
    options = _options(tmp_path, jobs=4)
    assert workers.worker_setup(options, 1).memory_cap == 16 * 2**30
    assert workers.worker_setup(options, 2).memory_cap == 8 * 2**30
    assert workers.worker_setup(options, 40).memory_cap == 4 * 2**30
    seen = []
    monkeypatch.setattr(ray_executor, "capture_in_worker", lambda _opts, setup, _timeout, _context, _lock:
                        seen.append(setup.memory_cap) or Outcome("failed", "x", 0.0))
    monkeypatch.chdir(tmp_path)
    scanner = object.__new__(ray_executor.NodeScanner)  # the node's actor, without its warm forkserver
    scanner.context, scanner.starting = None, threading.Lock()
    for models in (1, 2):
        scanner.scan(options, str(tmp_path / "a.py"), str(tmp_path), models)
    assert seen == [16 * 2**30, 8 * 2**30]


def test_the_forkserver_preloads_the_heavy_libraries_the_model_files_import(tmp_path, monkeypatch):
    """Found statically (the files' import statements, nothing run), and only when installed."""
    import importlib.util

    from opassess.isolation.worker import PRELOAD
    from opassess.portfolio import workers

    (tmp_path / "vision.py").write_text("import torch\nfrom torchvision.models import resnet18\n")
    (tmp_path / "lm.py").write_text("def build_model():\n    import transformers.models.llama as l\n")
    (tmp_path / "plain.py").write_text("import torch\nimport timmy\n")
    (tmp_path / "broken.py").write_text("import timm\nthis is not python\n")
    installed = {"torchvision", "transformers"}  # as if timm were not installed
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # timm is in the integration extra now: hidden here
                        lambda name, *a: object() if name in installed else None if name == "timm" else real(name, *a))
    files = [str(tmp_path / f"{n}.py") for n in ("vision", "lm", "plain", "broken")]
    extra, frozen = workers.FORKSERVER_EXTRA, workers.FROZEN
    assert workers.preload_for(files) == (*PRELOAD, *extra, "torchvision", "transformers", frozen)
    assert workers.preload_for([str(tmp_path / "plain.py"), "pkg.module:factory"]) == (*PRELOAD, *extra, frozen)


# A model whose class is named after the worker it is built in: whether the worker ran its parent's main script again
# (as __mp_main__), whether what the forkserver imported is frozen, whether torch's symbolic-shape helpers came
# preloaded (nothing of the model's own imports them before build_model runs).
WORKER_FACTS = """
import gc, sys
import torch
from torch import nn


def build_model():
    again = getattr(sys.modules.get("__mp_main__"), "__file__", None)  # a main script run again in this worker
    facts = ("main_again" if again else "main_once",
             "frozen" if gc.get_freeze_count() else "unfrozen",
             "shapes" if "torch.fx.experimental.symbolic_shapes" in sys.modules else "no_shapes")
    return type("_".join(facts), (nn.Sequential,), {})(nn.Linear(4, 4))


def example_inputs():
    return (torch.randn(2, 4),)
"""


def test_a_portfolio_worker_starts_warm_frozen_and_without_the_parent_s_main(tmp_path):
    """Each worker forks from a forkserver that preloaded torch's symbolic-shape helpers and froze its heap (a small
    model's worker: 0.3 s -> 0.06 s), and does not run the parent's main script again."""
    import subprocess
    import sys

    from tests.support import ROOT

    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for name in ("a", "b"):
        (zoo / f"{name}.py").write_text(WORKER_FACTS)
    done = subprocess.run([sys.executable, "-m", "opassess", "scan", str(zoo), "-o", str(tmp_path / "out"), "-q"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for name in ("a", "b"):
        document = json.loads((tmp_path / "out" / f"{name}.json").read_text())
        assert document["model"]["class"] == "main_once_frozen_shapes"
