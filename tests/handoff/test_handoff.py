"""Tests for opassess.handoff: per custom-dev operator a runnable reproduction and a ticket skeleton, and the
list of operators to verify numerically, written by `opassess scan --handoff DIR`."""
from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from opassess.cli import app
from opassess.handoff import file_stem, handoff_files, to_verify, write_handoffs
from opassess.options import ScanOptions
from opassess.pipeline.assess import assess
from opassess.report import build_view
from tests.score.records import MODELS

ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def document():
    return build_view(assess(ScanOptions(target=str(MODELS / "two_custom_ops.py")))).document


def test_one_reproduction_and_one_ticket_per_custom_dev_operator():
    files = handoff_files(document())
    assert sorted(files) == ["op_desc_opassess_two__gated_tanh.json", "op_desc_opassess_two__row_rescale.json",
                             "op_plugin_opassess_two__gated_tanh.yaml", "op_plugin_opassess_two__row_rescale.yaml",
                             "repro_opassess_two__gated_tanh.py", "repro_opassess_two__row_rescale.py",
                             "test_opassess_two__gated_tanh.py", "test_opassess_two__row_rescale.py",
                             "ticket_opassess_two__gated_tanh.md", "ticket_opassess_two__row_rescale.md",
                             "verify_apis.txt"]
    ticket = files["ticket_opassess_two__gated_tanh.md"]
    assert "# Kernel request: `opassess_two::gated_tanh`" in ticket
    assert "| 1 | `[[4, 32], [4, 32]]` | float32, float32 | `{}` | 1 |" in ticket
    assert "Calls in one forward pass: 1. FLOP share of the model:" in ticket
    assert "tests/models/two_custom_ops.py:" in ticket  # the call site, relative to the project


def test_verify_list_is_one_qualified_api_per_line():
    lines = [line for line in handoff_files(document())["verify_apis.txt"].splitlines() if not line.startswith("#")]
    names = [line.split("#")[0].strip() for line in lines]
    assert sorted(names) == ["opassess_two::gated_tanh", "opassess_two::row_rescale"]  # Linear: direct, high confidence
    assert to_verify({"category": "direct", "known": True, "reasons": [{"code": "decomposes"}]}).startswith("medium")
    assert to_verify({"category": "direct", "known": True, "reasons": [], "risk": {"likelihood": 1}}) is None


def test_verify_list_on_910A_is_atlas_a2s_plus_the_operators_whose_kernel_facts_the_page_contradicts():
    """The torch_npu API pages mark no API for Atlas training series (910A): that silence (api-undocumented) says
    nothing of one operator, so it is no reason to verify it (tests/models/bert_shaped.py: every operator carried
    api-undocumented on 910A and the list named them all; its kernels' docs all list the 910, so its list is A2's);
    a kernel whose doc marks the product ✘ and falls back to the aclop path (kernel-product) is: integer
    repeat_interleave, whose aclnnRepeatInterleaveInt is ✘ on the 910."""
    def listed(path, product):
        doc = build_view(assess(ScanOptions(target=str(path), product=product))).document
        return [line for line in handoff_files(doc)["verify_apis.txt"].splitlines() if not line.startswith("#")]

    assert listed(MODELS / "bert_shaped.py", "910A") == listed(MODELS / "bert_shaped.py", "Atlas A2")
    path = MODELS / "int_repeat_interleave.py"
    on_a2 = listed(path, "Atlas A2")
    assert listed(path, "910A") == [*on_a2, "Tensor.repeat_interleave  # low confidence: kernel-product"]


def test_reproduction_runs_and_calls_the_operator_with_the_captured_signature(tmp_path):
    written = write_handoffs(document(), tmp_path / "handoff")
    repro = tmp_path / "handoff" / "repro_opassess_two__row_rescale.py"
    assert repro in written
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, str(repro)], cwd=ROOT, capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "signature 1 on cpu: opassess_two::row_rescale -> [(4, 32)]" in run.stdout


def test_cli_writes_the_hand_offs(tmp_path):
    out = tmp_path / "h"
    result = CliRunner().invoke(app, ["scan", str(MODELS / "two_custom_ops.py"), "-f", "json", "-o",
                                      str(tmp_path / "r.json"), "--handoff", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "verify_apis.txt").is_file() and len(list(out.glob("repro_*.py"))) == 2


def test_file_stem():
    assert file_stem("opassess_examples::fused_bias_gelu") == "opassess_examples__fused_bias_gelu"
    assert file_stem("torch.nn.LSTM") == "torch_nn_LSTM"
