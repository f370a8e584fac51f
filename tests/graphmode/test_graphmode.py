"""Graph-mode readiness (opassess/graphmode): per-operator verdicts and per-model breaks on purpose-built models.

Expected values are worked out in the model files' docstrings (tests/models/graph_*.py) from the fact rows.
"""
from __future__ import annotations

import pytest

from opassess.graphmode import BACKENDS, VERDICTS
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from tests.support import MODELS

_RUNS: dict = {}


def run(name: str, entry: str | None = None, **options):
    key = (name, entry, tuple(sorted(options.items())))
    if key not in _RUNS:
        _RUNS[key] = assess(ScanOptions(target=str(MODELS / name), entry=entry, **options))
    return _RUNS[key]


def verdict(assessment, key: str, backend: str):
    return assessment.graph_mode.operators[key][BACKENDS.index(backend)]


def test_item_and_nonzero_break_every_backend_at_their_lines():
    graph = run("graph_breaks.py").graph_mode
    assert graph.method == "capture" and "--graph-mode dynamo" in graph.unseen
    for backend in graph.backends:
        assert not backend.ready
        found = {(b.op, b.kind, b.source.rsplit("/", 1)[-1]) for b in backend.breaks}
        assert found == {("Tensor.item", "host-sync", "graph_breaks.py:19"),
                         ("torch.nonzero", "data-dependent", "graph_breaks.py:20")}, backend.backend
        assert backend.split_points == ("Tensor.item", "torch.nonzero")
        assert backend.capturable_flops_share == 1.0  # the Linear's 2,048 FLOPs lie outside both breaks
        assert all(b.fix for b in backend.breaks)
    # the re-capture limit of the capture facts (64, row 8) is named for the data-dependent size on aclgraph
    assert any("after 64 captures" in n and "graph_mode_capture_facts.tsv:8" in n
               for n in graph.backend("npugraph_ex").notes)


def test_item_and_nonzero_operator_verdicts_cite_their_rows():
    assessment = run("graph_breaks.py")
    nonzero = verdict(assessment, "torch.nonzero", "inductor")
    assert nonzero.verdict == "eager-fallback" and nonzero.evidence == ("torch_npu_inductor_fallback_list.tsv:710",)
    item = verdict(assessment, "Tensor.item", "ge")
    assert item.verdict == "no-converter"
    assert item.evidence == ("torchair_ge_converter_status.tsv:145 (aten::_local_scalar_dense: not_implemented)",)
    assert verdict(assessment, "Tensor.item", "npugraph_ex").verdict == "not-capturable"


def test_static_mlp_is_ready_on_every_backend():
    graph = run("graph_static.py").graph_mode
    assert [(b.backend, b.ready, b.breaks, b.capturable_flops_share) for b in graph.backends] == \
        [(name, True, (), 1.0) for name in BACKENDS]
    # aclgraph captures per input shape: the note names the shape and the re-capture limit (64, row 8)
    assert graph.backend("npugraph_ex").notes == (
        "captured per input shape (float32[4,16] here): every other batch size or sequence length is a new capture, "
        "and past 64 per graph it runs eager; pad the inputs to at most 64 shape buckets "
        "(graph_mode_capture_facts.tsv:8 (Ascend/torchair docs/zh/npugraph_ex/basic/capture_limit.md))",)
    relu = graph.operators["torch.nn.ReLU"]
    assert [v.verdict for v in relu] == ["lowered", "capturable", "supported"]
    # aten::t's converter states a restriction: partial, which does not keep the model from GE
    linear = graph.operators["torch.nn.Linear"][2]
    assert linear.verdict == "partial" and "torchair_ge_converter_status.tsv:1653" in linear.evidence[0]


def test_adaptive_avg_pool3d_is_not_ge_ready_naming_its_converter_row():
    assessment = run("graph_static.py", "build_pool3d", input_shapes=((1, 2, 4, 4, 4),))
    ge = assessment.graph_mode.backend("ge")
    assert not ge.ready and ge.split_points == ("torch.nn.AdaptiveAvgPool3d",)
    pool = verdict(assessment, "torch.nn.AdaptiveAvgPool3d", "ge")
    assert pool.verdict == "no-converter" and pool.aten == ("aten::_adaptive_avg_pool3d",)
    assert pool.evidence == ("torchair_ge_converter_status.tsv:6 (aten::_adaptive_avg_pool3d: not_implemented)",)
    assert "aten::_adaptive_avg_pool3d" in ge.breaks[0].reason


def test_aclop_only_kernel_is_not_aclgraph_capturable_citing_the_kernel_row():
    assessment = run("graph_static.py", "build_cell")
    cell = verdict(assessment, "torch.nn.LSTMCell", "npugraph_ex")
    assert cell.verdict == "not-capturable" and cell.aten == ("aten::lstm_cell",)
    assert cell.evidence[0] == "npu_aten_ops: lstm_cell [aclnn none; aclop all]"
    assert cell.evidence[1].startswith("graph_mode_capture_facts.tsv:6 ")
    assert not assessment.graph_mode.backend("npugraph_ex").ready
    # the inductor still runs it (an eager kernel inside the compiled graph)
    assert assessment.graph_mode.backend("inductor").ready


def test_a_training_step_is_not_npugraph_ex_capturable():
    graph = run("graph_static.py", train=True).graph_mode
    aclgraph = graph.backend("npugraph_ex")
    assert not aclgraph.ready
    assert [(b.op, b.kind) for b in aclgraph.breaks] == [("backward pass", "backward")]
    assert "graph_mode_capture_facts.tsv:7" in aclgraph.breaks[0].reason
    assert graph.backend("inductor").ready  # the optimizer step is not part of the model's graph


def test_no_graph_mode_skips_the_analysis():
    assert run("graph_static.py", graph_mode="off").graph_mode is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_verdict_is_one_of_its_backends(backend):
    for name in ("graph_breaks.py", "graph_static.py"):
        for verdicts in run(name).graph_mode.operators.values():
            assert verdicts[BACKENDS.index(backend)].verdict in VERDICTS[backend]


def test_the_default_scan_does_not_import_torch_dynamo_in_the_parent():
    """The graph-mode analysis of a default scan reads the capture only: the parent never imports torch._dynamo
    (about a second on its own), the worker runs the model."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from opassess.options import ScanOptions\n"
            "from opassess.isolation.scan import start_assessment, finish_assessment\n"
            "from opassess.report import build_view\n"
            f"o = ScanOptions(target={str(MODELS / 'graph_breaks.py')!r})\n"
            "view = build_view(finish_assessment(start_assessment(o, timeout=300, debug=False), o))\n"
            "print(view.document['graph_mode']['backends']['ge']['ready'], 'torch._dynamo' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False", "False"]


def test_an_op_replayed_through_an_update_handler_needs_one_citing_its_row():
    """npu_fused_infer_attention_score's host-side tiling is refreshed before each replay by ifa_handler.py
    (graph_mode_capture_facts.tsv line 4): capturable, with an update handler."""
    from opassess.graphmode.verdicts import aclgraph_verdict
    from opassess.kb import load_kb
    from opassess.kb.graph_facts import load_graph_facts
    from opassess.records import ClassifiedOp, Operator

    kb = load_kb()
    name = "npu::npu_fused_infer_attention_score"
    op = Operator(key=name, kind="custom", count=1, modules=("",), signatures=(), aten=(name,), sources=(), nodes=())
    classified = ClassifiedOp(operator=op, category="direct", signature_categories=(), reasons=(), replacement=None,
                              cann_op=None, known=True, aten_support={})
    verdict = aclgraph_verdict(classified, load_graph_facts(kb.directory), kb, kb.resolve_version(None))
    assert verdict.verdict == "needs-update-handler" and not verdict.blocking
    assert verdict.evidence == ("graph_mode_capture_facts.tsv:4 (torch_npu/npu/_npugraph_handlers/ifa_handler.py)",)
