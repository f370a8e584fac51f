"""Graph-mode sites of the source scan (opassess/source/graph_sites.py): torch.compile calls and decorators and
torch._dynamo settings with their NPU route and fact rows; a model scan adds the model's readiness on that route."""
from __future__ import annotations

from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.source import scan_sources
from tests.support import MODELS

SOURCE = '''import torch
import torch._dynamo as dyn

dyn.config.cache_size_limit = 64


@torch.compile(mode="reduce-overhead")
def step(x):
    return x * 2


@torch.compile
def plain(x):
    return x + 1


def build(model):
    return torch.compile(model, backend="cudagraphs")


def other(model):
    return torch.compile(model, backend="tensorrt")
'''


def findings(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(SOURCE)
    return {f.line: f for f in scan_sources([path]).findings if f.kind.startswith("graph-")}


def test_compile_calls_decorators_and_dynamo_settings_are_sites_with_their_route(tmp_path):
    found = findings(tmp_path)
    assert sorted((line, f.kind, str(f.category)) for line, f in found.items()) == [
        (4, "graph-setting", "direct"), (7, "graph-compile", "direct"), (12, "graph-compile", "direct"),
        (18, "graph-compile", "param-converted"), (22, "graph-compile", "param-converted")]
    assert found[4].subject == "torch._dynamo.config.cache_size_limit"  # through the import alias
    # reduce-overhead: inductor-only on the NPU (graph_mode_capture_facts.tsv row 11)
    assert "reduce-overhead" in found[7].npu_route
    assert any(e.startswith("graph_mode_capture_facts.tsv:11 ") for e in found[7].evidence)
    # backend='cudagraphs': the migration row that names npugraphs
    assert found[18].npu_route.startswith("torch.compile(backend='npugraphs')")
    assert found[18].evidence[0].startswith("cuda_api_migration.tsv:41 ")
    assert "no NPU counterpart" in found[22].npu_route


def test_a_model_scan_notes_the_models_readiness_on_the_sites_route(tmp_path):
    model = tmp_path / "compiled.py"
    model.write_text((MODELS / "graph_breaks.py").read_text() + "\n\ncompiled = torch.compile(ItemNonzero())\n")
    scan = assess(ScanOptions(target=str(model))).source_scan
    site = next(f for f in scan.findings if f.kind == "graph-compile")
    assert site.notes[-1].startswith("this model on inductor: 2 break(s), first Tensor.item at ")
