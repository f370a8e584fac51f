"""Terminal summary: totals with the range, categories, top operators, risk grid, where the full report is."""
from __future__ import annotations

from opassess.report import render
from tests.report.support import (
    empty_assessment,
    hostile_assessment,
    model_assessment,
    real_assessment,
    synthetic_example,
)


def test_summary_of_the_hand_built_assessment():
    text = render(synthetic_example("resnet_like"), "terminal")
    # the headline is P50 with its P10-P90 band (1.1 x 21, 0.9 x 36), then the three-point sums, never "likely"
    flat = " ".join(text.split())
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("Estimated effort:"))
    assert lines[first] == "Estimated effort: 27.5 person-days (P10-P90 23.1-32.4)"  # one headline, nothing after it
    assert "Sum of the most likely values 27.5, of the lows and highs 21.0\u201336.0." in flat
    assert "; likely " not in flat
    assert "Profile default: figures are assumptions until calibrated" in text
    assert text.rstrip().splitlines()[-1].startswith("- fusion: torch.nn.Conv2d followed by an activation")
    assert "20/80: 5 of 8 operator types (62%) carry 84% of the operators' estimated effort." in text
    assert "custom-dev (unknown)" in text
    assert "Risk matrix (likelihood by impact)" in text and "nn.AdaptiveAvgPool2d" in text
    assert "+3 more" in text  # 5 direct operators in cell L1 x I2: two named, three counted
    assert "Full report: opassess scan examples/resnet_like.py -f html -o resnet_like.html" in text
    assert "\x1b[" not in text  # no ANSI styles unless asked


def test_fixed_width_and_color_on_request():
    assessment = real_assessment("transformer_lm")
    plain = render(assessment, "terminal", width=80)
    lines = plain.splitlines()
    # The closing command line is never wrapped, so it can be pasted; everything else fits the width.
    assert max(len(line) for line in lines if not line.startswith("Full report:")) <= 80
    assert any(line.startswith("Full report:") for line in lines)
    assert "\x1b[" in render(assessment, "terminal", color=True)


def test_markup_in_names_is_printed_not_interpreted(tmp_path):
    text = render(hostile_assessment(tmp_path), "terminal")
    assert "<script>alert(1)</script>" in text  # the class name, verbatim


def test_a_model_without_operators_has_no_pareto_sentence():
    text = render(empty_assessment(), "terminal")
    assert "Estimated effort: 0.0 person-days (P10-P90 0.0-0.0" in text
    assert text.rstrip().endswith("(see the model-level\nactivities).") or "Action items: none" in text
    assert "20/80" not in text  # "0 of 0 operator types (0%) carry 0% of the estimated effort" says nothing


def test_a_deprecated_replacement_is_said():
    text = " ".join(render(model_assessment("nms"), "terminal").split())  # rich wraps at the width
    assert ("Deprecated replacement: torchvision::nms -> torch_npu.npu_nms_v4 is deprecated in the facts, "
            "no successor") in text
