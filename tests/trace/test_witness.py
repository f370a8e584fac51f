"""trace/witness.py and the reach record's threads: hostile-but-plain model files that hide an op from the recorder.
Each either makes --fail-on exit 3 (the op judged) or fails the capture with one line."""
from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from opassess.cli import app

HEADER = '''
import threading
import torch
from torch.nn.modules import module as _module
from torch.utils._python_dispatch import _pop_mode


def build_model():
    return M()


def example_inputs():
    return (torch.randn(4, 4),)
'''


def _scan(path: Path, *extra: str):
    return CliRunner().invoke(app, ["scan", str(path), "--fail-on", "custom-dev", "-f", "json", "-o",
                                    str(path.with_suffix(".json")), *extra])


def test_an_op_called_with_the_python_key_excluded_is_witnessed(model_file):
    path = model_file(HEADER + '''
class M(torch.nn.Module):
    def forward(self, x):
        with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):
            with torch._C.DisableTorchFunction():
                y = torch.logcumsumexp(x, 0)
        return y + 1
''')
    result = _scan(path)
    assert result.exit_code == 3, result.output
    assert "aten::logcumsumexp: custom-dev" in result.output
    import json

    document = json.loads(path.with_suffix(".json").read_text())
    assert document["reach"]["outside_recorder"] == ["aten::logcumsumexp"]


def test_an_op_in_a_joined_helper_thread_fails_the_capture_naming_the_thread(model_file):
    path = model_file(HEADER + '''
class M(torch.nn.Module):
    def forward(self, x):
        out = {}
        worker = threading.Thread(target=lambda: out.setdefault("y", torch.logcumsumexp(x, 0)), name="helper")
        worker.start()
        worker.join()
        return out["y"] + 1
''')
    result = _scan(path)
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.startswith("opassess: error")]
    assert len(lines) == 1 and "thread 'helper'" in lines[0] and "Traceback" not in result.output


def test_a_forward_that_clears_the_hooks_and_pops_the_modes_fails_the_capture_or_is_judged(model_file):
    # fx (symbolic) captures it without hooks or modes: logcumsumexp is judged, --fail-on exits 3; the dispatch
    # capture, whose recorder the forward takes away, fails with one line naming what was removed.
    body = '''
class M(torch.nn.Module):
    def forward(self, x):
        _module._global_forward_hooks.clear()
        _module._global_forward_pre_hooks.clear()
        while torch._C._len_torch_dispatch_stack() > 0:
            _pop_mode()
        return torch.logcumsumexp(x, 0) + 1
'''
    path = model_file(HEADER + body)
    assert _scan(path).exit_code == 3
    result = _scan(path, "--capture", "dispatch")
    assert result.exit_code == 1
    (line,) = [line for line in result.output.splitlines() if line.startswith("opassess: error")]
    assert "removed opassess's capture hooks" in line and "dispatch modes" in line
