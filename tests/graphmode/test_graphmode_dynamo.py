"""--graph-mode dynamo: torch._dynamo runs on the model in the worker, its breaks come back through the wire (checked
strictly) and join the capture's; the default scan sees only what the dispatched calls show."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.isolation.wire import BadCapture, decode_capture, encode_capture
from opassess.records import Capture, DynamoBreak, DynamoRun, ModelInfo
from tests.support import MODELS

runner = CliRunner()
PYTHON = MODELS / "graph_python.py"


def report(tmp_path, *args):
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["scan", str(PYTHON), "-q", "-o", str(out), *args])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())["graph_mode"]


def test_dynamo_finds_the_python_level_break_the_capture_cannot_see(tmp_path):
    capture_only = report(tmp_path)
    assert capture_only["method"] == "capture" and capture_only["dynamo"] is None
    lines = {b["source"].rsplit("/", 1)[-1] for b in capture_only["backends"]["inductor"]["breaks"]}
    assert lines == {"graph_python.py:17"}  # the print dispatches no ATen op: unseen

    graph = report(tmp_path, "--graph-mode", "dynamo")
    assert graph["method"] == "dynamo" and graph["dynamo"]["error"] is None and graph["dynamo"]["graphs"] >= 2
    breaks = graph["backends"]["inductor"]["breaks"]
    found = sorted((b["source"].rsplit("/", 1)[-1], b["kind"], b["method"]) for b in breaks)
    # the print from dynamo; the .item() once, as the capture found it (dynamo named the same line)
    assert found == [("graph_python.py:16", "dynamo", "dynamo"), ("graph_python.py:17", "host-sync", "capture")]
    assert "print" in next(b["reason"] for b in breaks if b["kind"] == "dynamo")
    assert all(not graph["backends"][name]["ready"] for name in ("inductor", "npugraph_ex", "ge"))


def _message(dynamo):
    info = ModelInfo(source="m.py", entry="build_model", class_name="M", parameters=0, dtype="float32", inputs=())
    capture = Capture(method="fx", device="meta", device_note=None, attempts=(), nodes=(), dynamo=dynamo)
    return json.loads(json.dumps(encode_capture(info, capture, {"load": 0.1, "trace": 0.2, "dynamo": 0.3})))


def test_the_dynamo_report_crosses_the_wire_as_plain_checked_data():
    run = DynamoRun(graphs=2, ops=3, breaks=(DynamoBreak("Failed to trace builtin operator", "m.py:4"),), seconds=0.5)
    _, capture, seconds = decode_capture(_message(run))
    assert capture.dynamo == run and seconds["dynamo"] == 0.3
    assert decode_capture(_message(None))[1].dynamo is None


@pytest.mark.parametrize("change", [
    lambda d: d.update(graphs="2"),  # a string where a count belongs
    lambda d: d.update(extra=1),  # an unknown key
    lambda d: d["breaks"].append({"reason": 1, "source": None}),  # a reason that is not text
    lambda d: d.pop("error"),  # a missing key
])
def test_a_malformed_dynamo_report_is_refused(change):
    message = _message(DynamoRun(graphs=1, ops=1, breaks=(), seconds=0.1))
    change(message["capture"]["dynamo"])
    with pytest.raises(BadCapture, match="capture.dynamo"):
        decode_capture(message)


DISABLED = '''import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    @torch.compiler.disable
    def forward(self, x):
        return torch.relu(self.fc(x))


def build_model():
    return M()


def example_inputs():
    return (torch.randn(2, 8),)
'''


def test_a_forward_dynamo_builds_no_graph_of_is_not_ready(tmp_path):
    """torch._dynamo.explain on a forward under torch.compiler.disable builds no graph and reports no break: the
    whole forward runs eager under torch.compile, so no back-end is ready (it used to say ready, 100% capturable)."""
    model = tmp_path / "disabled.py"
    model.write_text(DISABLED)
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["scan", str(model), "-q", "-o", str(out), "--graph-mode", "dynamo"])
    assert result.exit_code == 0, result.output
    graph = json.loads(out.read_text())["graph_mode"]
    assert graph["dynamo"]["graphs"] == 0 and graph["dynamo"]["error"] is None
    for name in ("inductor", "npugraph_ex", "ge"):
        backend = graph["backends"][name]
        assert not backend["ready"] and backend["capturable_flops_share"] == 0.0
        (only,) = backend["breaks"]
        assert only["kind"] == "dynamo" and "no graph" in only["reason"]
    assert "torch.compiler.disable" in graph["backends"]["inductor"]["breaks"][0]["reason"]


@pytest.mark.parametrize(("registration", "said"), [
    ({"op": "aten::mm", "kinds": ["CompositeImplicitAutograd"], "reference": []}, "not a project's or library's op"),
    ({"op": "no_namespace", "kinds": [], "reference": []}, "not a project's or library's op"),
    ({"op": "mylib::op", "kinds": ["CPU"], "reference": []}, "dispatch keys other than the composite ones: CPU"),
    ({"op": "mylib::op", "kinds": ["CompositeExplicitAutograd", "CompositeExplicitAutograd"], "reference": []},
     "repeated"),
    ({"op": "mylib::op", "kinds": "CompositeExplicitAutograd", "reference": []}, "expected a list"),
])
def test_a_registration_the_parent_would_misjudge_by_is_refused(registration, said):
    # the parent judges a model's own or a library's torch.library op by the registration its worker sent
    message = _message(None)
    message["capture"]["registrations"] = [{"op": "ok::op", "kinds": ["CompositeExplicitAutograd"], "reference": []},
                                           registration]
    with pytest.raises(BadCapture, match=r"capture\.registrations\[1\]") as refused:
        decode_capture(message)
    assert said in str(refused.value)
    message["capture"]["registrations"] = message["capture"]["registrations"][:1]
    assert decode_capture(message)[1].registrations[0].kinds == ("CompositeExplicitAutograd",)
