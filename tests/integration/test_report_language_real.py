"""The completeness check (tests/report/language.py) on heavier real models: a bf16 LLM from a tiny Hugging Face
config and a torchvision detection model, their terminal, Markdown and HTML reports in zh-CN. English sentences
beyond the listed allowance fail, and so does an allowance entry no rendering shows any more (it only shrinks)."""
from __future__ import annotations

import functools
from pathlib import Path

import pytest

pytest.importorskip("torchvision")
pytest.importorskip("transformers")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from opassess.report import render  # noqa: E402
from tests.report.language import english_sentences  # noqa: E402

MODELS = Path(__file__).resolve().parent / "models"
SCANS = {
    "llama_bf16": ScanOptions(target=str(MODELS / "hf_tiny.py"), entry="llama", dtype="bfloat16"),
    "detector": ScanOptions(target=str(MODELS / "detector_inputs.py")),
}
ALLOWANCE = Path(__file__).resolve().parent.parent / "data" / "zh_cn_english_left_integration.txt"


@functools.cache
def english_left() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for name, options in SCANS.items():
        assessment = assess(options)
        for fmt in ("terminal", "md", "html"):
            text = render(assessment, fmt, language="zh-CN", width=1000)  # no sentence wrapped in two
            for sentence in english_sentences(text):
                found.setdefault(sentence, []).append(f"{name}/{fmt}")
    return found


def test_zh_cn_reports_of_real_models_have_no_english_sentence_beyond_the_allowance():
    allowed = frozenset(line for line in ALLOWANCE.read_text(encoding="utf-8").splitlines() if line)
    found = english_left()
    new = {s: where for s, where in found.items() if s not in allowed}
    assert new == {}, "English sentences in zh-CN reports (translate them through the catalog):\n" + \
        "\n".join(f"  {s!r}: {', '.join(w[:3])}" for s, w in sorted(new.items()))
    stale = sorted(allowed - set(found))
    assert stale == [], f"translated now: remove from {ALLOWANCE.name}: {stale}"
