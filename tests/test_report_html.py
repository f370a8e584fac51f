"""HTML report: golden files on the examples, self-contained (nothing fetched), everything from the model escaped."""
from __future__ import annotations

import html.parser
import re

import pytest
from report_support import check_golden, example_files, hostile_assessment, real_assessment, scrubbed, synthetic_example

from opassess.report import render


class _Collector(html.parser.HTMLParser):
    """Tags and their attributes, as a browser's tokenizer would see them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _tags(text: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Collector()
    parser.feed(text)
    return parser.tags


@pytest.mark.parametrize("name", [p.stem for p in example_files()])
def test_golden(name):
    # The whole pipeline on each example (real assess(): capture, knowledge base, weights.toml, fixed-seed Monte
    # Carlo), volatile fields scrubbed. A change to any stage that moves a report shows here as a reviewed diff:
    # regenerate with UPDATE_GOLDEN=1 and read the diff before committing it.
    check_golden(f"{name}.html", render(scrubbed(real_assessment(name)), "html"))


@pytest.mark.parametrize("name", [p.stem for p in example_files()])
def test_self_contained(name):
    text = render(real_assessment(name), "html")
    tags = _tags(text)
    assert [t for t, _ in tags].count("script") == 1  # the inline one: no src
    assert not [(t, a) for t, a in tags if {"src", "href", "srcset", "action", "poster", "data"} & set(a)]
    assert not [t for t, _ in tags if t in ("link", "iframe", "object", "embed", "img", "base")]
    assert "@import" not in text and "url(" not in text
    csp = next(a["content"] for t, a in tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy")
    assert csp.startswith("default-src 'none';")


def test_sections_of_the_hand_built_report():
    text = render(synthetic_example("resnet_like"), "html")
    tags = _tags(text)
    cells = [a for t, a in tags if t == "td" and "cell" in (a.get("class") or "")]
    assert len(cells) == 25
    critical = next(a for a in cells if a["data-likelihood"] == "5" and a["data-impact"] == "4")
    assert critical["class"] == "cell heat-critical" and critical["data-count"] == "1"
    bars = [a for t, a in tags if t == "rect" and "bar" in (a.get("class") or "")]
    assert len(bars) == 8 and bars[0]["class"] == "bar cat-custom-dev"
    bodies = [a for t, a in tags if t == "tbody" and a.get("class") == "op"]
    assert [b["data-op"] for b in bodies][:3] == ["torch.nn.AdaptiveAvgPool2d", "torch.nn.BatchNorm2d",
                                                 "torch.nn.MaxPool2d"]
    assert bodies[0]["data-likely"] == "12.0" and bodies[0]["data-stars"] == "5"
    assert sum(1 for t, a in tags if t == "tr" and a.get("class") == "detail" and "hidden" in a) == 8
    assert 'class="card-value">27.5 person-days (P10-P90 23.1-32.4)<' in text
    assert 'id="actions"' in text and "Profile <strong>default</strong>" in text


def test_hostile_names_are_escaped(tmp_path):
    text = render(hostile_assessment(tmp_path), "html")
    tags = _tags(text)
    assert [t for t, _ in tags].count("script") == 1 and "img" not in [t for t, _ in tags]
    assert not any(k.startswith("on") for _, a in tags for k in a)  # no event-handler attribute anywhere
    assert "<title>Ascend NPU migration assessment: &lt;script&gt;alert(1)&lt;/script&gt;</title>" in text
    assert "&lt;img src=x onerror=alert(2)&gt;" in text
    assert re.search(r'data-search="[^"]*&lt;script&gt;alert\(1\)&lt;/script&gt;', text)  # attribute values too
