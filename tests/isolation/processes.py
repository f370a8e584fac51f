"""Process checks for the isolation tests: which processes of a run are alive, found through /proc."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import ROOT

_no_proc = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")


def needs_proc(test):
    """Skip `test` without Linux /proc; mark it slow (a real run of the CLI: `make test-fast` leaves it out)."""
    return pytest.mark.slow(_no_proc(test))

HEADER = '''
import os, sys, time, subprocess, threading
import torch, torch.nn as nn
'''
GOOD = HEADER + '''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, x):
        return self.fc(x)
def build_model(): return Net()
def example_inputs(): return (torch.randn(2, 4),)
'''


def hostile(forward: str, *, at_import: str = "") -> str:
    """A model file whose forward runs `forward` (indented statements) before its Linear layer."""
    body = "\n".join("        " + line for line in forward.strip().splitlines())
    return HEADER + at_import + f'''
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
    def forward(self, x):
{body}
        return self.fc(x)
def build_model(): return Net()
def example_inputs(): return (torch.randn(2, 4),)
'''


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(pids, seconds: float = 5.0) -> bool:
    """All of `pids` ended within `seconds` (a SIGKILLed process takes a moment to be reaped)."""
    end = time.monotonic() + seconds
    while any(alive(p) for p in pids):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def tagged(tag: str) -> list[int]:
    """PIDs whose environment carries OPASSESS_TEST_TAG=tag (every process of the run inherits it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if f"OPASSESS_TEST_TAG={tag}".encode() in (entry / "environ").read_bytes().split(b"\0") \
                        and alive(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def run_until(args: list[str], markers: list[Path], tag: str) -> subprocess.Popen:
    """Start `opassess scan ARGS` tagged with `tag` and return once every marker file has been written."""
    env = dict(os.environ, OPASSESS_TEST_TAG=tag, PYTHONPATH=str(ROOT))
    # (the models write their marker files: the sandbox, tested in test_sandbox.py, would refuse that)
    process = subprocess.Popen([sys.executable, "-m", "opassess", "scan", *args, "--sandbox", "off"], env=env,
                               text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    end = time.monotonic() + 240
    while not all(m.exists() and m.stat().st_size for m in markers):  # written: the pid is in it
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < end, "the models never started"
        time.sleep(0.1)
    return process


def gone_tagged(tag: str, seconds: float = 5.0) -> bool:
    """No process tagged `tag` is left within `seconds`."""
    end = time.monotonic() + seconds
    while tagged(tag):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True
