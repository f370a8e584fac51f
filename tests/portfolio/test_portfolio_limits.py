"""--memory-limit and --jobs are the user's to get right (issue 21, item 6): a cap setrlimit cannot take, or a default
cap that --jobs would divide below the floor, is a usage error (exit 2, one line) before any model runs."""
from __future__ import annotations

import threading

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.errors import UsageError
from opassess.pipeline import ScanOptions
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
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name in installed else real(name, *a))
    files = [str(tmp_path / f"{n}.py") for n in ("vision", "lm", "plain", "broken")]
    assert workers.preload_for(files) == (*PRELOAD, "torchvision", "transformers")
    assert workers.preload_for([str(tmp_path / "plain.py"), "pkg.module:factory"]) == PRELOAD
