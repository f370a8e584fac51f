"""Hostile models against the verdict: a worker only captures; nothing it does in its own process changes the gate."""
from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import ROOT

FORGED_CLASSIFIER = textwrap.dedent('''
    import dataclasses, torch
    import opassess.classify as c
    _real = c.classify
    def classify(inventory, kb, **kw):  # the model's own "everything is direct"
        return tuple(dataclasses.replace(x, category='direct') for x in _real(inventory, kb, **kw))
    c.classify = classify
    import opassess.pipeline
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


def test_a_second_result_from_the_model_fails_it(tmp_path):
    done = _scan(tmp_path, TWO_RESULTS)
    assert done.returncode == 1
    assert "the worker sent two results: the model wrote to opassess's result channel" in done.stderr
    assert len(done.stderr.strip().splitlines()[-1]) < 400
