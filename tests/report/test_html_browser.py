"""The HTML report opened in a real headless Chromium: it renders, sorts, filters, expands, stays offline, runs no
injected script. Driven over the DevTools protocol on a pipe (tests/report/browser.py); screenshots go to
test-artifacts/. Skipped only when no Chromium is installed (Debian: apt-get install chromium)."""
from __future__ import annotations

import json

import pytest

from opassess.report import render
from tests.report.browser import Browser, chromium_path
from tests.report.support import ARTIFACTS, hostile_assessment, real_assessment

CHROMIUM = chromium_path()
pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="no chromium executable on PATH (apt-get install chromium)"),
              pytest.mark.slow]

OPS = "Array.from(document.querySelectorAll('#ops > tbody.op'))"


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """transformer_lm's report opened once; the tests below run in file order and share the page."""
    assessment = real_assessment("transformer_lm")
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render(assessment, "html"), encoding="utf-8")
    with Browser(CHROMIUM) as browser:
        browser.open(path.as_uri())
        yield browser, assessment, path.as_uri()


def _visible(browser, selector):
    """How many elements match and have a non-empty box on screen."""
    return browser.evaluate(
        f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
        ".filter(e => {{ const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }}).length")


def _type_filter(browser, text):
    browser.evaluate(f"{{ const f = document.getElementById('filter'); f.value = {json.dumps(text)};"
                     "f.dispatchEvent(new Event('input')); }")


def test_risk_matrix_chart_and_table_render(page):
    browser, assessment, _ = page
    operators = len(assessment.inventory.operators)
    assert _visible(browser, "#risk-matrix td.cell") == 25
    assert _visible(browser, "#risk-matrix .chip") == operators  # every operator sits in exactly one cell
    costed = sum(1 for op in assessment.estimate.ops if op.person_days.likely > 0)  # zero-cost ones get no bar
    assert _visible(browser, "#pareto-chart rect.bar") == min(costed, 21)
    assert browser.evaluate("document.querySelector('#pareto-chart polyline.cumulative').getBBox().width") > 100
    assert _visible(browser, "#ops > tbody.op > tr.main") == operators
    assert _visible(browser, "#ops tr.detail") == 0  # evidence rows start collapsed


def test_clicking_a_header_sorts(page):
    browser, assessment, _ = page
    report_order = browser.evaluate(f"{OPS}.map(b => b.dataset.op)")
    browser.evaluate("document.querySelector('#ops th[data-key=op]').click()")
    assert browser.evaluate(f"{OPS}.map(b => b.dataset.op)") == sorted(report_order)
    assert browser.evaluate("document.querySelector('#ops th[data-key=op]').getAttribute('aria-sort')") == "ascending"
    browser.evaluate("document.querySelector('#ops th[data-key=op]').click()")
    assert browser.evaluate(f"{OPS}.map(b => b.dataset.op)") == sorted(report_order, reverse=True)
    browser.evaluate("document.querySelector('#ops th[data-key=count]').click()")  # numbers: largest first
    counts = browser.evaluate(f"{OPS}.map(b => Number(b.dataset.count))")
    assert counts == sorted((o.count for o in assessment.inventory.operators), reverse=True)
    browser.evaluate("document.querySelector('#ops th[data-key=rank]').click()")
    browser.evaluate("document.querySelector('#ops th[data-key=rank]').click()")  # back to report order
    assert browser.evaluate(f"{OPS}.map(b => b.dataset.op)") == report_order


def test_filter_box_hides_rows(page):
    browser, assessment, _ = page
    expected = sum(1 for o in assessment.inventory.operators if "linear" in o.key.lower()
                   or any("linear" in m.lower() for m in o.modules))
    assert expected >= 1
    _type_filter(browser, "Linear")
    assert _visible(browser, "#ops > tbody.op > tr.main") == expected
    total = len(assessment.inventory.operators)
    assert browser.evaluate("document.getElementById('shown-count').textContent") == \
        f"{expected} of {total} operator types"
    _type_filter(browser, "")
    assert _visible(browser, "#ops > tbody.op > tr.main") == total


def test_row_expands_to_its_evidence(page):
    browser, _, _ = page
    browser.evaluate("document.querySelector('#ops > tbody.op button.toggle').click()")
    assert _visible(browser, "#ops tr.detail") == 1
    assert browser.evaluate("document.querySelector('#ops > tbody.op tr.detail').innerText").count("ATEN OPS") == 1


def test_no_request_leaves_the_page_and_no_script_error(page):
    browser, _, url = page
    assert browser.requests() == [url]  # the file itself, nothing else
    errors = [e["params"] for e in browser.events if e["method"] in ("Runtime.exceptionThrown",)]
    assert errors == []
    violations = [e["params"]["entry"]["text"] for e in browser.events
                  if e["method"] == "Log.entryAdded" and e["params"]["entry"].get("level") == "error"]
    assert violations == []


def test_screenshot_artifact(page):
    browser, _, _ = page
    target = ARTIFACTS / "report-transformer_lm.png"
    browser.screenshot(target)
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 50_000


def test_hostile_names_do_not_run(tmp_path):
    path = tmp_path / "hostile.html"
    path.write_text(render(hostile_assessment(tmp_path), "html"), encoding="utf-8")
    with Browser(CHROMIUM) as browser:
        browser.open(path.as_uri())
        assert browser.evaluate("document.title") == "Ascend NPU migration assessment: <script>alert(1)</script>"
        assert browser.evaluate("document.scripts.length") == 1
        assert browser.evaluate("document.images.length") == 0
        assert browser.evaluate("document.querySelector('h1').textContent").endswith("<script>alert(1)</script>")
        assert [e for e in browser.events if e["method"] == "Page.javascriptDialogOpening"] == []
        browser.screenshot(ARTIFACTS / "report-hostile.png")


def test_the_policy_blocks_a_script_that_escaping_let_through(tmp_path):
    """Defence in depth: were escaping to fail, an inline script in the page does not run, since the policy lists
    only the hash of the page's own script; that script still runs (its table sorts)."""
    page = render(real_assessment("resnet_like"), "html")
    injected = page.replace("<body>", "<body><script>document.title = 'injected ran'</script>", 1)
    path = tmp_path / "injected.html"
    path.write_text(injected, encoding="utf-8")
    with Browser(CHROMIUM) as browser:
        browser.open(path.as_uri())
        assert browser.evaluate("document.scripts.length") == 2
        assert browser.evaluate("document.title") != "injected ran"
        browser.evaluate("document.querySelector('#ops th[data-key=op]').click()")
        assert browser.evaluate("document.querySelector('#ops th[data-key=op]').getAttribute('aria-sort')") \
            == "ascending"


def test_the_request_check_sees_a_page_that_fetches(tmp_path):
    """Control for the offline check above: a user template that loads an image is caught doing so."""
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "html.j2").write_text('<!DOCTYPE html><title>t</title><img src="http://127.0.0.1:9/pixel.png">\n')
    path = tmp_path / "fetching.html"
    path.write_text(render(real_assessment("resnet_like"), "html", templates_dir=templates), encoding="utf-8")
    with Browser(CHROMIUM) as browser:
        browser.open(path.as_uri())
        assert browser.requests() == [path.as_uri(), "http://127.0.0.1:9/pixel.png"]


@pytest.mark.parametrize(("language", "heading", "counted"), [
    ("zh-CN", "风险矩阵", "显示 {n} / 8 种算子类型"),
    ("en", "Risk matrix", "{n} of 8 operator types"),
])
def test_the_report_in_each_language(tmp_path, language, heading, counted):
    # The DOM in Chromium: the page's language, translated headings and filter count (html.js reads its format
    # from the page), operator names as written, and no header, column head or card text cut off by its box.
    assessment = real_assessment("resnet_like")
    path = tmp_path / f"report-{language}.html"
    path.write_text(render(assessment, "html", language=language), encoding="utf-8")
    with Browser(CHROMIUM) as browser:
        browser.open(path.as_uri())
        assert browser.evaluate("document.documentElement.lang") == language
        assert heading in browser.evaluate("Array.from(document.querySelectorAll('h2')).map(h => h.textContent)")
        names = browser.evaluate(f"{OPS}.map(b => b.dataset.op)")
        assert "torch.nn.Conv2d" in names and len(names) == 8  # identifiers are never translated
        _type_filter(browser, "norm")
        shown = browser.evaluate(f"{OPS}.filter(b => !b.hidden).length")
        assert 1 <= shown < 8
        assert browser.evaluate("document.getElementById('shown-count').textContent") == counted.format(n=shown)
        clipped = browser.evaluate(
            "Array.from(document.querySelectorAll('header *, th, .card-label, .card-value'))"
            ".filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflow !== 'visible')"
            ".map(e => e.textContent)")
        assert clipped == []
        # the first Pareto label stays inside the chart; risk-matrix chips are one line (cut with an ellipsis,
        # the full name in their title), never broken mid-word
        assert browser.evaluate("document.querySelector('#pareto-chart .bar-label').getBoundingClientRect().left"
                                " >= document.querySelector('#pareto-chart').getBoundingClientRect().left")
        heights = browser.evaluate("Array.from(document.querySelectorAll('#risk-matrix .chip'))"
                                   ".map(c => c.getBoundingClientRect().height)")
        assert heights and max(heights) < 2 * min(heights)
        browser.screenshot(ARTIFACTS / f"report-resnet_like-{language}.png")
