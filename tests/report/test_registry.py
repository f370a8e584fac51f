"""The reporter registry: every format renders, names are unique, unknown formats and template dirs fail clearly."""
from __future__ import annotations

from dataclasses import replace

import pytest

from opassess.errors import ReportError
from opassess.report import REPORTERS, formats, register, render
from opassess.report.registry import RenderContext
from tests.report.support import empty_assessment, real_assessment, synthetic_example


def test_the_report_formats_are_registered():
    assert {"csv", "html", "json", "md", "terminal"} <= set(formats())
    assert formats() == tuple(sorted(formats()))
    assert {REPORTERS[f].extension for f in ("csv", "html", "json", "md", "terminal")} == \
        {".csv", ".html", ".json", ".md", ".txt"}
    assert all(r.description for r in REPORTERS.values())


@pytest.mark.parametrize("fmt", formats())
def test_every_registered_format_renders_the_model(fmt):
    assessment = real_assessment("resnet_like")
    text = render(assessment, fmt)
    assert isinstance(text, str) and len(text) > 100 and text.endswith("\n")
    assert render(assessment, fmt) == text  # the same assessment always gives the same report


@pytest.mark.parametrize("fmt", formats())
def test_every_registered_format_renders_an_assessment_without_estimate(fmt):
    text = render(replace(synthetic_example("resnet_like"), estimate=None), fmt)
    assert isinstance(text, str) and text.endswith("\n")


@pytest.mark.parametrize("fmt", ["csv", "html", "json", "md", "terminal"])
def test_the_full_formats_name_every_operator(fmt):
    assessment = real_assessment("resnet_like")
    text = render(assessment, fmt)
    # terminal lists the top operators only; ResNet-18 has 8 types, fewer than its top-10 table
    assert [o.key for o in assessment.inventory.operators if o.key not in text] == []


def test_registering_a_name_twice_is_an_error():
    with pytest.raises(ReportError, match="'json' is registered twice"):
        register("json", extension=".json")(lambda view, context: "")
    assert REPORTERS["json"].render.__module__ == "opassess.report.formats.json"  # the original is kept


def test_a_new_format_is_one_registration(monkeypatch):
    monkeypatch.delitem(REPORTERS, "count", raising=False)

    @register("count", extension=".txt")
    def render_count(view, context: RenderContext) -> str:
        """Number of operator types."""
        return f"{len(view.document['operators'])}\n"

    try:
        assert render(synthetic_example("resnet_like"), "count") == "8\n"  # 8 operator types in ResNet18
        assert "count" in formats() and REPORTERS["count"].description == "Number of operator types."
    finally:
        del REPORTERS["count"]


def test_unknown_format_lists_the_known_ones():
    with pytest.raises(ReportError, match=f"unknown report format 'pdf'; choose one of {', '.join(formats())}$"):
        render(synthetic_example("resnet_like"), "pdf")


def test_user_template_overrides_and_missing_ones_fall_back(tmp_path):
    (tmp_path / "md.j2").write_text("custom {{ model.class_name }}: {{ totals.likely_text }} person-days\n")
    assessment = synthetic_example("resnet_like")
    # 27.5 = custom-dev 12 + 2 param-converted x 4 + 5 direct x 1.5 (tests/report/support.py)
    assert render(assessment, "md", templates_dir=tmp_path) == "custom ResNet18: 27.5 person-days\n"
    # html.j2 is not in the directory: the shipped one renders, its included html.css/html.js too.
    assert render(assessment, "html", templates_dir=tmp_path) == render(assessment, "html")


def test_user_template_can_override_an_include(tmp_path):
    (tmp_path / "html.css").write_text("body { color: rebeccapurple; }")
    html = render(synthetic_example("resnet_like"), "html", templates_dir=tmp_path)
    assert "body { color: rebeccapurple; }" in html and "--direct:" not in html


def test_missing_templates_directory_is_an_error(tmp_path):
    with pytest.raises(ReportError, match="templates directory .*nope does not exist"):
        render(synthetic_example("resnet_like"), "md", templates_dir=tmp_path / "nope")


def test_broken_user_template_names_template_and_line(tmp_path):
    (tmp_path / "md.j2").write_text("line one\n{{ no_such_value }}\n")
    with pytest.raises(ReportError, match=r"md\.j2 line 2: 'no_such_value' is undefined"):
        render(synthetic_example("resnet_like"), "md", templates_dir=tmp_path)


@pytest.mark.parametrize("fmt", formats())
def test_every_registered_format_renders_a_model_without_operators(fmt):
    assert render(empty_assessment(), fmt).endswith("\n")
