"""Integration: a torchvision detection model's reports name paths a reader can use. Needs torchvision (skipped
without it; CI runs this folder under the torch that has it: PYTHONPATH=$PWD python -m pytest tests/integration)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torchvision")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from opassess.report import RenderContext, build_view, render_view  # noqa: E402

MODEL = Path(__file__).resolve().parent / "models" / "detection.py"


@pytest.fixture(scope="module")
def view():
    return build_view(assess(ScanOptions(target=str(MODEL), device="cpu")))


def test_sarif_has_no_location_in_site_packages(view):
    text = render_view(view, "sarif", RenderContext())
    assert "site-packages" not in text
    results = json.loads(text)["runs"][0]["results"]
    assert results  # the detection head's post-processing needs porting work
    for result in results:
        for location in result["locations"]:
            artifact = location["physicalLocation"]["artifactLocation"]
            assert artifact["uriBaseId"] == "%SRCROOT%" and not artifact["uri"].startswith(("/", "file:"))


def test_effort_by_origin_names_torchvision(view):
    summary = view.document["summary"]
    assert "torchvision" in summary["by_origin"]
    assert sum(e["likely"] for e in summary["by_origin"].values()) == pytest.approx(
        summary["person_days"]["likely"], abs=0.05)
    origins = {op["origin"] for op in view.document["operators"]}
    assert "torchvision" in origins


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_markdown_and_html_show_library_paths_relative_to_the_package(view, fmt):
    text = render_view(view, fmt, RenderContext())
    assert "site-packages" not in text
    assert "torchvision/" in text
