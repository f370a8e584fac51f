"""`opassess source` and `scan --source` through typer's CliRunner on the GPU training project: every site with its
category in the JSON report (valid against the schema), every format showing the sites, SARIF at the exact line,
the gates, a baseline with a new site, the model file's own project imports, and `kb show` from the source facts."""
from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest
from typer.testing import CliRunner

from opassess.ci.snapshot import read_snapshot
from opassess.cli import app
from opassess.report.document import build_document
from tests.report.support import example_files, real_assessment
from tests.source.support import write_project

runner = CliRunner()

# (file, line, kind, category): the sites of the training project (test_source_scan.py checks every one)
EXPECTED = [
    ("train.py", 10, "guarded-import", "param-converted"),  # try: import flash_attn except ImportError
    ("train.py", 14, "precision-note", "direct"),  # cudnn.benchmark: a note, not work
    ("train.py", 19, "triton-kernel", "custom-dev"),  # tl.atomic_add on int64
    ("train.py", 28, "backend-string", "direct"),  # init_process_group("nccl")
    ("train.py", 31, "gpu-api", "param-converted"),  # DataParallel
    ("train.py", 32, "library-call", "param-converted"),  # apex FusedAdam
    ("train.py", 33, "gpu-api", "direct"),  # GradScaler
    ("train.py", 37, "library-call", "param-converted"),  # flash_attn_func
    ("csrc/kernels.cu", 8, "cuda-kernel", "custom-dev"),
    ("setup.py", 4, "cpp-extension", "custom-dev"),
]
MLP = """
import torch
from torch import nn

def build_model():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

def example_inputs():
    return (torch.randn(2, 8),)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the checkout: SARIF paths are relative to it
    write_project(tmp_path / "proj")
    return tmp_path


def _json(args):
    result = runner.invoke(app, [*args, "-f", "json", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _validator():
    schema = json.loads(resources.files("opassess.report").joinpath("assessment.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def test_source_json_has_every_site_with_its_category(project):
    document = _json(["source", "proj"])
    _validator().validate(document)
    sites = {(s["file"], s["line"], s["kind"]): s for s in document["source_findings"]}
    for file, line, kind, category in EXPECTED:
        assert sites[(file, line, kind)]["category"] == category
    fa = sites[("train.py", 37, "library-call")]
    assert fa["evidence"] == ["third_party_kernel_libs.tsv:3 flash_attn (direct calls)"]
    assert "softcap" in fa["notes"][0] and fa["person_days"]["likely"] == 0.5
    kernel = sites[("train.py", 19, "triton-kernel")]
    assert kernel["size"] == {"lines": 7, "kernels": 1, "apis": ["arange", "atomic_add", "full", "load", "program_id"]}
    assert sites[("train.py", 14, "precision-note")]["person_days"]["likely"] == 0.0
    # no model: no operators and no model-level activities; the total is the sites' (rounded to 2 decimals each)
    assert document["operators"] == [] and document["summary"]["activities"] == []
    total = sum(s["person_days"]["likely"] for s in document["source_findings"])
    assert document["summary"]["person_days"]["likely"] == pytest.approx(total, abs=0.05)
    assert document["model"]["capture"]["method"] == "none" and document["source"]["files"] == [
        "csrc/bind.cpp", "csrc/kernels.cu", "setup.py", "train.py"]


@pytest.mark.parametrize("fmt", ["terminal", "md", "html", "csv", "sarif", "junit"])
def test_every_format_shows_the_sites(project, fmt):
    result = runner.invoke(app, ["source", "proj", "-f", fmt, "-o", "-", "-q"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for text in ("count_kernel", "zigzag_kernel", "flash_attn.flash_attn_func", "apex.optimizers.FusedAdam"):
        assert text in result.stdout, (fmt, text)
    if fmt not in ("sarif", "junit"):  # code scanning and test dashboards get work only, no notes
        assert "torch.backends.cudnn.benchmark" in result.stdout


def test_sarif_places_each_site_at_its_line_in_the_checkout(project):
    result = runner.invoke(app, ["source", "proj", "-f", "sarif", "-o", "-", "-q"])
    run = json.loads(result.stdout)["runs"][0]
    located = {(r["properties"]["subject"], r["ruleId"]):
               r["locations"][0]["physicalLocation"] for r in run["results"] if "subject" in r["properties"]}
    kernel = located[("count_kernel", "source/custom-dev")]
    assert kernel["artifactLocation"] == {"uri": "proj/train.py", "uriBaseId": "%SRCROOT%"}
    assert kernel["region"] == {"startLine": 19}
    assert located[("zigzag_kernel", "source/custom-dev")]["region"] == {"startLine": 8}
    assert not any(subject == "torch.cuda.set_device" for subject, _ in located)  # direct: nothing to annotate
    rule_ids = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    assert all(r["ruleIndex"] == rule_ids.index(r["ruleId"]) for r in run["results"])


def test_fail_on_custom_dev_fails_on_the_custom_dev_sites(project):
    result = runner.invoke(app, ["source", "proj", "--fail-on", "custom-dev", "-f", "junit", "-o", "r.xml", "-q"])
    assert result.exit_code == 3
    assert "train.py: count_kernel (triton-kernel): custom-dev, a source site at train.py:19" in result.stderr
    assert "flash_attn" not in result.stderr  # param-converted: not a custom-dev breach
    failed = [case.get("name") for case in ET.parse(project / "r.xml").iter("testcase")
              if case.find("failure") is not None]
    # count_kernel, the extension and what it builds (zigzag_kernel, rotary_kernel: no name match, its runtime calls)
    assert "train.py: count_kernel (triton-kernel)" in failed and len(failed) == 5
    assert runner.invoke(app, ["source", "proj", "--fail-on", "param-converted", "-q"]).exit_code == 3
    assert runner.invoke(app, ["source", "proj", "--max-person-days", "1000", "-q"]).exit_code == 0


def test_a_new_site_shows_as_added_against_a_baseline(project):
    assert runner.invoke(app, ["source", "proj", "-f", "json", "-o", "old.json", "-q"]).exit_code == 0
    (project / "proj" / "train.py").write_text("# a line above every site\n" + (project / "proj" / "train.py")
                                               .read_text(encoding="utf-8"), encoding="utf-8")
    (project / "proj" / "csrc" / "extra.cu").write_text("__global__ void quux_kernel(int* h) {\n  h[0] = 1;\n}\n",
                                                        encoding="utf-8")
    result = runner.invoke(app, ["source", "proj", "--baseline", "old.json", "--fail-on-new", "--fail-on",
                                 "custom-dev", "-f", "json", "-o", "new.json"])
    assert result.exit_code == 3, result.output
    assert "csrc/extra.cu: quux_kernel (cuda-kernel)" in result.stderr
    assert "count_kernel" not in result.stderr  # moved down a line: the same site, not a new one
    diff = runner.invoke(app, ["diff", "old.json", "new.json", "-f", "json"])
    added = [c for c in json.loads(diff.stdout)["changes"] if c["change"] == "added"]
    assert [c["op"] for c in added] == ["csrc/extra.cu: quux_kernel (cuda-kernel)"]


def test_scan_with_source_puts_both_in_one_report(project):
    (project / "mlp.py").write_text(MLP, encoding="utf-8")
    alone = _json(["scan", "mlp.py"])
    both = _json(["scan", "mlp.py", "--source", "proj"])
    _validator().validate(both)
    assert [o["op"] for o in both["operators"]] == [o["op"] for o in alone["operators"]]
    assert alone["source_findings"] == []
    # relative to the common root of --source and the model file; the MLP itself has no GPU-specific line
    assert ("proj/train.py", 19) in {(s["file"], s["line"]) for s in both["source_findings"]}
    assert all(s["file"].startswith("proj/") for s in both["source_findings"])
    assert "mlp.py" in both["source"]["files"]
    # the MLP reaches none of proj's code: its sites are present, not reached by this model, and costed apart
    sites = sum(s["person_days"]["likely"] for s in both["source_findings"])
    assert all(s["reached"] is False for s in both["source_findings"])
    assert both["summary"]["person_days"]["likely"] == pytest.approx(alone["summary"]["person_days"]["likely"])
    assert both["summary"]["present"]["person_days"]["likely"] == pytest.approx(sites, abs=0.05)
    assert not any("count_kernel" in key for row in both["risk_matrix"] for cell in row for key in cell)


def test_scan_alone_scans_the_model_file_s_own_project_imports(project):
    (project / "gpu_utils.py").write_text(textwrap.dedent("""
        import torch

        def sync():
            torch.cuda.synchronize()
    """), encoding="utf-8")
    (project / "net.py").write_text("import gpu_utils\n" + MLP, encoding="utf-8")
    document = _json(["scan", "net.py"])
    found = {(s["file"], s["subject"]) for s in document["source_findings"]}
    assert ("gpu_utils.py", "torch.cuda.synchronize") in found
    assert not any(s["file"].startswith("proj/") for s in document["source_findings"])  # not imported: not scanned
    assert document["source"]["files"] == ["gpu_utils.py", "net.py"]


def test_a_missing_source_path_is_one_line_and_exit_1(project):
    result = runner.invoke(app, ["source", "nowhere"])
    assert result.exit_code == 1 and "nowhere: no such file or directory" in result.stderr
    assert "Traceback" not in result.output
    (project / "boom.py").write_text("raise SystemExit('model code ran')\n", encoding="utf-8")
    result = runner.invoke(app, ["scan", "boom.py", "--source", "nowhere"])  # refused before the model file runs
    assert result.exit_code == 1 and "nowhere: no such file or directory (--source)" in result.stderr


@pytest.mark.parametrize(("name", "expected"), [
    ("flash_attn.flash_attn_func", ["param-converted", "third_party_kernel_libs.tsv:3", "dropped features:",
                                    "npu_fusion_attention"]),
    ("torch.cuda.synchronize", ["direct", "transfer_to_npu_patches.tsv:6", "torch_npu.npu.synchronize"]),
])
def test_kb_show_answers_from_the_source_facts(name, expected):
    result = runner.invoke(app, ["kb", "show", name])
    assert result.exit_code == 0, result.output
    for text in expected:
        assert text in result.stdout


@pytest.mark.parametrize("name", [p.stem for p in example_files()])
def test_the_examples_own_files_add_no_site_of_their_own(name):
    """The auto project scan reads each example file; a site it finds there (F.scaled_dot_product_attention) is a
    captured operator already: carried by it, costed 0, shown once (so the golden reports do not change)."""
    document = build_document(real_assessment(name))
    assert document["source"]["files"] == [f"{name}.py"]
    assert all(site["covered_by"] and site["person_days"]["likely"] == 0 for site in document["source_findings"])
    assert read_snapshot(document).operators == read_snapshot({**document, "source_findings": []}).operators


def test_portfolio_totals_include_the_sites(project):
    from opassess.portfolio.plan import plan_portfolio
    from opassess.score.weights.load import load_weights

    snapshot = read_snapshot(_json(["source", "proj"]))
    sites = [o for o in snapshot.operators if o.kind == "source"]
    assert len(sites) == 17  # 19 findings, 2 of them precision notes: notes are not work
    plan, demands, standalone, shared = plan_portfolio([("proj", "Atlas A2", snapshot)] * 2, load_weights())
    one = sum(o.person_days.likely for o in sites)
    assert standalone.likely == pytest.approx(2 * one)
    assert shared.likely == pytest.approx(one)  # the same sites in the same files: paid once
    assert {d.op for d in demands} >= {"train.py: count_kernel (triton-kernel)"}


def test_a_graph_break_gate_on_a_source_scan_is_refused(tmp_path):
    """`opassess source` runs no model, so it has no graph breaks: --fail-on graph-break could never fire (it used
    to pass with exit 0, a CI job believing it was gated); it is a usage error (exit 2) naming `opassess scan`."""
    code = tmp_path / "train.py"
    code.write_text("import torch\n\n@torch.compile(backend='cudagraphs')\ndef f(x):\n    return x.item()\n")
    result = runner.invoke(app, ["source", str(code), "-q", "--fail-on", "graph-break", "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 2, result.output
    assert "opassess scan" in result.output and not (tmp_path / "r.json").exists()
