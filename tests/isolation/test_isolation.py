"""Isolation: hostile model files (written into tmp_path) against single scans and portfolios.

Each case checks the documented exit code, one clear line, nothing left behind (no process of the run, no temporary
file) and that the report is written by the parent where -o said. Model files run in worker processes of their own
session, so the hostile ones here (os._exit, killpg, killing their parent) reach only their own worker and keeper.
The SIGTERM cases run the CLI as a real subprocess and look for survivors in /proc by an environment tag.
"""
from __future__ import annotations

import json
import os
import signal
import time
import uuid

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from tests.isolation.processes import GOOD, gone, gone_tagged, hostile, needs_proc, run_until, tagged

runner = CliRunner()

def scan(*args):
    # the models write their pids for the test to check: the sandbox (test_sandbox.py) would refuse that
    return runner.invoke(app, ["scan", *map(str, args), "--sandbox", "off"])


def lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("opassess:")]


def test_os_exit_0_in_forward_is_an_error_not_a_silent_success(model_file, tmp_path):
    path = model_file(hostile("os._exit(0)"))
    out = tmp_path / "r.json"
    result = scan(path, "-o", out, "-q")
    assert result.exit_code == 1, result.output
    assert lines(result) == [f"opassess: error: {path}: worker exited with status 0 without a result (the model "
                             "ended its process, e.g. os._exit)"]
    assert not out.exists()


def test_sys_exit_0_in_forward_is_an_error(model_file):
    result = scan(model_file(hostile("sys.exit(0)")), "-q")
    assert result.exit_code == 1 and len(lines(result)) == 1 and "Traceback" not in result.output
    assert "SystemExit" in lines(result)[0] or "sys.exit" in lines(result)[0]


def test_an_endless_forward_times_out_and_its_child_process_dies_with_it(model_file, tmp_path):
    pids = tmp_path / "pids"
    path = model_file(hostile(f'''
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
while True:
    pass'''))
    started = time.monotonic()
    # the deadline counts from the worker's start of the model, which includes tracing's first imports (seconds on a
    # loaded machine when this process has not traced before): 20 s leaves room for them
    result = scan(path, "--timeout", "20", "-q")
    assert result.exit_code == 1, result.output
    assert lines(result) == [f"opassess: error: {path}: timed out after 20 s (worker killed)"]
    assert time.monotonic() - started < 120
    assert gone([int(p) for p in pids.read_text().split()])  # the worker and the child it started


def test_a_thread_that_never_ends_does_not_keep_the_run_alive(model_file, tmp_path):
    pids = tmp_path / "pids"
    path = model_file(GOOD, "model.py")
    path.write_text(path.read_text() + f'''
def _forever():
    while True:
        time.sleep(0.1)
threading.Thread(target=_forever, daemon=False).start()
open({str(pids)!r}, "w").write(str(os.getpid()))
''')
    out = tmp_path / "r.json"
    started = time.monotonic()
    result = scan(path, "-o", out, "-q")
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["operators"][0]["op"] == "torch.nn.Linear"
    assert time.monotonic() - started < 60 and gone([int(pids.read_text())])


def test_chdir_at_import_does_not_move_a_relative_output(model_file, tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = model_file(hostile("pass", at_import=f"os.chdir({str(elsewhere)!r})\n"))
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["scan", str(path), "-o", "report.json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "report.json").is_file() and not (elsewhere / "report.json").exists()
    assert "opassess: wrote json report to report.json" in result.output


def test_a_subprocess_writing_to_fd_1_leaves_the_json_on_stdout_valid(model_file):
    path = model_file(hostile('''
subprocess.run(["echo", "from a subprocess"], check=True)
os.write(1, b"raw to fd 1\\n")
print("printed")'''))
    result = scan(path, "-f", "json", "-q")
    assert result.exit_code == 0, result.output
    assert [op["op"] for op in json.loads(result.stdout)["operators"]] == ["torch.nn.Linear"]
    for text in ("from a subprocess", "raw to fd 1", "printed"):
        assert text in result.stderr and text not in result.stdout


def test_a_model_that_kills_its_parent_kills_only_its_keeper(model_file):
    result = scan(model_file(hostile("os.kill(os.getppid(), 9)\ntime.sleep(5)")), "-q")
    assert result.exit_code == 1 and len(lines(result)) == 1
    assert lines(result)[0].endswith("the worker's keeper process was killed by SIGKILL before the worker ended: the "
                                     "model killed its parent process")


def test_a_model_that_kills_its_process_group_kills_only_its_worker(model_file):
    result = scan(model_file(hostile("os.killpg(os.getpgid(0), 9)")), "-q")
    assert result.exit_code == 1, result.output
    assert len(lines(result)) == 1 and "worker crashed: SIGKILL" in lines(result)[0]


def test_in_a_portfolio_killing_the_parent_or_the_group_spares_the_good_model(model_file, tmp_path):
    model_file(GOOD, "good.py")
    model_file(hostile("os.kill(os.getppid(), 9)\ntime.sleep(30)"), "parent_killer.py")
    model_file(hostile("os.killpg(0, 9)"), "group_killer.py")
    out = tmp_path / "reports"
    result = runner.invoke(app, ["scan", str(tmp_path), "-o", str(out), "--jobs", "3", "--timeout", "60",
                                 "--sandbox", "off"])  # (the models write their pids)
    assert result.exit_code == 1, result.output
    assert (out / "good.json").is_file() and (out / "portfolio.md").is_file()
    summary = [line for line in lines(result) if " models, " in line]
    assert summary and summary[0].startswith("opassess: 3 models, 1 scanned, 2 failed")
    errors = "\n".join(line for line in lines(result) if line.startswith("opassess: error:"))
    assert "parent_killer.py: the worker's keeper process was killed by SIGKILL" in errors
    assert "group_killer.py: worker crashed: SIGKILL" in errors


def test_sigterm_while_the_report_is_written_leaves_no_temporary_file(tmp_path, monkeypatch):
    from opassess.isolation import Terminated, terminating_on_signals
    from opassess.output import write_output

    real_fsync = os.fsync

    def fsync_then_sigterm(fd):
        real_fsync(fd)
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "fsync", fsync_then_sigterm)
    target = tmp_path / "r.json"
    with pytest.raises(Terminated) as caught, terminating_on_signals():
        write_output("{}", target)
        time.sleep(5)  # the handler runs at the next bytecode; never reached
    assert caught.value.exit_code == 143
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# ---- real subprocesses: a signal to the whole run, then no process of it may survive ----

SPINNER = '''
open({marker!r}, "w").write(str(os.getpid()))
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
while True:
    pass'''


@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_a_single_scan_kills_its_worker_group_and_exits_128_plus_n(model_file, tmp_path, signum):
    marker, tag = tmp_path / "running", uuid.uuid4().hex
    path = model_file(hostile(SPINNER.format(marker=str(marker))))
    process = run_until([str(path), "-o", str(tmp_path / "r.json"), "-q"], [marker], tag)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + signum
    assert stderr.strip().splitlines()[-1] == f"opassess: terminated by {signal.Signals(signum).name}"
    assert gone([int(marker.read_text())]) and gone_tagged(tag)
    assert not any(p.name.endswith(".tmp") or p.name == "r.json" for p in tmp_path.iterdir())


@needs_proc
def test_sigterm_to_a_portfolio_leaves_no_worker_forkserver_or_tracker(model_file, tmp_path):
    tag = tmp_path.name + uuid.uuid4().hex
    models = tmp_path / "models"
    models.mkdir()
    markers = [tmp_path / f"running{i}" for i in range(2)]
    for i, marker in enumerate(markers):
        (models / f"spin{i}.py").write_text(hostile(SPINNER.format(marker=str(marker))))
    out = tmp_path / "reports"
    process = run_until([str(models), "-o", str(out), "--jobs", "2", "-q"], markers, tag)
    assert len(tagged(tag)) >= 6  # the run, the forkserver, the tracker, keepers, workers and their children
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 143, stderr
    assert stderr.strip().splitlines()[-1] == "opassess: terminated by SIGTERM"
    assert gone([int(m.read_text()) for m in markers]) and gone_tagged(tag)
    assert not any(p.name.endswith(".tmp") for p in out.iterdir())


CPU_CONV_MODEL = """
import torch, torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 32, 3, padding=1)

    def forward(self, x):
        if x.sum() > -1e30:  # reads a value: the scan retries on the CPU, where the conv really runs
            return self.conv(x)
        return x

def build_model():
    return Net()

def example_inputs():
    return (torch.randn(1, 32, 64, 64),)
"""


def test_a_parent_that_ran_parallel_cpu_kernels_does_not_hang_the_worker(model_file):
    """GNU OpenMP is not fork-safe: the worker must not wait forever for the parent's pool threads."""
    import torch

    if torch.get_num_threads() < 2:
        pytest.skip("one intra-op thread: the parent has no OpenMP pool to leave behind")
    torch.nn.Conv2d(32, 32, 3)(torch.randn(1, 32, 64, 64))  # this process now has an OpenMP pool
    started = time.monotonic()
    result = scan(model_file(CPU_CONV_MODEL), "-q", "--timeout", "60", "-f", "json")
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 60
    assert json.loads(result.stdout)["model"]["capture"]["device"] == "cpu"
