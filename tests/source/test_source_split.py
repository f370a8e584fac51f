"""opassess.source.split: a big tree's Python files scanned in two processes give the scan one process gives, in the
same order, skipped files included; a child that fails or answers nonsense costs time, not results."""
from __future__ import annotations

import json
import os

import pytest

from opassess.source import scan_sources, split
from opassess.source.records import KernelSize, Site
from tests.source.support import write_library, write_project

needs_two_cores = pytest.mark.skipif(not split._two_cores(), reason="the split needs fork and two usable cores")


@pytest.fixture
def tree(tmp_path):
    """The training project and the library project, plus a file that does not parse and one nested too deep for
    the parser, with a dozen copies of the training script in a package (a tree with sites in many files)."""
    root = write_project(tmp_path / "tree", {"broken.py": "def f(:\n", "deep.py": "x = " + "(" * 5000 + ")" * 5000})
    write_library(tmp_path / "tree" / "lib")
    for index in range(12):
        target = root / "pkg" / f"copy_{index}.py"
        target.parent.mkdir(exist_ok=True)
        target.write_text((root / "train.py").read_text())
    return root


def _scan(root, monkeypatch, fork_bytes):
    monkeypatch.setattr(split, "FORK_BYTES", fork_bytes)
    return scan_sources(root)


@needs_two_cores
def test_a_split_scan_is_the_single_process_scan(tree, monkeypatch):
    forks = []
    real_fork = os.fork

    def counting_fork():
        forks.append(os.getpid())
        return real_fork()

    monkeypatch.setattr(split.os, "fork", counting_fork)
    alone = _scan(tree, monkeypatch, 10**12)
    assert forks == []
    together = _scan(tree, monkeypatch, 0)
    assert forks == [os.getpid()]  # one child, forked from here
    assert together == alone
    assert len(alone.findings) > 100 and len(alone.files) > 15
    assert [s.file for s in alone.skipped] == ["broken.py", "deep.py"]


@needs_two_cores
def test_a_failing_child_s_files_are_scanned_here(tree, monkeypatch):
    alone = _scan(tree, monkeypatch, 10**12)

    def failing(result):  # runs in the child (the fork copies this patch): it exits 1 without an answer
        raise RuntimeError("the child fails")

    monkeypatch.setattr(split, "_encoded", failing)
    assert _scan(tree, monkeypatch, 0) == alone


@needs_two_cores
def test_a_child_that_hangs_is_stopped_and_its_files_scanned_here(tree, monkeypatch):
    import time

    alone = _scan(tree, monkeypatch, 10**12)
    monkeypatch.setattr(split, "CHILD_GRACE", 0.5)
    monkeypatch.setattr(split, "_encoded", lambda result: time.sleep(3600))  # the child never answers
    started = time.monotonic()
    assert _scan(tree, monkeypatch, 0) == alone
    assert time.monotonic() - started < 60


@needs_two_cores
def test_no_fork_no_child_and_a_child_reaped_elsewhere_change_nothing(tree, monkeypatch):
    """A fork the system refuses, SIGCHLD ignored (the kernel reaps children itself), OPASSESS_IN_PROCESS=1 (a
    debugger) and a child some other waitpid(-1) reaped: the scan is the one-process scan, no descriptor left open."""
    import signal

    alone = _scan(tree, monkeypatch, 10**12)
    open_fds = len(os.listdir("/proc/self/fd"))
    real_fork, real_waitpid = os.fork, os.waitpid

    def refused():
        raise BlockingIOError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(split.os, "fork", refused)
    assert _scan(tree, monkeypatch, 0) == alone
    assert len(os.listdir("/proc/self/fd")) == open_fds
    monkeypatch.setattr(split.os, "fork", lambda: pytest.fail("forked"))
    monkeypatch.setenv("OPASSESS_IN_PROCESS", "1")
    assert _scan(tree, monkeypatch, 0) == alone
    monkeypatch.delenv("OPASSESS_IN_PROCESS")
    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert _scan(tree, monkeypatch, 0) == alone
    finally:
        signal.signal(signal.SIGCHLD, previous)

    def reaped_elsewhere(pid, options):
        real_waitpid(pid, options)
        raise ChildProcessError(10, "No child processes")

    monkeypatch.setattr(split.os, "fork", real_fork)
    monkeypatch.setattr(split.os, "waitpid", reaped_elsewhere)
    assert _scan(tree, monkeypatch, 0) == alone


@needs_two_cores
def test_a_file_the_child_ran_out_of_memory_on_is_scanned_here(tree, monkeypatch):
    from opassess.source import scan as scan_module

    alone = _scan(tree, monkeypatch, 10**12)
    real = scan_module.scan_python
    parent = os.getpid()

    def pressed(text, file, *args, **kwargs):
        if os.getpid() != parent and file.endswith("copy_3.py"):
            raise MemoryError
        return real(text, file, *args, **kwargs)

    monkeypatch.setattr(scan_module, "scan_python", pressed)
    assert _scan(tree, monkeypatch, 0) == alone


def test_the_child_s_answer_reads_back_or_not_at_all():
    site = Site("a.py", 3, "k[grid](x)", "triton-kernel", "k", (("name", "k"), ("flag", "atomic_add:int64")),
                KernelSize(7, 1, ("arange", "load")))
    result = ([site, Site("a.py", 1, "import torch", "import", "torch")], [("a.py", "torch", 1)], None, 9)
    skipped = ([], [], "not parsable as Python at line 1: invalid syntax", 0)
    answer = json.dumps([split._encoded(result), split._encoded(skipped)]).encode()
    assert split._decoded(answer, 2) == [result, skipped]
    for bad in (b"", b"not json", b"[1]", b"{}", json.dumps([[[["a.py", "3"]], [], None, 1]]).encode(),
                json.dumps([[[], [], None, "9"]]).encode(), answer):
        assert split._decoded(bad, 1) is None, bad  # (the good answer holds two results, not one)
