"""The library API (opassess/__init__.py, docs/library.md): six names, each the object its module defines, loaded on
first use; a model assessed and rendered through them alone."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import opassess
from tests.support import ROOT, TINY


def test_each_public_name_is_the_object_its_module_defines():
    from opassess.assessment import Assessment
    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess
    from opassess.pipeline.sources import assess_sources
    from opassess.report import render_view
    from opassess.report.view import build_view

    expected = {"Assessment": Assessment, "ScanOptions": ScanOptions, "assess": assess,
                "assess_sources": assess_sources, "build_view": build_view, "render_view": render_view}
    assert sorted(opassess.__all__) == sorted(expected)
    assert {name: getattr(opassess, name) for name in opassess.__all__} == expected
    assert set(opassess.__all__) <= set(dir(opassess))
    with pytest.raises(AttributeError, match="no attribute 'asess'"):
        _ = opassess.asess  # type: ignore[attr-defined]


def test_importing_the_package_loads_none_of_them():
    code = "import sys, opassess; print(sorted(m for m in sys.modules if m.startswith(('opassess.', 'torch'))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(loaded.stdout.replace("'", '"')) == []


def test_the_documented_names_are_the_exported_ones():
    page = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    assert all(f"`{name}" in page for name in opassess.__all__)


def test_a_model_assessed_and_rendered_through_the_package_alone(tmp_path):
    model = tmp_path / "tiny.py"
    model.write_text(textwrap.dedent(TINY), encoding="utf-8")
    assessment = opassess.assess(opassess.ScanOptions(target=str(model)))
    assert isinstance(assessment, opassess.Assessment) and assessment.classified
    document = json.loads(opassess.render_view(opassess.build_view(assessment), "json"))
    assert document["model"]["class"] == assessment.model.class_name and {o["op"] for o in document["operators"]} == {
        c.operator.key for c in assessment.classified}
