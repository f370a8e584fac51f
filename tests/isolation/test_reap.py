"""Nothing outlives a run (isolation/reap.py): SIGKILL of the `opassess` process mid-scan, SIGHUP and SIGTERM at any
moment (the forkserver still starting included), children that move to a process group of their own.

The end-to-end cases run the CLI as a real subprocess whose every process carries an environment tag, and look for
survivors in /proc: the forkserver, the resource tracker, keepers, workers and the model's children.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from opassess.isolation.reap import kill_tree, session_groups, wait_worker
from tests.isolation.processes import gone, gone_tagged, hostile, needs_proc, run_until, tagged
from tests.support import ROOT

pytestmark = pytest.mark.slow  # real runs of the CLI (the two unit tests at the end run fast all the same)

# A forward that records its pid, starts a child in its own group and one that moves itself to a new process group
# (setpgid: still in the worker's session), then spins.
CHILDREN = '''
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgid(0, 0); time.sleep(600)"])
open({marker!r}, "w").write(str(os.getpid()))
while True:
    pass'''


def _portfolio(tmp_path, count: int = 2):
    models = tmp_path / "models"
    models.mkdir()
    markers = [tmp_path / f"running{i}" for i in range(count)]
    for i, marker in enumerate(markers):
        (models / f"spin{i}.py").write_text(hostile(CHILDREN.format(marker=str(marker))))
    return [str(models), "-o", str(tmp_path / "reports"), "--jobs", str(count), "-q"], markers


@needs_proc
def test_sigkill_of_the_parent_mid_portfolio_leaves_no_process(tmp_path):
    args, markers = _portfolio(tmp_path)
    tag = uuid.uuid4().hex
    process = run_until(args, markers, tag)
    time.sleep(0.5)  # the children the models start
    # the run, forkserver, tracker, two keepers, two workers and their four children
    assert len(tagged(tag)) >= 11, tagged(tag)
    process.kill()
    process.communicate(timeout=60)
    assert process.returncode == -signal.SIGKILL
    assert gone_tagged(tag, 20.0), [open(f"/proc/{p}/cmdline").read()[:120] for p in tagged(tag)]


@needs_proc
def test_sigkill_of_the_parent_of_a_single_scan_leaves_no_process(tmp_path):
    marker, tag = tmp_path / "running", uuid.uuid4().hex
    model = tmp_path / "spin.py"
    model.write_text(hostile(CHILDREN.format(marker=str(marker))))
    process = run_until([str(model), "-q"], [marker], tag)
    time.sleep(0.5)
    assert len(tagged(tag)) >= 5  # the run, keeper, worker, two children
    process.kill()
    process.communicate(timeout=60)
    assert gone_tagged(tag, 20.0)


def _start(args: list[str], tag: str) -> subprocess.Popen:
    env = dict(os.environ, OPASSESS_TEST_TAG=tag, PYTHONPATH=str(ROOT))
    # the models write their pids for the test to check: the sandbox (test_sandbox.py) would refuse that
    return subprocess.Popen([sys.executable, "-m", "opassess", "scan", *args, "--sandbox", "off"], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_a_signal_while_the_forkserver_starts_ends_the_portfolio_at_once(tmp_path, signum):
    """The forkserver is still importing torch and the first keepers are being started: the run must neither hang
    (it once waited for a forkserver held open by a keeper) nor leave a process."""
    args, _ = _portfolio(tmp_path)
    tag = uuid.uuid4().hex
    process = _start(args, tag)
    end = time.monotonic() + 120
    while len(tagged(tag)) < 3:  # the run, the resource tracker and the forkserver
        assert process.poll() is None and time.monotonic() < end, process.communicate()
        time.sleep(0.02)
    sent = time.monotonic()
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert time.monotonic() - sent < 15, "the run took too long to stop"
    assert process.returncode == 128 + signum, stderr
    assert stderr.strip().splitlines()[-1] == f"opassess: terminated by {signal.Signals(signum).name}"
    assert gone_tagged(tag, 10.0)


@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM])
def test_sighup_ends_a_running_portfolio_as_sigterm_does(tmp_path, signum):
    args, markers = _portfolio(tmp_path)
    tag = uuid.uuid4().hex
    process = run_until(args, markers, tag)
    sent = time.monotonic()
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=60)
    assert time.monotonic() - sent < 15
    assert process.returncode == 128 + signum, stderr
    assert gone_tagged(tag, 10.0)
    assert not any(p.name.endswith(".tmp") for p in (tmp_path / "reports").iterdir())


def test_a_child_in_a_process_group_of_its_own_dies_with_the_scan(model_file, tmp_path):
    """A model's child that moved itself out of the worker's process group (setpgid) is still in its session."""
    pids = tmp_path / "pids"
    path = model_file(hostile(f'''
child = subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgid(0, 0); time.sleep(600)"])
while os.getpgid(child.pid) == os.getpgid(0):
    time.sleep(0.01)
open({str(pids)!r}, "w").write(str(child.pid))'''))
    done = subprocess.run([sys.executable, "-m", "opassess", "scan", str(path), "-q", "-f", "json", "--sandbox", "off"],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    assert gone([int(pids.read_text())])


# ---- the pieces, without torch ----

LEADER = '''
import os, subprocess, sys, time
group = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
moved = subprocess.Popen([sys.executable, "-c", "import os, time; os.setpgid(0, 0); time.sleep(600)"])
while os.getpgid(moved.pid) == os.getpgid(0):
    time.sleep(0.01)
print(group.pid, moved.pid, flush=True)
time.sleep(600)
'''


@needs_proc
def test_kill_tree_kills_the_session_with_a_member_that_left_the_group():
    leader = subprocess.Popen([sys.executable, "-c", LEADER], start_new_session=True, stdout=subprocess.PIPE,
                              text=True)
    children = [int(pid) for pid in leader.stdout.readline().split()]
    assert len(session_groups(leader.pid)) == 2  # the leader's group and the moved child's
    kill_tree(leader.pid)
    leader.wait(timeout=10)
    assert gone(children) and not session_groups(leader.pid)


def test_wait_worker_returns_the_exit_code_or_none_once_the_parent_is_gone():
    for parent_gone in (False, True):
        watch, end = os.pipe()
        pid = os.fork()
        if pid == 0:
            time.sleep(30 if parent_gone else 0.1)
            os._exit(3)
        try:
            if parent_gone:
                os.close(end)
                assert wait_worker(pid, watch) is None
            else:
                assert wait_worker(pid, watch) == 3
                os.close(end)
        finally:
            os.close(watch)
            if parent_gone:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
