"""`scan --route onnx` (routes/onnx_export.py in the worker, routes/onnx_judge.py in the parent, isolation/wire.py
between them): a conv/batchnorm/GRU model's nodes each judged against the ONNX -> CANN map, --opset 9 refused, an op
the exporter cannot handle reported as a finding, and a hostile model's export unable to touch the report."""
from __future__ import annotations

import json
import os
import sys
import textwrap
from importlib import resources

import jsonschema
import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.isolation.wire import BadCapture, decode_onnx
from opassess.kb.routes import load_route_facts
from opassess.routes import OnnxExport, judge_onnx

pytest.importorskip("onnx")
runner = CliRunner()
CONV_BN_GRU = textwrap.dedent('''\
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)
            self.gru = nn.GRU(8, 16, batch_first=True)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            out, _ = self.gru(y.mean(dim=2).transpose(1, 2))
            return out


    def build_model():
        return Net()


    def example_inputs():
        return (torch.randn(1, 3, 8, 8),)
    ''')
# torch.linalg.eigvals has no ONNX symbolic in either exporter.
EIG = textwrap.dedent('''\
    import torch
    from torch import nn


    class Eig(nn.Module):
        def forward(self, x):
            return torch.linalg.eigvals(x).real + x.sum()


    def build_model():
        return Eig()


    def example_inputs():
        return (torch.randn(4, 4),)
    ''')
# Exported on real tensors (the capture runs on meta ones), the model rewrites the judge and the map it would be
# judged with, and forges the export result: in the worker, where the parent never looks.
HOSTILE = textwrap.dedent('''\
    import torch
    from torch import nn


    class Sneaky(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if not x.is_meta:
                import opassess.isolation.wire as wire
                import opassess.kb.routes as routes
                import opassess.routes.onnx_judge as judge
                judge.judge_node = lambda *a, **k: None
                routes.RouteFacts.onnx_op = lambda self, op, opset: None
                wire.decode_onnx = lambda data: None
            return torch.relu(self.fc(x))


    def build_model():
        return Sneaky()


    def example_inputs():
        return (torch.randn(2, 4),)
    ''')


def _scan(tmp_path, text, *args, fmt="json"):
    model = tmp_path / "model.py"
    model.write_text(text)
    result = runner.invoke(app, ["scan", str(model), "--route", "onnx", *args, "-f", fmt, "-o", "-", "-q"],
                           env={"COLUMNS": "160"})
    return result


def _validate(document):
    schema = json.loads(resources.files("opassess.report").joinpath("assessment.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)


def test_conv_batchnorm_gru_exports_at_17_and_every_node_has_a_cann_op_or_a_stated_gap(tmp_path):
    result = _scan(tmp_path, CONV_BN_GRU, "--exporter", "torchscript")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    _validate(document)
    onnx = document["onnx"]
    assert (onnx["opset"], onnx["requested_opset"], onnx["exporter"]) == (17, 17, "torchscript")
    nodes = {n["op_type"]: n for n in onnx["nodes"]}
    assert {"Conv", "GRU", "Relu", "ReduceMean", "Transpose"} <= set(nodes)
    assert "Constant" not in nodes  # a value, moved to an initializer: not an operator
    for node in onnx["nodes"]:
        assert node["cann_op"] or node["verdict"] in ("opset-dependent", "no CANN mapping"), node
        assert node["evidence"].startswith("msit_onnx_to_cann_op_map.tsv"), node
    assert nodes["GRU"]["cann_op"] == "CommonGRU" and nodes["GRU"]["verdict"] == "supported"
    row = int(nodes["GRU"]["evidence"].split(":")[1].split()[0])  # the cited line holds that very mapping
    assert load_route_facts().onnx_op("GRU", 17).row == row
    assert onnx["failures"] == []


@pytest.mark.parametrize("fmt", ["md", "html", "terminal"])
def test_every_human_format_has_the_onnx_section(tmp_path, fmt):
    result = _scan(tmp_path, CONV_BN_GRU, "--exporter", "torchscript", fmt=fmt)
    assert result.exit_code == 0, result.output
    text = result.stdout.replace("&gt;", ">")
    assert "ONNX -> ATC" in text and "CommonGRU" in text and "ATC itself is not run" in text


def test_opset_below_11_is_refused_with_the_reason(tmp_path):
    result = _scan(tmp_path, CONV_BN_GRU, "--opset", "9")
    assert result.exit_code == 2
    assert "ATC" in result.output and "opset 11 or later" in result.output
    assert _scan(tmp_path, CONV_BN_GRU, "--opset", "19").exit_code == 2


def test_an_op_the_exporter_cannot_handle_is_a_finding_not_a_crash(tmp_path):
    result = _scan(tmp_path, EIG, "--exporter", "torchscript")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    _validate(document)
    onnx = document["onnx"]
    assert onnx["exporter"] is None and onnx["nodes"] == []
    (failure,) = onnx["failures"]
    assert failure["op"] == "aten::linalg_eigvals" and failure["category"] == "custom-dev"
    assert "not supported" in failure["message"]
    md = _scan(tmp_path, EIG, "--exporter", "torchscript", fmt="md").stdout
    assert "the export at opset 17 failed" in md and "(custom-dev for this route)" in md


def test_a_hostile_models_export_cannot_touch_the_report(tmp_path):
    result = _scan(tmp_path, HOSTILE, "--exporter", "torchscript")
    assert result.exit_code == 0, result.output
    nodes = {n["op_type"]: n for n in json.loads(result.stdout)["onnx"]["nodes"]}
    # judged by the parent's own code and map: the patches lived and died in the worker
    assert nodes["Relu"]["verdict"] == "supported" and nodes["Relu"]["cann_op"] == "Relu"
    assert nodes["Gemm"]["cann_op"] == "PartitionedCall"


def test_the_dynamo_exporter_where_it_works(tmp_path):
    result = _scan(tmp_path, CONV_BN_GRU, "--opset", "18")
    assert result.exit_code == 0, result.output
    onnx = json.loads(result.stdout)["onnx"]
    assert onnx["exporter"] == "dynamo" and onnx["opset"] == 18
    assert {n["op_type"]: n["cann_op"] for n in onnx["nodes"]}["GRU"] == "CommonGRU"


def test_verdicts_follow_the_map_at_the_opset():
    facts = load_route_facts()
    route = judge_onnx(OnnxExport(16, 16, "torchscript", (("", "LayerNormalization", 2), ("", "Relu", 1),
                                                           ("", "NoSuchOp", 1), ("com.microsoft", "Gelu", 1)), ()),
                       facts)
    verdicts = {n.op_type: (n.verdict, n.cann_op) for n in route.nodes}
    assert verdicts["Relu"] == ("supported", "Relu")
    assert verdicts["LayerNormalization"][0] == "opset-dependent"  # the map lists it from opset 17 on
    layer_norm = next(n for n in route.nodes if n.op_type == "LayerNormalization")
    assert "listed at opsets 17-18, not 16" in layer_norm.evidence
    assert verdicts["NoSuchOp"] == ("no CANN mapping", "") and verdicts["com.microsoft::Gelu"][0] == "no CANN mapping"
    assert [n.verdict for n in route.nodes][:2] == ["no CANN mapping", "no CANN mapping"]  # gaps first


@pytest.mark.parametrize("part", [
    {"requested_opset": 17, "opset": 17, "exporter": "torchscript", "ops": [], "failures": [], "extra": 1},
    {"requested_opset": 17, "opset": 17, "exporter": "evil", "ops": [], "failures": []},
    {"requested_opset": 17, "opset": 17, "exporter": "torchscript", "ops": [["", "Conv", 0]], "failures": []},
    {"requested_opset": 17, "opset": 17, "exporter": "torchscript", "ops": [["", "Conv", "1"]], "failures": []},
    {"requested_opset": 17, "opset": 17, "exporter": "torchscript", "ops": [["", "C" * 300, 1]], "failures": []},
    {"requested_opset": 17, "opset": -1, "exporter": "torchscript", "ops": [], "failures": []},
    {"requested_opset": 17, "opset": 17, "exporter": "", "ops": [],
     "failures": [{"exporter": "torchscript", "op": "", "message": "x", "verdict": "supported"}]},
])
def test_the_parent_refuses_a_malformed_export(part):
    with pytest.raises(BadCapture):
        decode_onnx({"onnx": part})


def test_without_onnx_one_line_names_the_extra(tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "onnx" else real(name, *a))
    result = _scan(tmp_path, CONV_BN_GRU)
    assert result.exit_code == 2
    assert "pip install 'opassess[onnx]'" in result.output and "Traceback" not in result.output


def test_a_model_that_cannot_be_built_on_the_cpu_is_a_route_failure_not_a_failed_scan(tmp_path):
    meta_only = textwrap.dedent('''\
        import torch
        from torch import nn


        def build_model():
            if not torch.empty(1).is_meta:
                raise RuntimeError("too large to build with real weights")
            return nn.Linear(4, 4)


        def example_inputs():
            return (torch.randn(2, 4),)
        ''')
    result = _scan(tmp_path, meta_only, "--exporter", "torchscript")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["operators"]  # the capture on the meta device stands
    (failure,) = document["onnx"]["failures"]
    assert "could not be built on the CPU" in failure["message"] and "too large" in failure["message"]


@pytest.mark.parametrize("args", [("--opset", "17"), ("--exporter", "torchscript"), ("--route", "vllm-ascend",
                                                                                      "--opset", "11")])
def test_onnx_options_without_the_onnx_route_are_refused(tmp_path, args):
    """--opset or --exporter without --route onnx would be silently ignored (a CI job believing it checks the ONNX
    route); like --quant without --route vllm-ascend, it is a usage error (exit 2)."""
    model = tmp_path / "model.py"
    model.write_text(CONV_BN_GRU)
    result = runner.invoke(app, ["scan", str(model), *args, "-f", "json", "-o", str(tmp_path / "r.json"), "-q"])
    assert result.exit_code == 2, result.output
    assert "needs --route onnx" in result.output and not (tmp_path / "r.json").exists()


def test_an_onnx_install_that_cannot_be_imported_is_one_line_not_a_custom_dev_route(tmp_path, monkeypatch):
    """onnx installed but broken (a protobuf or numpy it was not built for: `import onnx` raises) used to pass the
    installed check and fail both exporters in the worker, reported as 'custom-dev for the route': a verdict on the
    model from a broken environment. It is one line naming the extra and the import error (exit 2)."""
    shadow = tmp_path / "shadow" / "onnx"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('onnx built against another protobuf')\n")
    monkeypatch.syspath_prepend(str(shadow.parent))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.delitem(sys.modules, "onnx", raising=False)
    result = _scan(tmp_path, CONV_BN_GRU, "--exporter", "torchscript")
    assert result.exit_code == 2, result.output
    assert "opassess[onnx]" in result.output and "another protobuf" in result.output
    assert '"onnx"' not in result.stdout  # no report


def test_identity_nodes_are_not_counted_as_operators():
    from opassess.routes import OnnxExport, judge_onnx

    route = judge_onnx(OnnxExport(17, 17, "torchscript", (("", "Identity", 120), ("", "MatMul", 4)), ()),
                       load_route_facts())
    assert [n.op_type for n in route.nodes] == ["MatMul"]


def test_an_exporter_failure_is_cut_to_its_first_line_and_still_names_the_operator():
    from opassess.routes.onnx_export import MAX_LINE, _failure

    frames = "\n".join(f"  frame {i}: some very long traceback text " * 5 for i in range(40))
    report = f"Failed to export the model with torch.export.\n{frames}\nunsupported operator 'aten::linalg_eig'"
    failure = _failure("dynamo", RuntimeError(report))
    assert failure.message == "RuntimeError: Failed to export the model with torch.export."
    assert "\n" not in failure.message and len(failure.message) <= MAX_LINE
    assert failure.op == "aten::linalg_eig"  # read from the whole report


NONZERO = textwrap.dedent('''\
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(16, 16)

        def forward(self, x):
            y = self.a(x)
            return y, torch.nonzero(y > 0)


    def build_model():
        return Net().eval()


    def example_inputs():
        return (torch.randn(2, 16),)
    ''')


def test_a_data_dependent_output_size_is_named_beside_the_onnx_limits(tmp_path):
    """torch.nonzero exports to NonZero, which the map calls supported: the section says its output size depends on
    the data and that ATC's static-shape needs for it are not checked; a model without one gets no such line."""
    result = _scan(tmp_path, NONZERO, "--exporter", "torchscript", fmt="md")
    assert result.exit_code == 0, result.output
    assert "| `NonZero` | 1 | `PartitionedCall` | supported |" in result.stdout
    assert ("The output size of torch.nonzero depends on the data: ATC's static-shape needs for their nodes are not "
            "checked (no fact states them per operator).") in result.stdout
    plain = _scan(tmp_path, CONV_BN_GRU, "--exporter", "torchscript", fmt="md")
    assert "ATC itself is not run" in plain.stdout and "depends on the data" not in plain.stdout
