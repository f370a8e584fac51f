"""Ray executor: one Ray head (2 CPUs) for the module, started as a cluster's head is; a portfolio of a good model, a
crash, a hang past --timeout and a policy breach gives the local executor's reports and exit code, report for report
apart from timing fields; without Ray installed, asking for it is one line and exit 2."""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.portfolio import STATE_FILE
from tests.portfolio.test_portfolio_limits import WORKER_FACTS
from tests.support import ROOT

pytestmark = pytest.mark.slow  # a Ray head and real runs of the CLI: `make test-fast` leaves them out

runner = CliRunner()

GOOD = """
import torch
from torch import nn
from helpers import width  # beside the model file: its folder travels with it

def build_model():
    return nn.Sequential(nn.Linear(8, width()), nn.ReLU(), nn.Linear(width(), 4))

def example_inputs():
    return (torch.randn(2, 8),)
"""

CRASH = """
import os
def build_model():
    os.abort()
def example_inputs():
    return ()
"""

HANG = """
import time
def build_model():
    time.sleep(300)
def example_inputs():
    return ()
"""

GREEDY = """
def build_model():
    return bytearray(8 * 2**30)  # 8 GiB, over the 4 GiB address-space cap: MemoryError
"""

BREACH = """
import torch
from torch import nn

@torch.library.custom_op("opassess_raytest::twice", mutates_args=(), device_types="cpu")  # a CPU-only kernel
def twice(x: torch.Tensor) -> torch.Tensor:
    return torch.special.i0(x) * 2  # i0 has no NPU kernel: no composite route, a new kernel (custom-dev)

@twice.register_fake
def _(x):
    return torch.empty_like(x)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return twice(self.fc(x))  # custom-dev: breaches --fail-on custom-dev

def build_model():
    return Net()

def example_inputs():
    return (torch.randn(2, 8),)
"""


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head with 2 CPUs and no dashboard, in its own session (killed as a group at the end); its address."""
    pytest.importorskip("ray")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Ray >= 2.5x turns on token authentication for `ray start`; a test head on localhost does without.
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    head = subprocess.Popen([str(Path(sys.executable).parent / "ray"), "start", "--head", "--block", f"--port={port}",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
                             "--object-store-memory=100000000"],
                            env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        for line in head.stdout:
            if "Ray runtime started" in line:
                break
        else:
            pytest.fail(f"ray start exited with {head.wait()}")
        threading.Thread(target=head.stdout.read, daemon=True).start()  # a full pipe must not stall the head
        yield f"127.0.0.1:{port}"
    finally:
        os.killpg(head.pid, signal.SIGKILL)  # the head and every process it started, and nothing else
        head.wait()


def _zoo(root: Path) -> Path:
    """root/work/zoo: a good model (importing helpers.py beside it), a crash, a hang and one over its memory cap;
    root/elsewhere/breach.py: a model outside the working directory (root/work in the comparison), whose path
    reports write absolute."""
    zoo = root / "work" / "zoo"
    zoo.mkdir(parents=True)
    for name, source in (("good.py", GOOD), ("crash.py", CRASH), ("a_hang.py", HANG),
                         ("greedy.py", GREEDY)):
        (zoo / name).write_text(textwrap.dedent(source))
    (zoo / "helpers.py").write_text("def width():\n    return 16\n")
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "breach.py").write_text(textwrap.dedent(BREACH))
    return zoo


def _scrubbed(out: Path) -> dict[str, object]:
    """Every file of a portfolio's output directory, timing fields taken out."""
    files: dict[str, object] = {}
    for path in sorted(out.iterdir()):
        text = path.read_text()
        if path.suffix == ".json":
            files[path.name] = _without_seconds(json.loads(text))
        else:
            files[path.name] = re.sub(r"\b\d+(\.\d+)? s\b", "<t> s", text)
    return files


def _without_seconds(value):
    if isinstance(value, dict):
        # the resume state's sha256 digests are of reports that hold their timings
        return {k: _without_seconds(v) for k, v in value.items() if k not in ("seconds", "sha256")}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def test_a_portfolio_on_ray_reports_what_the_local_executor_reports(tmp_path, ray_head, monkeypatch):
    _zoo(tmp_path)
    monkeypatch.chdir(tmp_path / "work")  # zoo/ relative to it, ../elsewhere/breach.py absolute
    breach = str(tmp_path / "elsewhere" / "breach.py")
    common = ["zoo", breach, "--timeout", "30", "--memory-limit", "4", "--fail-on", "custom-dev", "-f", "md"]
    # The local run in a process of its own, at the same time: the two hangs wait out their timeouts together.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    local = subprocess.Popen([sys.executable, "-m", "opassess", "scan", *common, "-o", "local"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    remote = runner.invoke(app, ["scan", *common, "-o", "ray", "--executor", "ray", "--ray-address", ray_head])
    local_out, local_err = local.communicate(timeout=300)
    assert local.returncode == 1, local_err  # failures come before breaches
    assert remote.exit_code == local.returncode, remote.output
    assert remote.output.replace("ray/portfolio.md", "local/portfolio.md") == local_out + local_err
    assert "zoo/crash.py: worker crashed: SIGABRT (aborted)" in remote.output
    assert "zoo/a_hang.py: timed out after 30 s (worker killed)" in remote.output
    assert "zoo/greedy.py: out of memory under the memory cap of 4.0 GiB: " in remote.output
    # reports name a project file relative to its model's folder, never by the scanning machine's absolute path
    assert "opassess: policy: breach: opassess_raytest::twice: custom-dev, 1 call(s) at breach.py:" in remote.output
    expected = _scrubbed(tmp_path / "work" / "local")
    assert set(expected) == {"good.json", "good.md", "breach.json", "breach.md", "portfolio.json", "portfolio.md",
                             "portfolio.html",
                             "portfolio.state.json"}
    assert _scrubbed(tmp_path / "work" / "ray") == expected
    # paths read as on the driver (relative, never absolute), not as where the node unpacked the model folders
    assert json.loads((tmp_path / "work" / "ray" / "good.json").read_text())["model"]["source"] == "zoo/good.py"
    assert json.loads((tmp_path / "work" / "ray" / "breach.json").read_text())["model"]["source"] == "breach.py"
    assert "_ray_pkg_" not in (tmp_path / "work" / "ray" / "breach.md").read_text()


def test_asking_for_ray_without_it_installed_is_one_line_and_exit_2(tmp_path, monkeypatch):
    zoo = _zoo(tmp_path)
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    result = runner.invoke(app, ["scan", str(zoo), "--executor", "ray", "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output == "opassess: error: --executor ray needs Ray, which is not installed: pip install " \
                            "'opassess[ray]'\n"
    assert not (tmp_path / "out").exists()  # refused before anything ran


def test_ray_options_are_refused_where_they_do_not_apply(tmp_path):
    zoo = _zoo(tmp_path)
    address = runner.invoke(app, ["scan", str(zoo), "--ray-address", "auto", "-o", str(tmp_path / "out")])
    assert address.exit_code == 2 and "needs --executor ray" in address.output
    unknown = runner.invoke(app, ["scan", str(zoo), "--executor", "dask", "-o", str(tmp_path / "out")])
    assert unknown.exit_code == 2 and "expected local or ray" in unknown.output
    single = runner.invoke(app, ["scan", str(zoo / "good.py"), "--executor", "ray"])
    assert single.exit_code == 2 and "--executor" in single.output


def test_the_dashboard_line_is_written_when_ray_reports_a_dashboard(capsys):
    from opassess.cli.progress import portfolio_progress
    from opassess.portfolio import PortfolioEvent

    with portfolio_progress(quiet=False) as on_event:  # stderr is not a terminal here: no bar, the line still
        on_event(PortfolioEvent("dashboard", "http://10.0.0.1:8265", 0, 4))
        on_event(PortfolioEvent("start", "good", 0, 4))
    assert capsys.readouterr().err == "opassess: Ray dashboard at http://10.0.0.1:8265\n"
    with portfolio_progress(quiet=True) as on_event:
        assert on_event is None


def test_a_process_already_connected_to_ray_is_told_why_the_executor_will_not_reuse_it(tmp_path, monkeypatch):
    pytest.importorskip("ray")
    from opassess.errors import OpassessError
    from opassess.options import ScanOptions
    from opassess.portfolio import PortfolioOptions, expand_targets
    from opassess.portfolio.ray_executor import RayExecutor

    executor = RayExecutor()
    monkeypatch.setattr(executor.ray, "is_initialized", lambda: True)
    models, _ = expand_targets([str(_zoo(tmp_path))])
    options = PortfolioOptions(targets=(), scan=ScanOptions(target=""), out_dir=tmp_path / "out")
    with pytest.raises(OpassessError, match="already initialised in this process"):
        executor.run(models, options, lambda *_: None, lambda _: None, 0, len(models))


def test_each_node_scans_its_models_in_one_warm_scanner(tmp_path, ray_head, monkeypatch):
    """Four models on the one-node head (2 CPUs): one node scanner process, and one forkserver it started warm, scanned
    them all (two at a time), neither being this process; each model in a worker of its own, its report as usual."""
    from opassess.options import ScanOptions
    from opassess.portfolio import PortfolioOptions, expand_targets
    from opassess.portfolio.ray_executor import RayExecutor

    zoo = tmp_path / "zoo"
    zoo.mkdir()
    for width in (8, 16, 24):
        (zoo / f"mlp{width}.py").write_text(textwrap.dedent(GOOD).replace("width()", str(width)).replace(
            "from helpers import width  # beside the model file: its folder travels with it\n", ""))
    (zoo / "mlp32.py").write_text(WORKER_FACTS)  # its class is named after the worker it was built in
    monkeypatch.chdir(tmp_path)
    models, _ = expand_targets(["zoo"])
    options = PortfolioOptions(targets=(), scan=ScanOptions(target=""), out_dir=tmp_path / "out", timeout=120)
    reports: dict[str, object] = {}
    executor = RayExecutor(address=ray_head)
    executor.run(models, options, lambda model, result, texts: reports.setdefault(model.name, (result.status, texts)),
                 lambda _: None, 0, len(models))
    assert sorted(reports) == ["mlp16", "mlp24", "mlp32", "mlp8"]
    for name, (status, texts) in reports.items():
        assert status == "ok", texts
        document = json.loads(texts["json"])
        assert document["model"]["source"] == f"zoo/{name}.py" and document["summary"]["operator_types"] > 0
        if name == "mlp32":  # a warm, frozen forkserver, and Ray's worker script not run again in each worker
            assert document["model"]["class"] == "main_once_frozen_shapes"
    [(scanner, forkserver)] = set(executor.processes.values())  # the same two processes for every model
    assert len(executor.processes) == 4 and os.getpid() not in (scanner, forkserver)
    assert forkserver not in (0, scanner)


def test_ray_failing_to_start_is_one_line_naming_ray_and_the_local_executor(tmp_path, monkeypatch):
    """A Ray process killed during Ray's start-up (here: ray.init raising as it then does) is no internal error."""
    ray = pytest.importorskip("ray")

    def killed_during_start_up(*_args, **_kwargs):
        raise ConnectionError("the GCS server exited unexpectedly (killed by signal 9)")

    monkeypatch.setattr(ray, "init", killed_during_start_up)
    models = tmp_path / "models"
    models.mkdir()
    for name in ("a", "b"):
        (models / f"{name}.py").write_text("import torch\ndef build_model():\n    return torch.nn.Linear(2, 2)\n"
                                           "def example_inputs():\n    return (torch.randn(1, 2),)\n")
    result = CliRunner().invoke(app, ["scan", str(models), "-o", str(tmp_path / "out"), "--executor", "ray", "-q"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("opassess:")]
    assert lines == ["opassess: error: Ray failed to start (a local Ray instance): ConnectionError: the GCS server "
                     "exited unexpectedly (killed by signal 9); no model was scanned: run again, or scan with "
                     "--executor local (the default)"]
    assert [p.name for p in (tmp_path / "out").iterdir()] == [STATE_FILE]  # the (empty) resume state, no report
