"""The reason-code registry (opassess/reasons.py): every code the classifier gives is registered once, the data files,
the JSON schema and docs/reasons.md agree with it, and `opassess explain CODE` prints a code's summary."""
from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import opassess.classify
import opassess.reasons
from opassess.cli import app
from opassess.errors import ConfigError
from opassess.handoff import CHECK_REASONS
from opassess.reasons import EXCLUSION_CODES, REASONS, ReasonCode, reason_code
from opassess.records import ClassifiedOp, Operator, Reason
from opassess.score.weights.load import load_weights
from opassess.vocabulary import Category
from tests.support import EXAMPLES, ROOT

sys.path.insert(0, str(ROOT / "tools"))
from reason_docs import OUT, reasons_markdown  # noqa: E402

CLASSIFY = Path(opassess.classify.__file__).parent
SCHEMA = ROOT / "opassess" / "report" / "assessment.schema.json"


def given_codes() -> dict[str, list[tuple[str, str | None]]]:
    """code -> [(where, the category the call passes: 'DIRECT', ..., None)] for every `Reason("code", ...)` (or
    `Reason.of`) and `j.add(CODE, ..., category=...)` (or `j.add_message`; CODE a constant of opassess/reasons.py,
    which mypy holds the call to) written in the classify package."""
    found: dict[str, list[tuple[str, str | None]]] = {}
    for path in sorted(CLASSIFY.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            first = node.args[0]
            is_reason = (isinstance(node.func, ast.Name) and node.func.id == "Reason") or (
                isinstance(node.func, ast.Attribute) and node.func.attr == "of"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "Reason")
            is_add = isinstance(node.func, ast.Attribute) and node.func.attr in ("add", "add_message")
            constant = getattr(opassess.reasons, first.id, None) if isinstance(first, ast.Name) else None
            if is_add and isinstance(constant, ReasonCode):
                code = constant.code
            elif is_reason and isinstance(first, ast.Constant) and isinstance(first.value, str):
                code = first.value
            else:
                continue
            at = 4 if is_add and node.func.attr == "add_message" else 3  # add_message: code, template, params, ...
            category = node.args[at] if is_add and len(node.args) > at else next(
                (k.value for k in node.keywords if k.arg == "category"), None)
            name = category.attr if isinstance(category, ast.Attribute) else None
            found.setdefault(code, []).append((f"{path.name}:{node.lineno}", name))
    return found


def test_every_code_the_classifier_gives_is_registered_and_every_registered_code_is_given():
    given = given_codes()
    unregistered = {code: [where for where, _ in calls] for code, calls in given.items() if code not in REASONS}
    assert not unregistered, f"register these in opassess/reasons.py: {unregistered}"
    assert set(REASONS) - set(given) == set(), "registered codes the classifier never gives"
    assert len(given) >= 30  # the walk sees the package (33 codes when written)


def test_a_code_decides_no_harder_category_than_registered():
    for code, calls in given_codes().items():
        decides = REASONS[code].decides
        for where, name in calls:
            if name is None:
                continue
            assert decides is not None, f"{where}: {code} decides {name}, registered as deciding nothing"
            assert Category[name].rank <= decides.rank, f"{where}: {code} decides {name}, registered {decides}"


def test_a_code_is_registered_once():
    before = dict(REASONS)
    with pytest.raises(ValueError, match="'param-limit' is registered twice"):
        reason_code("param-limit", "again")
    with pytest.raises(ValueError, match="lower-case"):
        reason_code("Param Limit", "not a code")
    assert REASONS == before


def test_the_exclusion_trail_is_the_codes_registered_as_exclusions():
    assert EXCLUSION_CODES == {"view-op", "host-op", "composite", "cpu-only-decomposition", "taken-whole",
                               "decomposes", "options-only", "kernel-dtype", "host-copy", "kernel-product",
                               "kernel-param", "replacement", "host-factory"}
    relu = Operator("torch.relu", "function", 1, (), (), ("aten::relu",), (), ())
    op = ClassifiedOp(operator=relu, category="direct", signature_categories=(),
                      reasons=(Reason("kernel", "m", "e"), Reason("view-op", "m", "e")),
                      replacement=None, cann_op=None, known=True, aten_support={})
    assert [r.code for r in op.exclusions] == ["view-op"]


def test_the_schema_enums_equal_the_registry():
    schema = json.loads(SCHEMA.read_text())
    operator = schema["$defs"]["operator"]["properties"]
    assert operator["reasons"]["items"]["properties"]["code"]["enum"] == list(REASONS)
    exclusions = operator["exclusions"]["items"]["properties"]["code"]["enum"]
    assert exclusions == [code for code in REASONS if code in EXCLUSION_CODES]


def test_codes_named_in_code_are_registered():
    assert set(CHECK_REASONS) <= set(REASONS)
    weights = load_weights()
    named = {*weights.effort.limit_reasons, *weights.risk.likelihood.ai_cpu_reason_codes,
             *weights.signals.special_attrs.reason_codes, *weights.signals.version_compat.reason_codes,
             *weights.signals.pipeline.reasons, *weights.signals.dtype_support.reasons}
    assert "param-limit" in named and named <= set(REASONS)


@pytest.mark.parametrize("text, key", [
    ('[effort]\nlimit_reasons = ["dtype", "param-limt"]\n', "'effort.limit_reasons'"),
    ('[risk.likelihood]\nai_cpu_reason_codes = ["cpu_fallback"]\n', "'risk.likelihood.ai_cpu_reason_codes'"),
    ('[signals.special_attrs]\nreason_codes = ["param limit"]\n', "'signals.special_attrs.reason_codes'"),
    ('[signals.pipeline.reasons]\ncpu-fallbak = 0.8\n', "'signals.pipeline.reasons.cpu-fallbak'"),
])
def test_a_mistyped_reason_code_in_weights_is_refused_naming_file_and_key(tmp_path, text, key):
    path = tmp_path / "weights.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_weights(path)
    message = str(info.value)
    assert message.startswith(f"{path}: key {key}: unknown reason code") and "\n" not in message


def test_a_mistyped_reason_code_exits_1_with_one_line(tmp_path):
    path = tmp_path / "weights.toml"
    path.write_text('[effort]\nlimit_reasons = ["param-limt"]\n')
    result = CliRunner().invoke(app, ["scan", str(EXAMPLES / "resnet_like.py"), "--weights", str(path), "-q"])
    assert result.exit_code == 1
    assert f"{path}: key 'effort.limit_reasons': unknown reason code 'param-limt'" in result.output
    assert "Traceback" not in result.output


def test_explain_prints_a_reason_codes_summary():
    result = CliRunner().invoke(app, ["explain", "param-limit"])
    assert result.exit_code == 0
    assert result.output.startswith(f"param-limit (opassess reason code): {REASONS['param-limit'].summary}")
    assert "param-converted" in result.output
    trail = CliRunner().invoke(app, ["explain", "view-op"]).output
    assert "decides no category" in trail and "exclusion trail" in trail


def test_docs_reasons_page_is_current():
    assert OUT.read_text(encoding="utf-8") == reasons_markdown(), "run: python tools/reason_docs.py"
    assert all(f"| `{code}` |" in OUT.read_text(encoding="utf-8") for code in REASONS)


def _compared_with_code(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, literal) for each string literal a `<x>.code` equals or is looked up in: `x.code == "a"`,
    `"a" != x.code`, `x.code in ("a", "b")` (not `"*" in x.code`, a substring test)."""
    def is_code(side: ast.AST) -> bool:
        return isinstance(side, ast.Attribute) and side.attr == "code"

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or len(node.ops) != 1:
            continue
        left, right, op = node.left, node.comparators[0], node.ops[0]
        if isinstance(op, (ast.Eq, ast.NotEq)) and (is_code(left) or is_code(right)):
            other = right if is_code(left) else left
        elif isinstance(op, (ast.In, ast.NotIn)) and is_code(left):
            other = right
        else:
            continue
        items = other.elts if isinstance(other, (ast.Tuple, ast.List, ast.Set)) else [other]
        found += [(node.lineno, i.value) for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    return found


def test_every_code_the_code_compares_by_name_is_registered():
    """Design review move 8: `reason.code == "kernel-prodcut"` would silently never match; every literal a `.code`
    is compared with is a registered reason code (or a time-model penalty code, perf/records.PENALTIES)."""
    from opassess.perf.records import PENALTIES

    known = set(REASONS) | set(PENALTIES)
    unknown = [f"{path.relative_to(ROOT)}:{line}: {literal!r}"
               for path in sorted((ROOT / "opassess").rglob("*.py"))
               for line, literal in _compared_with_code(ast.parse(path.read_text(encoding="utf-8")))
               if literal not in known]
    assert unknown == []
    assert _compared_with_code(ast.parse('r.code == "dtype" or "*" in r.code or p.code in ("a", "b")')) == [
        (1, "dtype"), (1, "a"), (1, "b")]
