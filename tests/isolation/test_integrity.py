"""Hostile models against the verdict: a worker only captures; nothing it does in its own process changes the gate."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from tests.isolation.processes import gone
from tests.support import ROOT

FORGED_CLASSIFIER = textwrap.dedent('''
    import dataclasses, torch
    import opassess.classify as c
    _real = c.classify
    def classify(inventory, kb, **kw):  # the model's own "everything is direct"
        return tuple(dataclasses.replace(x, category='direct') for x in _real(inventory, kb, **kw))
    c.classify = classify
    import opassess.pipeline.assess
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.i0(x)
    def build_model():
        return M()
    def example_inputs():
        return (torch.randn(2, 3),)
''')

TWO_RESULTS = textwrap.dedent('''
    import gc, torch
    from opassess.isolation.process import Channel
    class M(torch.nn.Module):
        def forward(self, x):
            for obj in gc.get_objects():
                if isinstance(obj, Channel):
                    obj.send("failed", "forged")
            return x + 1
    def build_model():
        return M()
    def example_inputs():
        return (torch.randn(2, 3),)
''')


def _scan(tmp_path, source, *extra):
    model = tmp_path / "model.py"
    model.write_text(source)
    return subprocess.run([sys.executable, "-m", "opassess", "scan", str(model), "-f", "json", *extra],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_a_model_that_patches_the_classifier_in_its_worker_still_fails_the_gate(tmp_path):
    done = _scan(tmp_path, FORGED_CLASSIFIER, "--fail-on", "custom-dev")
    assert done.returncode == 3, done.stderr


def test_in_a_portfolio_the_patched_classifier_still_fails_the_gate(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    (models / "forger.py").write_text(FORGED_CLASSIFIER)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["scan", str(models), "-o", str(out), "--fail-on", "custom-dev", "-q"])
    assert result.exit_code == 3, result.output
    assert "opassess: policy: forger:" in result.output
    ops = {op["op"]: op["category"] for op in json.loads((out / "forger.json").read_text())["operators"]}
    assert ops["torch.i0"] == "custom-dev"


def test_a_second_result_from_the_model_fails_it(tmp_path):
    done = _scan(tmp_path, TWO_RESULTS)
    assert done.returncode == 1
    assert "the worker sent two results: the model wrote to opassess's result channel" in done.stderr
    assert len(done.stderr.strip().splitlines()[-1]) < 400


# ---- what a model can write on the result channel it finds in its own process: each is that model's failure, one
# line, and the parent builds nothing from it ----

CHANNEL_WRITER = textwrap.dedent('''
    import gc, os, torch
    from opassess.isolation.process import Channel
    class M(torch.nn.Module):
        def forward(self, x):
            open({pids!r}, "w").write(str(os.getpid()))
            for obj in gc.get_objects():
                if isinstance(obj, Channel):
                    fd, nonce = obj._fd, obj._nonce
    {attack}
            return x + 1
    def build_model():
        return M()
    def example_inputs():
        return (torch.randn(2, 3),)
''')

ATTACKS = {
    # the old attack: multiprocessing's Connection pickles; an object whose __reduce__ would run in the reader
    "pickled": ('''
                    import multiprocessing.connection as mc
                    class Evil:
                        def __reduce__(self):
                            return (os.system, ("touch " + {marker!r},))
                    mc.Connection(os.dup(fd)).send(Evil())
                    os.write(fd, b"\\n")''', "the worker sent a malformed message"),
    "wrong nonce": ('''
                    os.write(fd, b'{{"nonce": "00", "kind": "failed", "payload": "x"}}\\n')''',
                    "the worker sent a message without its nonce"),
    "malformed": ('''
                    os.write(fd, b"{{not json\\n")''', "the worker sent a malformed message"),
    "oversized": ('''
                    os.write(fd, b"x" * (3 * 2**20))''', "the worker sent an oversized message"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_what_a_model_writes_on_the_result_channel_is_its_own_failure(tmp_path, monkeypatch, attack):
    from opassess.isolation import process

    monkeypatch.setattr(process, "MAX_MESSAGE", 2**20)  # the oversized line: 1 MiB here instead of 512 MiB
    marker, pids, out = tmp_path / "ran-in-a-reader", tmp_path / "pids", tmp_path / "out"
    code, message = ATTACKS[attack]
    model = tmp_path / "model.py"
    model.write_text(CHANNEL_WRITER.format(pids=str(pids), attack=textwrap.indent(
        textwrap.dedent(code.format(marker=str(marker))), " " * 16)))
    out.mkdir()
    # (the model writes its pid for the test: the sandbox, tested in test_sandbox.py, would refuse that)
    result = CliRunner().invoke(app, ["scan", str(model), "-o", str(out / "r.json"), "-q", "--sandbox", "off"])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("opassess:")]
    assert lines == [f"opassess: error: {model}: {message}: the model wrote to opassess's result channel"]
    assert not marker.exists()  # nothing the model sent was unpickled, here or anywhere
    assert list(out.iterdir()) == []  # no report, no temporary file
    assert gone([int(pids.read_text())])
