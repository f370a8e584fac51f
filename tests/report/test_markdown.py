"""Markdown report: golden files on the examples, GitHub structures present, model strings escaped."""
from __future__ import annotations

import re

import pytest

from opassess.report import render
from opassess.report.templates import code_span, escape_markdown
from tests.report.support import (
    check_golden,
    empty_assessment,
    example_files,
    hostile_assessment,
    model_assessment,
    real_assessment,
    scrubbed,
    synthetic_example,
)


@pytest.mark.parametrize("name", [p.stem for p in example_files()])
def test_golden(name):
    # The whole pipeline on each example (real assess(): capture, knowledge base, weights.toml, fixed-seed Monte
    # Carlo), volatile fields scrubbed. A change to any stage that moves a report shows here as a reviewed diff:
    # regenerate with UPDATE_GOLDEN=1 and read the diff before committing it.
    check_golden(f"{name}.md", render(scrubbed(real_assessment(name)), "md"))


def test_structure_of_the_hand_built_report():
    text = render(synthetic_example("resnet_like"), "md")
    assert text.startswith("# Ascend NPU migration assessment: ResNet18\n")
    # one headline: P50 with its band alone on its row, the sums on a labelled row below (issue 40)
    assert ("| Estimated effort | **27.5 person-days (P10-P90 23.1-32.4)** |\n"
            "| Sums of the ranges | most likely values 27.5, lows and highs 21.0\u201336.0 |") in text
    assert "| Profile | default: figures are assumptions until calibrated" in text
    assert "## Action items\n\n- **custom-dev**: " in text
    assert '```mermaid\npie showData title Operator types by category\n    "direct" : 5\n' in text
    assert "> **20/80:** 5 of 8 operator types (62%) carry 84% of the operators' estimated effort: " in text
    assert "| **5** almost certain | \U0001F7E8 | \U0001F7E7 | \U0001F7E5 | \U0001F7E5 `torch.nn.AdaptiveAvgPool2d` |" \
        in text
    assert text.count("<details>") == text.count("</details>") == 3
    assert "## Unknown operators" in text and "## Performance findings" in text
    assert "\n\n\n" not in text  # blank-line runs collapsed


def test_tables_have_consistent_columns():
    text = render(real_assessment("transformer_lm"), "md")
    for block in re.findall(r"(?:^\|.*\|\n)+", text, flags=re.M):
        rows = block.splitlines()
        widths = {len(re.findall(r"(?<!\\)\|", row)) for row in rows}
        assert len(widths) == 1, rows[:3]


def test_hostile_names_are_inert(tmp_path):
    text = render(hostile_assessment(tmp_path), "md")
    outside_code = re.sub(r"(`+).*?\1", "", text)  # code spans show markup literally on GitHub
    assert "<script" not in outside_code and "<img" not in outside_code
    assert "# Ascend NPU migration assessment: &lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_escape_helpers():
    assert escape_markdown("a|b_c<d>") == "a\\|b\\_c&lt;d&gt;"
    assert escape_markdown("[x](javascript:y)") == "\\[x\\](javascript:y)"
    assert str(code_span("a|b")) == "`a\\|b`"
    assert str(code_span("x`y")) == "``x`y``"
    assert str(code_span("`x")) == "`` `x ``"


def test_a_model_without_operators_reads_cleanly():
    # nn.Identity(): no operator, no effort. No empty bold "****" (a thematic break or stray stars on GitHub), no
    # "0 of 0 operator types ... effort: ." sentence, and no Mermaid pie without slices (Mermaid draws an error).
    text = render(empty_assessment(), "md")
    assert "****" not in text
    assert "20/80" not in text
    assert "```mermaid" not in text
    assert "| Highest risk | **none** (no operator to port) |" in text


def test_a_deprecated_replacement_is_said_in_the_summary_and_the_evidence():
    text = render(model_assessment("nms"), "md")
    summary = text[:text.index("## Categories")]
    assert ("> **Deprecated replacement:** `torchvision::nms` -> `torch_npu.npu_nms_v4` is deprecated in the facts, "
            "no successor.") in summary
    assert "- Replacement: `torch_npu.npu_nms_v4` (deprecated, no successor)" in text
