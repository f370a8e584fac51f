"""Report languages: --lang and the locale, the zh-CN catalog (complete, with English as the fallback), numbers for
the locale, and every human format rendered in both languages with identifiers left as they are."""
from __future__ import annotations

import json
import re

import pytest
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from opassess.ci.diff import diff_snapshots
from opassess.ci.diff.format import render_diff
from opassess.ci.policy import Policy, evaluate
from opassess.ci.snapshot import read_snapshot
from opassess.ci.summary import render_summary
from opassess.errors import ReportError
from opassess.findings.catalog import extract_patterns
from opassess.findings.patterns import load_patterns
from opassess.report import render
from opassess.report.i18n import (
    gettext,
    language_from_environment,
    load_catalog,
    number,
    resolve_language,
    translations,
)
from opassess.resources import package_path
from opassess.source.catalog import extract_source_facts, said_contexts
from opassess.source.facts import clauses, load_source_facts
from tests.ci.records import op, report
from tests.report.language import english_sentences
from tests.report.support import ROOT, model_assessment, synthetic_example

CJK = re.compile(r"[\u4e00-\u9fff]")
PO = package_path("locale", "zh_CN", "LC_MESSAGES", "opassess.po")


@pytest.mark.parametrize(("environ", "expected"), [
    ({"LANG": "zh_CN.UTF-8"}, "zh-CN"),
    ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, "zh-CN"),  # LANGUAGE first
    ({"LC_ALL": "en_GB.UTF-8", "LANG": "zh_CN.UTF-8"}, "en"),  # LC_ALL before LANG
    ({"LC_MESSAGES": "zh_TW"}, "zh-CN"),
    ({"LANG": "C.UTF-8"}, "en"),
    ({"LANG": "fr_FR.UTF-8"}, "en"),  # no catalog: English
    ({}, "en"),
])
def test_the_locale_picks_the_language(environ, expected):
    assert language_from_environment(environ) == expected
    assert resolve_language(None, environ) == expected


def test_lang_accepts_the_usual_spellings_and_refuses_others():
    assert [resolve_language(v, {}) for v in ("zh-CN", "zh_CN", "ZH-cn", "zh", "en")] == ["zh-CN"] * 4 + ["en"]
    with pytest.raises(ReportError, match="unknown report language 'de'"):
        resolve_language("de", {})


def test_a_missing_or_fuzzy_translation_falls_back_to_english(tmp_path):
    po = tmp_path / "opassess.po"
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
                  'msgid "Summary"\nmsgstr "概要"\n\n#, fuzzy\nmsgid "Risk"\nmsgstr "风险"\n\n'
                  'msgid "Range"\nmsgstr ""\n', encoding="utf-8")
    messages = load_catalog(po, "zh-CN")
    assert messages.gettext("Summary") == "概要"
    assert messages.gettext("Risk") == "Risk" and messages.gettext("Range") == "Range"
    assert messages.gettext("Not in any catalog") == "Not in any catalog"
    assert gettext("zh-CN", "Not in any catalog") == "Not in any catalog" and gettext("en", "Summary") == "Summary"


PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|%[sd]|\{\w+(?::[^}]*)?\}")  # %(name)s, %d, {name}, {share:.1%}


def extracted_messages() -> set[str]:
    """Every message id `make messages` extracts, with babel.cfg's own mapping (the code, the templates and the
    patterns.toml extractor)."""
    with (ROOT / "babel.cfg").open(encoding="utf-8") as handle:
        method_map, options = parse_mapping_cfg(handle)
    return {message for _, _, message, _, _ in extract_from_dir(
        str(ROOT), method_map, options_map=options, keywords={"_": None, "gettext": None, "N_": None})}


def test_the_zh_cn_catalog_translates_every_message_of_the_code_and_templates():
    extracted = extracted_messages()
    with PO.open("rb") as handle:
        catalog = read_po(handle)
    translated = {m.id for m in catalog if m.id and m.string and not m.fuzzy}
    assert len(extracted) > 150
    assert sorted(extracted - translated) == []
    for message in catalog:  # placeholders survive translation: the same %(name)s / {name} set on both sides
        if message.id:
            assert sorted(PLACEHOLDER.findall(message.id)) == sorted(PLACEHOLDER.findall(message.string)), message.id


def test_every_pattern_title_and_effect_is_a_catalog_message(tmp_path):
    # patterns.toml stays the one place a pattern is written: its sentences reach the catalog through babel.cfg's
    # extractor, so a pattern added without a translation fails the catalog test above
    book = load_patterns()
    assert set(book.texts()) <= extracted_messages()
    assert {p.title for p in book.patterns} | set(book.effects.values()) <= set(book.texts())
    added = (ROOT / "opassess" / "data" / "patterns.toml").read_text(encoding="utf-8") + (
        '\n[[pattern]]\nid = "gelu-alone"\nkind = "fusion"\ntitle = "A lone GELU ({count}x)"\nsteps = ["gelu"]\n'
        'npu_api = ""\n')
    (tmp_path / "patterns.toml").write_text(added, encoding="utf-8")
    with (tmp_path / "patterns.toml").open("rb") as handle:
        found = [message for _, _, message, _ in extract_patterns(handle, (), (), {})]
    assert "A lone GELU ({count}x)" in found and gettext("zh-CN", "A lone GELU ({count}x)") == "A lone GELU ({count}x)"
    assert gettext("zh-CN", book.patterns[0].title) != book.patterns[0].title


def test_every_shown_source_fact_text_is_a_catalog_message(tmp_path):
    # source_facts.json (generated by tools/kb_source.py) stays the one place a library's route and notes are written:
    # the texts a report shows reach the catalog through babel.cfg's extractor, whole and as a reason quotes them
    facts = load_source_facts()
    flash = next(lib for lib in facts.libraries if lib.route.startswith("hand-map to torch_npu.npu_fusion_attention"))
    shown = {text for lib in facts.libraries for text in (lib.route, lib.route.split(";")[0], lib.dropped,
                                                         lib.dropped.split(";")[0], lib.category_note,
                                                         lib.context, *clauses(lib.dropped)) if text}
    shown |= {rule.npu_equivalent for rule in facts.rules if rule.npu_equivalent}
    assert flash.route in shown and shown <= extracted_messages()
    said = gettext("zh-CN", flash.dropped)
    assert "NPU" in said and "padding_mask" in said and "is not supported" not in said
    # a citation's context is said, its table, row and library name kept
    citation = f"{flash.cite}; rules.toml: attention"
    assert said_contexts(citation, lambda text: gettext("zh-CN", text)) == \
        f"third_party_kernel_libs.tsv:{flash.row} flash_attn (直接调用); rules.toml: attention"
    assert said_contexts(citation, lambda text: gettext("en", text)) == citation
    data = json.loads(facts.path.read_text(encoding="utf-8"))
    data["libraries"][0]["route"] = "a route regenerated with new words"
    (tmp_path / "source_facts.json").write_text(json.dumps(data), encoding="utf-8")
    with (tmp_path / "source_facts.json").open("rb") as handle:
        found = [message for _, _, message, _ in extract_source_facts(handle, (), (), {})]
    assert "a route regenerated with new words" in found  # then untranslated: the catalog test above fails
    assert gettext("zh-CN", "a route regenerated with new words") == "a route regenerated with new words"


def test_numbers_for_the_locale():
    assert number(11689512, "en") == number(11689512, "zh-CN") == "11,689,512"
    assert number(4.456, "en", 1) == "4.5"


HUMAN = {
    "terminal": ("迁移类别", "Categories"),
    "md": ("## 概要", "## Summary"),
    "html": ("<h2>风险矩阵</h2>", "<h2>Risk matrix</h2>"),
}


@pytest.mark.parametrize("fmt", sorted(HUMAN))
def test_every_human_format_renders_in_both_languages(fmt):
    assessment = synthetic_example("resnet_like")
    chinese, english = (render(assessment, fmt, language=lang) for lang in ("zh-CN", "en"))
    zh_marker, en_marker = HUMAN[fmt]
    assert zh_marker in chinese and en_marker in english
    assert not CJK.search(english)
    # technical identifiers are never translated: operator names and categories appear as written
    for name in ("torch.nn.Conv2d", "direct"):
        assert name in chinese
    if fmt == "html":
        assert '<html lang="zh-CN">' in chinese and '<html lang="en">' in english


def test_machine_formats_stay_english():
    assessment = synthetic_example("resnet_like")
    for fmt in ("json", "csv", "sarif", "junit"):
        assert render(assessment, fmt, language="zh-CN") == render(assessment, fmt, language="en")


def test_the_deprecated_replacement_headline_in_chinese_keeps_the_api_names():
    text = render(model_assessment("nms"), "md", language="zh-CN")
    assert "`torchvision::nms` -> `torch_npu.npu_nms_v4` 在事实库中已标记为废弃，没有后继接口。" in text


def test_step_summary_and_diff_render_in_both_languages():
    base = [op("torch.nn.Conv2d", "direct")]
    new = base + [op("mylib::fused", "custom-dev", days=(10.0, 12.0, 16.0), kind="custom")]
    diff = diff_snapshots(read_snapshot(report("m.py", base)), read_snapshot(report("m.py", new)))
    zh_diff, en_diff = (render_diff(diff, "md", language=lang) for lang in ("zh-CN", "en"))
    assert "## opassess：`m.py` 与基线的对比" in zh_diff and "### 新增" in zh_diff and "`mylib::fused`" in zh_diff
    assert "## opassess: `m.py` against its baseline" in en_diff and not CJK.search(en_diff)
    assert render_diff(diff, "json", language="zh-CN") == render_diff(diff, "json")
    snapshot = read_snapshot(report("m.py", new))
    zh_summary = render_summary(snapshot, diff_markdown=zh_diff, language="zh-CN")
    assert "需定制开发的算子" in zh_summary and "`mylib::fused`" in zh_summary
    assert "Custom-dev operator" in render_summary(snapshot)


def test_reasons_built_from_message_ids_read_in_chinese_and_stay_english_in_json():
    assessment = model_assessment("nms")
    reasons = [r for op in assessment.classified for r in op.reasons if r.code == "kernel"]
    assert reasons and all(r.template and r.message == r.template % dict(r.params) for r in reasons)
    aten = dict(reasons[0].params)["op"]
    text = render(assessment, "md", language="zh-CN")
    assert re.search(re.escape(aten.replace("_", "\\_")) + r" 在 torch \S+ 下有 NPU 算子实现", text)
    assert "has an NPU kernel for torch" not in text
    assert "has an NPU kernel for torch" in render(assessment, "json", language="zh-CN")


@pytest.mark.parametrize("name", ["findings_llm", "attention_sinks", "findings_dynamic"])
def test_finding_titles_and_effects_read_in_chinese_and_stay_english_in_json(name):
    assessment = model_assessment(name)
    findings = [f for f in assessment.findings if f.kind != "compute"]
    assert findings and all(f.message is not None and f.message.text() == f.title for f in findings)
    zh = translations("zh-CN").gettext
    text = render(assessment, "md", language="zh-CN")
    section = text.split("\n## 性能发现\n")[1].split("\n## ")[0].replace("\\", "")  # the score breakdown quotes too
    for finding in findings:
        title = finding.message.text(zh)
        assert CJK.search(title) and title != finding.title
        assert CJK.search(zh(finding.effect))
        cjk_run = max(re.findall(r"[\u4e00-\u9fff]+", title), key=len)  # Markdown escapes the identifiers around it
        assert cjk_run in section and finding.title.split(" (")[0] not in section  # no English title beside it
    document = json.loads(render(assessment, "json", language="zh-CN"))
    assert [f["title"] for f in document["findings"]] == [f.title for f in assessment.findings]
    assert [f["effect"] for f in document["findings"]] == [f.effect for f in assessment.findings]


def test_graph_mode_reasons_fixes_and_notes_read_in_chinese_and_stay_english_in_json():
    assessment = model_assessment("graph_breaks")
    breaks = [b for backend in assessment.graph_mode.backends for b in backend.breaks]
    assert breaks and all(b.message is not None and b.message.text() == b.reason for b in breaks)
    text = render(assessment, "md", language="zh-CN")
    section = text.split("\n## 图模式\n")[1].split("\n## ")[0]
    assert "仅凭捕获看不到 Python 层面的断图" in section and "主机同步：" in section
    assert english_sentences(section) == []
    actions = text.split("\n## 行动项\n")[1]
    assert "将该值保留在设备上" in actions and "keep the value on the device" not in actions
    document = json.loads(render(assessment, "json", language="zh-CN"))
    reasons = [b["reason"] for backend in document["graph_mode"]["backends"].values() for b in backend["breaks"]]
    assert reasons == [b.reason for b in breaks] and any("reads a device value on the host" in r for r in reasons)


def test_source_sites_routes_and_notes_read_in_chinese_and_stay_english_in_json():
    assessment = model_assessment("gpu_only")
    text = render(assessment, "md", language="zh-CN")
    section = text.split("\n## 源码发现")[1].split("\n## ")[0]
    assert "调用时 'cuda' 被替换为 'npu'" in section and "先执行：atten\\_mask = torch.triu(" in section
    assert "becomes 'npu' at call time" not in section and "first: " not in section
    assert "6 行，1 个 kernel：arange、load" in section  # API names listed with the reader's separator
    sites = json.loads(render(assessment, "json", language="zh-CN"))["source_findings"]
    assert "'cuda' becomes 'npu' at call time" in [s["npu_route"] for s in sites]
    assert any(n.startswith("first: atten_mask = ") for s in sites for n in s.get("notes", ()))


def test_policy_breaches_in_the_step_summary_read_in_chinese_and_stay_english_elsewhere():
    base = [op("torch.nn.Conv2d", "direct")]
    new = base + [op("mylib::fused", "custom-dev", days=(10.0, 12.0, 16.0), kind="custom")]
    policy = Policy(fail_on=("custom-dev",), max_person_days=5.0)
    diff = diff_snapshots(read_snapshot(report("m.py", base)), read_snapshot(report("m.py", new)))
    breaches = evaluate(diff, policy)
    messages = [b.message for b in breaches]
    assert any(m.startswith("new mylib::fused: custom-dev, ") for m in messages)
    assert any(m.startswith("estimated effort (") and " grew by " in m for m in messages)
    snapshot = read_snapshot(report("m.py", new))
    zh = render_summary(snapshot, breaches=breaches, language="zh-CN")
    assert "- 新增 mylib::fused：custom-dev，1 次调用（位于 m.py:1）（--fail-on custom-dev）" in zh
    assert "增加了 12.0 人天" in zh and "超过 --max-person-days 5" in zh and "grew by" not in zh
    assert " grew by 12.0 person-days " in render_summary(snapshot, breaches=breaches)


def test_the_diff_says_an_unknown_operator_and_its_breaches_in_chinese():
    base = [op("torch.nn.Conv2d", "direct")]
    new = base + [op("mylib::fused", "custom-dev", days=(10.0, 12.0, 16.0), kind="custom", known=False)]
    diff = diff_snapshots(read_snapshot(report("m.py", base)), read_snapshot(report("m.py", new)))
    breaches = evaluate(diff, Policy(fail_on=("unknown",)))
    zh, en = (render_diff(diff, "md", breaches=breaches, language=lang) for lang in ("zh-CN", "en"))
    assert "custom-dev（知识库未收录）" in zh and "- 新增 mylib::fused：知识库未收录，" in zh
    assert "custom-dev (unknown)" in en and "- new mylib::fused: unknown to the knowledge base, " in en
