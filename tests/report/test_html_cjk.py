"""The zh-CN HTML report in a real headless Chromium shows Chinese glyphs, not boxes (issue 30, item 4).

A missing glyph is drawn as the same box whatever the character, so two different Chinese characters drawn alike
mean boxes; drawn differently, and unlike a code point no font has, they are glyphs (checked failing with a
fontconfig that sees only DejaVu). The screenshot goes to test-artifacts/. Skipped only when Chromium or a CJK
font is absent (Debian: apt-get install chromium fonts-noto-cjk, as .ci/run does).
"""
from __future__ import annotations

import base64
import shutil
import subprocess

import pytest

from opassess.report import render
from tests.report.browser import Browser, chromium_path
from tests.report.support import ARTIFACTS, synthetic_example

CHROMIUM = chromium_path()


def _cjk_font() -> bool:
    if shutil.which("fc-list") is None:
        return False
    found = subprocess.run(["fc-list", ":lang=zh", "family"], capture_output=True, text=True, check=False).stdout
    return bool(found.strip())


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="no chromium executable on PATH (apt-get install chromium)"),
    pytest.mark.skipif(not _cjk_font(), reason="no CJK font installed (apt-get install fonts-noto-cjk)"),
]

# Three probes at glyph size: two different Chinese characters of the report, and a private-use code point no font
# draws (always a box), each in the page's own font.
PROBES = """
for (const [id, ch] of [['probe-a', '迁'], ['probe-b', '移'], ['probe-box', '\\u{10FFFD}']]) {
  const s = document.createElement('span'); s.id = id; s.textContent = ch;
  s.style.cssText = 'position:absolute;left:0;top:' + (2000 + 80 * ['probe-a','probe-b','probe-box'].indexOf(id)) +
                    'px;font-size:48px;line-height:64px;width:64px;height:64px;background:#fff;color:#000';
  document.body.appendChild(s);
}
"""

# The main column's box and each section heading's (text, left, right), in page pixels.
MEASURE = """(() => {
  const main = document.querySelector('main').getBoundingClientRect();
  const headings = [...document.querySelectorAll('section > h2')].map(h => {
    const r = h.getBoundingClientRect(); return [h.textContent, r.left, r.right]; });
  return {main: [main.left, main.right], headings: headings};
})()"""


def _shot(browser: Browser, selector: str) -> bytes:
    """The pixels of one element (PNG bytes)."""
    box = browser.evaluate(f"(() => {{ const r = document.querySelector('{selector}').getBoundingClientRect();"
                           " return [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height]; })()")
    clip = {"x": box[0], "y": box[1], "width": box[2], "height": box[3], "scale": 1}
    data = browser.send("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})
    return base64.b64decode(data["data"])


def test_the_zh_cn_html_report_shows_chinese_glyphs_not_boxes(tmp_path):
    path = tmp_path / "report.zh-CN.html"
    path.write_text(render(synthetic_example("resnet_like"), "html", language="zh-CN"), encoding="utf-8")
    with Browser(CHROMIUM) as browser:
        browser.open(path.as_uri())
        assert browser.evaluate("document.documentElement.lang") == "zh-CN"
        family = browser.evaluate("getComputedStyle(document.body).fontFamily")
        assert family.startswith('"PingFang SC"') and "Noto Sans CJK SC" in family  # the :lang(zh) stack applies
        ARTIFACTS.mkdir(exist_ok=True)
        browser.screenshot(ARTIFACTS / "report.zh-CN.png")
        browser.evaluate(PROBES)
        a, b, box = (_shot(browser, f"#{p}") for p in ("probe-a", "probe-b", "probe-box"))
        assert a != b, "two different Chinese characters drew alike: boxes, no CJK glyphs"
        assert box not in (a, b)
        assert "迁移评估" in browser.evaluate("document.querySelector('h1').textContent")
        # every section's heading lies inside the main column, the action items' (once outside <main>) too
        boxes = browser.evaluate(MEASURE)
        assert "行动项" in boxes["headings"][-1][0]
        for text, left, right in boxes["headings"]:
            assert boxes["main"][0] <= left and right <= boxes["main"][1] + 0.5, (text, left, right, boxes["main"])
