"""HTML report: golden files on the examples, self-contained (nothing fetched), everything from the model escaped."""
from __future__ import annotations

import html.parser
import re

import pytest

from opassess.report import render
from tests.report.support import (
    check_golden,
    example_files,
    hostile_assessment,
    model_assessment,
    real_assessment,
    scrubbed,
    synthetic_example,
)


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


def test_a_deprecated_replacement_is_badged_in_the_operator_row_and_said_in_the_summary():
    text = render(model_assessment("nms"), "html")
    summary = text[text.index('<section id="summary"'):text.index("</section>", text.index('<section id="summary"'))]
    assert "<code>torch_npu.npu_nms_v4</code> is deprecated in the facts, no successor." in summary
    row = re.search(r'<tr class="main">(?:(?!</tr>).)*torchvision::nms(?:(?!</tr>).)*</tr>', text, re.S).group(0)
    assert 'class="badge deprecated"' in row and "no successor" in row


def test_compute_shares_are_kept_apart_from_the_findings_to_act_on():
    text = render(real_assessment("transformer_lm"), "html")
    findings = text[text.index('<section id="findings"'):text.index("</section>", text.index('<section id="findings"'))]
    actions = findings[:findings.index('<details class="compute-shares">')]
    shares = findings[findings.index('<details class="compute-shares">'):]
    assert "npu_fusion_attention" in actions and "of the FLOPs" not in actions
    assert shares.count("<tr><td>") == 6 and "impact in the risk matrix only" in shares


def test_the_20_80_badge_marks_only_a_few_operators():
    # transformer_lm: most operator types carry the 80%: no badge; nms (3 types): the one or two that carry it
    many = render(real_assessment("transformer_lm"), "html")
    assert 'class="badge pareto"' not in many
    few = render(model_assessment("nms"), "html")
    assert 'class="badge pareto"' in few


def test_details_open_without_javascript_and_the_page_prints_on_a4():
    text = render(synthetic_example("resnet_like"), "html")
    noscript = re.search(r"<noscript><style>(.*?)</style></noscript>", text).group(1)
    assert "#ops tr.detail[hidden] { display: table-row; }" in noscript
    assert "@page { size: A4;" in text and "@media print" in text
