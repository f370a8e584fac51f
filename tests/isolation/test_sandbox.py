"""The worker's sandbox (isolation/sandbox.py): with it on, a model that writes to the user's home, to -o or to the
knowledge-base overlay, or opens a socket, fails its capture with one line naming what it tried; nothing is left
behind. Which mechanism ran on this machine is printed (pytest -s) and recorded in the report."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from opassess.isolation.sandbox import landlock_abi
from tests.support import ROOT

ATTEMPT = textwrap.dedent('''
    import os, socket, torch
    ACTION = {action!r}
    class M(torch.nn.Module):
        def forward(self, x):
            kind, where = ACTION
            if kind == "write":
                with open(where, "a") as out:
                    out.write("the model was here")
            elif kind == "connect":
                socket.create_connection(("127.0.0.1", int(where)), timeout=5).close()
            elif kind == "cache":  # a legitimate write: HOME, TMPDIR and the caches are the private folder
                import tempfile
                with open(os.path.join(os.path.expanduser("~"), ".cache-ok"), "w") as out:
                    out.write("ok")
                tempfile.NamedTemporaryFile().close()
            return x + 1
    def build_model():
        return M()
    def example_inputs():
        return (torch.randn(2, 3),)
''')


def _sandboxed() -> bool:
    return sys.platform.startswith("linux") and landlock_abi() > 0


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")


def _scan(tmp_path, action, *extra, env=None):
    model = tmp_path / "model.py"
    model.write_text(ATTEMPT.format(action=action))
    return subprocess.run([sys.executable, "-m", "opassess", "scan", str(model), "-f", "json", *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=300, env={**os.environ, **(env or {})})


def _error_line(done) -> str:
    lines = [line for line in done.stderr.strip().splitlines() if line.startswith("opassess: error:")]
    assert len(lines) == 1, done.stderr
    return lines[0]




@pytest.mark.parametrize("where", ["home", "output", "overlay"])
def test_a_write_outside_the_private_folder_fails_the_capture_naming_it(tmp_path, where):
    home = tmp_path / "home"
    home.mkdir()
    overlay = tmp_path / "kb"
    overlay.mkdir()
    out = tmp_path / "report.json"
    target = {"home": home / ".bashrc", "output": out, "overlay": overlay / "verified.json"}[where]
    temp = tmp_path / "tmp"  # where the run makes its sandbox folders
    temp.mkdir()
    done = _scan(tmp_path, ("write", str(target)), "-o", str(out),
                 env={"HOME": str(home), "OPASSESS_KB_DIR": str(overlay), "TMPDIR": str(temp)})
    assert done.returncode == 1, done.stderr
    line = _error_line(done)
    assert "PermissionError" in line and f"the sandbox refused open({str(target)!r}, 'a')" in line
    assert not target.exists() and not out.exists()
    assert list(temp.iterdir()) == []  # the private folder went with the worker


def test_a_socket_fails_the_capture_naming_the_address(tmp_path):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        done = _scan(tmp_path, ("connect", str(port)))
    assert done.returncode == 1, done.stderr
    assert f"the sandbox refused socket.connect(('127.0.0.1', {port}))" in _error_line(done)


def test_a_model_that_writes_its_caches_works_and_the_report_says_which_sandbox_ran(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    done = _scan(tmp_path, ("cache", ""), env={"HOME": str(home)})
    assert done.returncode == 0, done.stderr
    applied = json.loads(done.stdout)["sandbox"]
    print(f"\nsandbox on this machine (uid {os.geteuid()}): {applied}")
    if _sandboxed():
        assert applied.startswith(f"landlock-abi{min(landlock_abi(), 7)}")
    assert not (home / ".cache-ok").exists()  # it went to the private folder, which is gone


def test_off_lets_the_model_write_and_says_so(tmp_path):
    target = tmp_path / "written"
    done = _scan(tmp_path, ("write", str(target)), "--sandbox", "off")
    assert done.returncode == 0, done.stderr
    assert target.read_text() == "the model was here"
    assert json.loads(done.stdout)["sandbox"] == "off"


def test_require_runs_where_a_mechanism_exists_and_a_bad_mode_is_usage(tmp_path):
    done = _scan(tmp_path, ("cache", ""), "--sandbox", "require")
    assert done.returncode == (0 if _sandboxed() else 1), done.stderr
    bad = _scan(tmp_path, ("cache", ""), "--sandbox", "sometimes")
    assert bad.returncode == 2 and "expected auto, require or off" in bad.stderr


def test_a_killed_runs_sandbox_folder_is_removed_by_the_next_run(tmp_path):
    stale = tmp_path / "tmp" / "opassess-sandbox-999999999-x" / "worker-y"  # no such process
    stale.mkdir(parents=True)
    done = _scan(tmp_path, ("cache", ""), env={"TMPDIR": str(tmp_path / "tmp")})
    assert done.returncode == 0, done.stderr
    assert list((tmp_path / "tmp").iterdir()) == []
