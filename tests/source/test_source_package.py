"""Tests for opassess.source.package on a tree shaped like a kernel library (tests/source/support.LIBRARY): the tree's
own imports are not a third-party library, the extension it builds is linked to its import and priced once as its
kernels (a .cu of template instantiations counted as kernel source), each autotune list is one site, a file named
twice is scanned once, a source-only report's summary counts its sites, and the two kernel variants are alternatives:
with `scan MODEL --source` each model pays for the variant it reaches (issue 23, item 3)."""
from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from opassess.cli import app
from opassess.score.estimate import estimate
from opassess.score.source_cost import estimate_sources
from opassess.score.weights.load import load_weights
from opassess.source import scan_sources
from opassess.source.package import own_modules
from opassess.vocabulary import Category
from tests.source.support import DEFORMABLE, PACKAGED, ROPE, write_library, write_tree

WEIGHTS = load_weights()


@pytest.fixture
def library(tmp_path):
    return write_library(tmp_path / "lib")


def test_the_tree_s_own_modules_are_never_a_third_party_library(library):
    scan = scan_sources(library)
    assert own_modules(library.rglob("*.py")) >= {"mamba_ssm", "setup"}
    # mamba_ssm is in the third-party table; here it is the scanned package, so its imports and calls are no sites
    assert not [f for f in scan.findings if f.subject.startswith("mamba_ssm")]
    assert not [f for f in scan.findings if f.kind in ("library-import", "library-call")]


def test_the_built_extension_is_linked_to_its_import_and_priced_once_as_its_kernels(library):
    scan = scan_sources(library)
    ext = next(f for f in scan.findings if f.kind == "cpp-extension")
    assert not [f for f in scan.findings if "selective_scan_cuda" in f.subject]  # its import is no site of its own
    # the import (line 5) and the call selective_scan_cuda.fwd(x) (line 13)
    assert any("builds module selective_scan_cuda, imported or called at mamba_ssm/ops/scan_interface.py:5, "
               "mamba_ssm/ops/scan_interface.py:13" in n for n in ext.notes)
    assert ext.links == ("mamba_ssm/ops/scan_interface.py:5", "mamba_ssm/ops/scan_interface.py:13")
    # its size: the kernel of the header its .cu includes (6 lines) + the .cu of template instantiations (3 lines)
    assert (ext.size.kernels, ext.size.lines) == (1, 6 + 3)
    built = {f.kind: f.built_by for f in scan.findings if f.file.startswith("csrc/")}
    assert built == {"cuda-kernel": "setup.py:5", "native-binding": "setup.py:5"}
    sites = {s.finding.kind: s for s in estimate_sources(scan.findings, (), WEIGHTS, scan.root)}
    # custom-dev [1, 2, 5] + 1 kernel x [2, 4, 8] + 9 lines / 100 x [1, 2, 4], once; its kernel costs nothing more
    assert sites["cpp-extension"].person_days.likely == pytest.approx(2 + 4 + 0.18)
    assert sites["cuda-kernel"].person_days.likely == 0 and sites["native-binding"].person_days.likely == 0


def test_each_autotune_list_is_one_site(library):
    configs = [f for f in scan_sources(library).findings if f.kind == "triton-config"]
    # a module-level list of four triton.Config and the three in @triton.autotune(configs=[...]): two sites
    assert [(f.file, f.line) for f in configs] == [("mamba_ssm/ops/triton/ssd.py", 4),
                                                   ("mamba_ssm/ops/triton/ssd.py", 8)]
    assert all(f.category == Category.PARAM_CONVERTED and "num_warps" in f.npu_route for f in configs)


def test_a_file_named_twice_is_scanned_once(library):
    twice = scan_sources([library / "mamba_ssm" / "modules" / "mamba_v1.py", library], root=library)
    once = scan_sources(library)
    assert twice.findings == once.findings and len(twice.files) == len(set(twice.files))


def test_the_tree_is_priced_without_its_own_imports(library):
    scan = scan_sources(library)
    result = estimate((), _empty(), WEIGHTS, source=estimate_sources(scan.findings, (), WEIGHTS, scan.root),
                      model_level=False)
    # the extension 6.18 + the Triton kernel 1.52 + two autotune lists 0.5 + 0.1 + two device strings 0.05 each
    assert result.total.likely == pytest.approx(6.18 + 1.52 + 0.6 + 0.1, abs=0.01)


def test_a_source_only_summary_counts_its_sites(library, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["source", "lib", "-f", "md", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    counts = Counter(str(f.category) for f in scan_sources(library).findings)
    assert f"| Source sites | **{sum(counts.values())}** (" in result.stdout
    assert f"| Custom development | **{counts['custom-dev']}** ({counts['param-converted']} param-converted, " \
           f"{counts['direct']} direct) |" in result.stdout
    assert counts["custom-dev"] == 2


def _empty():
    from tests.score.records import inventory

    return inventory([])


MODEL_V2 = """
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mamba_ssm.modules.mamba_v2 import MambaV2  # noqa: E402


def build_model():
    return MambaV2()


def example_inputs():
    return (torch.randn(64),)
"""


def test_scan_with_source_prices_what_the_model_reaches_and_sets_the_rest_apart(library, tmp_path, monkeypatch):
    """A model using the Triton variant (v2) of the library: its kernel (launched), autotune lists and device string
    are reached and priced; the CUDA variant (v1: the extension, its kernel and binding, its device string) is
    present, not reached by this model, costed apart and out of the total."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.py").write_text(MODEL_V2, encoding="utf-8")
    monkeypatch.chdir(tmp_path / "model")
    result = CliRunner().invoke(app, ["scan", "model.py", "--source", "../lib", "-f", "json", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    reached = {(f["file"].removeprefix("lib/"), f["kind"]): f["reached"] for f in document["source_findings"]}
    assert reached == {
        ("mamba_ssm/ops/triton/ssd.py", "triton-kernel"): True,  # launched: triton:ssd_kernel in the capture
        ("mamba_ssm/ops/triton/ssd.py", "triton-config"): True,
        ("mamba_ssm/modules/mamba_v2.py", "device-string"): True,
        ("mamba_ssm/modules/mamba_v1.py", "device-string"): False,
        ("setup.py", "cpp-extension"): False, ("csrc/scan_fwd_kernel.cuh", "cuda-kernel"): False,
        ("csrc/scan.cpp", "native-binding"): False}
    present = [f for f in document["source_findings"] if not f["reached"]]
    summary = document["summary"]
    assert summary["present"]["sites"] == len(present) == 4
    assert summary["present"]["person_days"]["likely"] == pytest.approx(
        sum(f["person_days"]["likely"] for f in present), abs=0.02)
    assert summary["by_category"]["custom-dev"]["likely"] == 0  # the extension is present only: not in the total
    kernel = next(f for f in document["source_findings"] if f["kind"] == "triton-kernel")
    assert kernel["operators"] == ["triton:ssd_kernel"]


MODEL_V1 = MODEL_V2.replace("mamba_v2 import MambaV2", "mamba_v1 import MambaV1").replace("MambaV2()", "MambaV1()")


def _scan_with_source(tmp_path, monkeypatch, model: str) -> dict:
    folder = tmp_path / f"model_{abs(hash(model))}"
    folder.mkdir()
    (folder / "model.py").write_text(model, encoding="utf-8")
    monkeypatch.chdir(folder)
    result = CliRunner().invoke(app, ["scan", "model.py", "--source", "../lib", "-f", "json", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_kernel_variants_are_alternatives_each_model_pays_for_the_one_it_reaches(library, tmp_path, monkeypatch):
    """The library's two kernel variants are not summed for a model: the CUDA variant's model (v1) reaches the
    extension (priced once, as its kernels) and sets the Triton kernel and its autotune lists apart as present; the
    Triton variant's model (v2) the other way round. What both reach together is the whole tree, each site once: a
    source-only scan (no model to say which variant is used) prices the library's port, every variant."""
    v1, v2 = (_scan_with_source(tmp_path, monkeypatch, model) for model in (MODEL_V1, MODEL_V2))

    def reached(document):
        return {(f["file"].removeprefix("lib/"), f["kind"], f["line"]) for f in document["source_findings"]
                if f["reached"]}

    sites = {(f["file"].removeprefix("lib/"), f["kind"], f["line"]) for f in v1["source_findings"]}
    assert reached(v1) & reached(v2) == set() and reached(v1) | reached(v2) == sites  # alternatives, nothing lost
    kinds = {kind for _, kind, _ in reached(v1)}
    assert kinds == {"cpp-extension", "cuda-kernel", "native-binding", "device-string"}  # the CUDA variant
    ext = next(f for f in v1["source_findings"] if f["kind"] == "cpp-extension")
    assert ext["person_days"]["likely"] == pytest.approx(2 + 4 + 0.18)  # priced once, as its kernels
    assert not any(f["kind"] in ("library-import", "library-call") for f in v1["source_findings"])  # own imports: 0
    assert v1["summary"]["by_category"]["custom-dev"]["likely"] == pytest.approx(6.18, abs=0.01)
    assert v2["summary"]["by_category"]["custom-dev"]["likely"] == 0
    # each model's present total is the other variant's reached cost
    for this, other in ((v1, v2), (v2, v1)):
        own = sum(f["person_days"]["likely"] for f in other["source_findings"] if f["reached"])
        assert this["summary"]["present"]["person_days"]["likely"] == pytest.approx(own, abs=0.02)
    scan = scan_sources(library)
    alone = estimate((), _empty(), WEIGHTS, source=estimate_sources(scan.findings, (), WEIGHTS, scan.root),
                     model_level=False)
    both = sum(f["person_days"]["likely"] for doc in (v1, v2) for f in doc["source_findings"] if f["reached"])
    assert alone.total.likely == pytest.approx(both, abs=0.02)


def test_scan_with_source_summary_counts_the_reached_sites_it_prices(library, tmp_path, monkeypatch):
    """The CUDA variant's model reaches the extension (custom-dev, ★★★★★, priced in the total) while every captured
    operator is direct: the summary said 'Custom development 0' and a one-star operator as the highest risk above
    it. It counts the reached sites as a source-only summary counts its sites; present ones stay out, as from the
    total."""
    document = _scan_with_source(tmp_path, monkeypatch, MODEL_V1)
    priced = [f for f in document["source_findings"] if f["reached"]]
    custom = document["summary"]["categories"]["custom-dev"] + sum(f["category"] == "custom-dev" for f in priced)
    assert custom >= 1 and all(f["category"] != "custom-dev" for f in document["source_findings"]
                               if not f["reached"])
    worst = max(priced, key=lambda f: (f["risk"]["stars"], f["person_days"]["likely"]))
    assert worst["kind"] == "cpp-extension" and worst["risk"]["stars"] == 5
    result = CliRunner().invoke(app, ["scan", "model.py", "--source", "../lib", "-f", "md", "-o", "-", "-q"])
    assert result.exit_code == 0, result.output
    assert f"| Custom development | **{custom}** (" in result.stdout
    subject = worst["subject"].replace("_", "\\_")  # Markdown-escaped
    assert f"| Highest risk | **★★★★★** ({worst['file']}:{worst['line']} {subject}) |" in result.stdout


# ---------------------------------------------------------------- the project's own CUDA extensions (issue 37, item 6)


def _by_kind(scan) -> dict:
    return {(f.file, f.kind): f for f in scan.findings}


def test_a_call_of_the_project_s_built_extension_is_its_custom_dev_extension_naming_the_cu_source(tmp_path):
    scan = scan_sources(write_tree(tmp_path / "rope", ROPE))
    sites = _by_kind(scan)
    extension = sites[("setup.py", "cpp-extension")]
    assert extension.category == Category.CUSTOM_DEV
    # the import (line 2) and the call `rope_cuda.forward(...)` (line 14) of the module it builds are its links: one
    # custom-dev item, priced as its one kernel, whose notes name the .cu it is built from
    assert extension.links == ("model.py:2", "model.py:14")
    notes = [str(n) for n in extension.notes]
    assert "sources: csrc/rope.cpp, csrc/rope.cu" in notes
    assert extension.size is not None and extension.size.kernels == 1
    assert sites[("csrc/rope.cu", "cuda-kernel")].built_by == "setup.py:6"
    assert not [f for f in scan.findings if f.file == "model.py"]  # the call is no site of its own (not direct)


def test_a_builder_bound_to_a_name_with_globbed_sources_is_found_with_its_kernels(tmp_path):
    """Deformable DETR's models/ops: `extension = CUDAExtension` then `extension(name, sources)`, the sources globbed
    when setup.py runs; the built module is imported and called by the package's interface module."""
    scan = scan_sources(write_tree(tmp_path / "detr", DEFORMABLE))
    sites = _by_kind(scan)
    extension = sites[("ops/setup.py", "cpp-extension")]
    assert extension.category == Category.CUSTOM_DEV
    assert any("builds module MultiScaleDeformableAttention," in str(n) for n in extension.notes)
    assert extension.links == ("ops/functions/ms_deform_attn_func.py:4", "ops/functions/ms_deform_attn_func.py:10")
    notes = [str(n) for n in extension.notes]
    assert notes[0] == ("its sources are computed when ops/setup.py runs: taken as the C++/CUDA files under its "
                        "folder")
    assert "sources: ops/src/cuda/ms_deform_attn_cuda.cu, ops/src/vision.cpp" in notes
    assert sites[("ops/src/cuda/ms_deform_attn_cuda.cu", "cuda-kernel")].built_by == "ops/setup.py:19"
    # the builder's name is the extension's site, not a CUDAExtension reference of its own; os.path.join(dir, "cuda",
    # "*.cu") names a folder, not a CUDA device
    assert [(f.line, f.subject) for f in scan.findings if f.file == "ops/setup.py"] == [
        (16, "torch.cuda.is_available"), (19, "torch.utils.cpp_extension.CUDAExtension")]


def test_a_package_s_own_compiled_module_is_linked_from_absolute_and_relative_imports(tmp_path):
    scan = scan_sources(write_tree(tmp_path / "boxes", PACKAGED))
    extension = _by_kind(scan)[("setup.py", "cpp-extension")]
    assert any("builds module boxes._C," in str(n) for n in extension.notes)
    assert extension.links == ("boxes/layers/roi.py:1", "boxes/ops.py:1", "boxes/ops.py:5")
    assert "sources: boxes/csrc/nms.cu" in [str(n) for n in extension.notes]  # the glob 'boxes/csrc/*.cu', matched
    assert _by_kind(scan)[("boxes/csrc/nms.cu", "cuda-kernel")].built_by == "setup.py:4"
