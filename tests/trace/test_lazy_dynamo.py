"""torch._dynamo is imported only when something uses it (trace/lazy_dynamo.py): not by a default capture, at once by
a model or a capture method that does, and with torch's own `disable` deciding from then on.

Each case runs in a fresh interpreter: whether torch._dynamo is imported is a fact about one process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from tests.support import ROOT

SMALL = textwrap.dedent('''
    import torch, torch.nn as nn
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.norm = nn.BatchNorm2d(8)
            self.fc = nn.Linear(8, 4)
        def forward(self, x):
            y = torch.relu(self.norm(self.conv(x))).mean((2, 3))
            return torch.softmax(self.fc(y) * 2 + 1, -1)
    def build_model():
        return Net()
    def example_inputs():
        return (torch.randn(2, 3, 8, 8),)
''')

# What the worker runs (isolation/worker.capture_body): the load and trace stages, here in a process of its own.
CAPTURE = '''
import json, sys
from opassess.options import ScanOptions
from opassess.pipeline.capture import capture_stage
info, capture, _ = capture_stage(ScanOptions(target=sys.argv[1]))
print(json.dumps({"method": capture.method, "device": capture.device, "nodes": len(capture.nodes),
                  "imported": sorted(m for m in ("torch._dynamo", "torch._inductor") if m in sys.modules),
                  "sources": sorted({n.source or "" for n in capture.nodes})}))
'''


def _run(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_default_capture_of_a_small_model_does_not_import_dynamo(tmp_path):
    model = tmp_path / "small.py"
    model.write_text(SMALL)
    seen = _run(CAPTURE, str(model))
    assert seen["imported"] == [], seen
    assert seen["method"] == "fx" and seen["device"] == "meta" and seen["nodes"] >= 6
    assert all(s.startswith(f"{model}:") for s in seen["sources"])  # every node keeps its source line


def test_a_model_that_uses_dynamo_gets_the_real_module(tmp_path):
    model = tmp_path / "uses_dynamo.py"
    model.write_text(SMALL.replace("import torch, torch.nn as nn", textwrap.dedent('''
        import torch, torch.nn as nn
        import torch._dynamo
        torch._dynamo.config.suppress_errors = True  # any use but disable() imports the real torch._dynamo
        ''')))
    seen = _run(CAPTURE, str(model))
    assert "torch._dynamo" in seen["imported"] and seen["nodes"] >= 6


def test_answers_are_forgotten_once_the_real_module_is_imported():
    code = '''
import json, sys, torch
from opassess.trace.lazy_dynamo import dynamo_on_demand
def f():
    return 1
g = torch._disable_dynamo(f)
with dynamo_on_demand():
    g()
    answered = getattr(f, "__dynamo_disable", None) is f and "torch._dynamo" in sys.modules
    real = type(sys.modules["torch._dynamo"]).__name__
    torch._dynamo.reset  # a use other than disable(): the real module, and the answers forgotten
    forgotten = not hasattr(f, "__dynamo_disable")
    g()
print(json.dumps({"answered": answered, "stand_in": real, "forgotten": forgotten,
                  "real_after": getattr(f, "__dynamo_disable", None) not in (None, f),
                  "module": type(sys.modules["torch._dynamo"]).__name__}))
'''
    seen = _run(code)
    assert seen == {"answered": True, "stand_in": "_OnDemand", "forgotten": True, "real_after": True,
                    "module": "module"}


def test_leaving_the_block_forgets_the_answers_and_the_stand_in():
    code = '''
import json, sys, torch
from opassess.trace.lazy_dynamo import dynamo_on_demand
def f():
    return 1
g = torch._disable_dynamo(f)
with dynamo_on_demand():
    g()
print(json.dumps({"left": "torch._dynamo" in sys.modules, "cached": hasattr(f, "__dynamo_disable")}))
'''
    assert _run(code) == {"left": False, "cached": False}
