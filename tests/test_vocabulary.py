"""The JSON schema's enums and the CLI's choices are the vocabularies the code states once."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import opassess
import opassess.report
from opassess.errors import ConfigError
from opassess.findings.patterns import FINDING_CRITERIA, shipped_patterns
from opassess.graphmode import records as graph
from opassess.kb import load_kb
from opassess.perf import records as perf
from opassess.reasons import EXCLUSION_CODES, REASONS
from opassess.report.sections.versions import VERSION_WARNINGS
from opassess.routes.records import EXPORTERS, SERVING_STATUSES, VERDICTS
from opassess.score.cost import COST_BASES
from opassess.score.weights import CRITERIA
from opassess.score.weights.decisions import DECISION_NAMES
from opassess.score.weights.load import load_weights
from opassess.trace import METHODS
from opassess.vocabulary import (
    CAPTURE_STEPS,
    CATEGORIES,
    CONFIDENCES,
    NO_CAPTURE,
    OPERATOR_KINDS,
    CaptureStep,
    Category,
    Confidence,
    CostBasis,
)

CRITERIA_NAMES = {c for names in CRITERIA.values() for c in names}
SCHEMA = json.loads((Path(opassess.report.__file__).parent / "assessment.schema.json").read_text(encoding="utf-8"))


def _enums(node, path=""):
    """Every enum in the schema, by its JSON path."""
    if isinstance(node, dict):
        if "enum" in node:
            yield path, node["enum"]
        for key, value in node.items():
            yield from _enums(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _enums(value, f"{path}/{index}")


def test_schema_categories_are_the_category_vocabulary():
    assert SCHEMA["$defs"]["category"]["enum"] == list(CATEGORIES) == [c.value for c in Category]


def test_schema_operator_kinds_and_capture_steps_are_their_vocabularies():
    operator = SCHEMA["$defs"]["operator"]["properties"]
    capture = SCHEMA["properties"]["model"]["properties"]["capture"]["properties"]
    assert operator["kind"]["enum"] == list(OPERATOR_KINDS) and "optimizer" in OPERATOR_KINDS
    assert capture["step"]["enum"] == list(CAPTURE_STEPS) == [s.value for s in CaptureStep] == ["forward", "train"]
    assert "backward_aten" in operator and operator["backward_aten"]["description"]


def test_schema_capture_methods_are_the_capture_registry():
    capture = SCHEMA["properties"]["model"]["properties"]["capture"]["properties"]
    assert capture["method"]["oneOf"][0]["enum"] == list(METHODS)
    assert capture["method"]["oneOf"][1]["const"] == NO_CAPTURE  # opassess source: no model, no capture
    assert {a for _, e in _enums(SCHEMA) if "fx" in e for a in e} == set(METHODS)


def test_schema_cost_bases_are_the_cost_model_s():
    assert SCHEMA["$defs"]["operator"]["properties"]["cost"]["oneOf"][0]["enum"] == list(COST_BASES) \
        == [b.value for b in CostBasis]


def _confidence_enums():
    """Every confidence enum of the schema (an operator's, a source site's, ...), null dropped where allowed."""
    return [[c for c in enum if c is not None] for _, enum in _enums(SCHEMA) if "medium" in enum]


def test_schema_confidences_are_the_confidence_vocabulary():
    found = _confidence_enums()
    assert found and all(enum == list(CONFIDENCES) == [c.value for c in Confidence] for enum in found)
    assert SCHEMA["$defs"]["operator"]["properties"]["confidence"]["enum"] == [*CONFIDENCES, None]
    assert len(found) >= 2  # an operator's and a source site's


def test_the_string_enums_are_their_words():
    """StrEnum members compare, hash and serialise as their words: records, JSON and goldens keep plain strings."""
    for member in (*Category, *Confidence, *CostBasis, *CaptureStep):
        assert member == member.value and hash(member) == hash(member.value) and f"{member}" == member.value
        assert json.dumps({member: member}) == json.dumps({member.value: member.value})
    assert Confidence.weakest(["high", Confidence.MEDIUM, "low"]) is Confidence.LOW
    assert Confidence.weakest([], default=Confidence.HIGH) is Confidence.HIGH
    assert Confidence.of("low") is Confidence.LOW and Confidence.of("") is None and Confidence.of("certain") is None


def test_schema_decision_names_are_the_decision_rules():
    decisions = SCHEMA["properties"]["summary"]["properties"]["decisions"]["oneOf"][1]["items"]["properties"]
    assert decisions["name"]["enum"] == list(DECISION_NAMES)


def test_every_schema_enum_is_a_known_vocabulary():
    """A new enum in the schema must be tied to a vocabulary here (and tested), not typed a second time."""
    known = {tuple(CATEGORIES), tuple(METHODS), OPERATOR_KINDS, CAPTURE_STEPS,
             ("functional", "performance", "ecosystem"), CONFIDENCES, (*CONFIDENCES, None), tuple(COST_BASES),
             tuple(REASONS), tuple(code for code in REASONS if code in EXCLUSION_CODES),  # tests/test_reasons.py
             DECISION_NAMES, EXPORTERS, (*EXPORTERS, None), VERDICTS, SERVING_STATUSES,
             graph.ALL_VERDICTS, graph.BREAK_KINDS, graph.METHODS, graph.BACKENDS,
             perf.UNITS, perf.BOUNDS, perf.PENALTIES, perf.MEMORY_PARTS, perf.COLLECTIVES, VERSION_WARNINGS}
    unknown = {path: enum for path, enum in _enums(SCHEMA) if tuple(enum) not in known}
    assert not unknown


def test_schema_graph_mode_enums_are_the_graph_mode_vocabularies():
    defs = SCHEMA["$defs"]
    assert defs["graph_verdict"]["properties"]["verdict"]["enum"] == list(graph.ALL_VERDICTS)
    assert defs["graph_break"]["properties"]["kind"]["enum"] == list(graph.BREAK_KINDS)
    assert defs["graph_break"]["properties"]["method"]["enum"] == list(graph.METHODS)
    assert defs["graph_mode"]["properties"]["method"]["enum"] == list(graph.METHODS)
    assert defs["graph_mode"]["properties"]["backend"]["enum"] == list(graph.BACKENDS)
    assert list(defs["graph_mode"]["properties"]["backends"]["properties"]) == list(graph.BACKENDS)


def test_schema_route_enums_are_the_routes_vocabularies():
    onnx, serving = SCHEMA["properties"]["onnx"]["properties"], SCHEMA["properties"]["serving"]["properties"]
    assert onnx["exporter"]["enum"] == [*EXPORTERS, None]
    assert onnx["nodes"]["items"]["properties"]["verdict"]["enum"] == list(VERDICTS)
    assert serving["items"]["items"]["properties"]["status"]["enum"] == list(SERVING_STATUSES)


def test_schema_target_is_a_product_of_the_knowledge_base_by_contract_only():
    """The schema leaves target a free string (an imported overlay can add products); the CLI names the products
    the shipped knowledge base has."""
    assert "enum" not in SCHEMA["properties"]["target"]
    import typing

    from opassess.cli.scan import scan

    option = typing.get_type_hints(scan, include_extras=True)["product"].__metadata__[0]
    named = re.search(r"assessed against: (.*?)\.$", option.help)
    assert named is not None
    assert tuple(re.findall(r"'([^']+)'", named.group(1))) == load_kb().products
    for product in load_kb().product_list.items:  # its short aliases, from products.toml as the names are
        assert all(alias in option.help for alias in product.aliases if " " not in alias), product.name


def test_the_profile_help_is_the_shipped_profiles():
    """--profile's help names every shipped profile with the summary line its file states, so a new profile file is
    listed without a help edit."""
    import typing

    from opassess.cli.scan import scan
    from opassess.resources import shipped_path
    from opassess.score.weights.load import profile_names, profile_path

    option = typing.get_type_hints(scan, include_extras=True)["profile"].__metadata__[0]
    assert re.findall(r"'([^']+)' \(", option.help) == list(profile_names()) and len(profile_names()) >= 2
    for name in profile_names():
        text = (profile_path(name) or shipped_path("weights.toml")).read_text(encoding="utf-8")
        summary = re.search(rf'^# Profile "{name}": (.+)\.$', text, re.M)
        assert summary is not None and f"'{name}' ({summary.group(1)})" in option.help, name


def test_the_capture_help_is_the_capture_registry():
    """--capture's help names the registered methods in their default order, written when the help is shown (the
    registry imports torch; the command line's start-up and the other commands' help do not)."""
    import subprocess
    import sys

    from opassess import trace
    from opassess.trace.methods import LARGE_MODEL_PARAMETERS, capture_order

    code = ("import sys\nfrom typer.testing import CliRunner\nfrom opassess.cli import app\n"
            "runner = CliRunner()\nfor args in (['--help'], ['source', '--help'], ['diff', '--help']):\n"
            "    assert runner.invoke(app, args).exit_code == 0\nprint('torch' in sys.modules)\n"
            "print(runner.invoke(app, ['scan', '--help']).output)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, shown = done.stdout.split("\n", 1)
    assert before == "False"
    line = " ".join(shown.split()).replace("- ", "-")  # the help as one line (click wraps it, at its hyphens too)
    listed = ", ".join(capture_order(0))
    # the trace package's docstring describes each registered method: a new one is described there too
    assert all(re.search(rf"^  {re.escape(name)} ", trace.__doc__ or "", re.M) for name in capture_order(0))
    assert f"--capture <str> Capture methods to try, in order, comma-separated: {listed} (default: that order; " \
           f"{capture_order(LARGE_MODEL_PARAMETERS + 1)[0]} first above 1e9 parameters)" in line


def test_schema_time_model_enums_are_the_time_model_vocabularies():
    defs = SCHEMA["$defs"]
    assert defs["estimated_time"]["properties"]["unit"]["enum"] == list(perf.UNITS)
    assert defs["estimated_time"]["properties"]["bound"]["enum"] == list(perf.BOUNDS)
    penalty = defs["estimated_time"]["properties"]["penalties"]["items"]["properties"]
    assert penalty["code"]["enum"] == list(perf.PENALTIES)
    assert defs["time_by_unit"]["propertyNames"]["enum"] == list(perf.UNITS)


# ------------------------------------------------------------------ finding kinds: declared once, in the pattern book

def _kind_tables_in(source: str, kinds: set[str], declared: set[str], where: str = "") -> list[str]:
    """Tables of finding kinds in one module's source: a literal set, list, tuple or dict naming two or more of
    `kinds` (the words no other vocabulary uses); a `.kind in (...)` test naming two or more `declared` kinds (any
    kind word counts there: it is compared with a kind); `x.kind == "a" or x.kind == "b"`, the same set spelled as
    a chain of tests."""
    import ast

    def compared(node: ast.AST) -> str | None:  # 'a' for `x.kind == "a"`
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq) \
                and isinstance(node.left, ast.Attribute) and node.left.attr == "kind" \
                and isinstance(node.comparators[0], ast.Constant) and isinstance(node.comparators[0].value, str):
            return node.comparators[0].value
        return None

    def strings(items: list) -> set[str]:
        return {i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}

    found = []
    for node in ast.walk(ast.parse(source)):
        named: set[str] = set()
        if isinstance(node, (ast.Set, ast.List, ast.Tuple)):
            named = strings(node.elts) & kinds
        elif isinstance(node, ast.Dict):
            named = strings([k for k in node.keys if k is not None]) & kinds
        elif isinstance(node, ast.Compare) and isinstance(node.left, ast.Attribute) and node.left.attr == "kind" \
                and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and isinstance(node.comparators[0], (ast.Set, ast.List, ast.Tuple)):
            named = strings(node.comparators[0].elts) & declared
        elif isinstance(node, ast.BoolOp):
            named = {kind for kind in map(compared, node.values) if kind is not None} & declared
        if len(named) >= 2:
            found.append(f"{where}:{node.lineno}: {sorted(named)}")
    return found


def _kind_tables(kinds: set[str], declared: set[str]) -> list[str]:
    """Tables of finding kinds anywhere in opassess/: a second statement of the vocabulary."""
    root = Path(opassess.__file__).parent
    return [found for path in sorted(root.rglob("*.py"))
            for found in _kind_tables_in(path.read_text(encoding="utf-8"), kinds, declared,
                                         str(path.relative_to(root.parent)))]


def test_finding_kinds_are_tabled_only_in_the_pattern_book():
    """Each kind's criterion and fused flag are patterns.toml's; scoring and the time model read them there, so a new
    kind is one [kinds.X] entry (and its price), never a set in code kept in step by hand. Code may still name one
    kind where that kind has behaviour of its own (layout churn's transposes in the time model)."""
    book = shipped_patterns()
    # the generic words ("fusion", "attention", "compute") also name decisions and criteria: the kinds no other
    # vocabulary uses are the ones a second table would show
    specific = {k for k in book.kinds if k not in CRITERIA_NAMES | set(DECISION_NAMES) | {"attention", "compute"}}
    assert len(specific) >= 6
    assert _kind_tables(specific, set(book.kinds)) == []
    assert _kind_tables({"rmsnorm", "swiglu"}, set(book.kinds)) == [] and "rmsnorm" in specific


@pytest.mark.parametrize(("source", "tables"), [
    ('FUSED = {"rmsnorm", "swiglu"}', 1),
    ('CRITERION = {"rmsnorm": "fusion", "layout-churn": "memory_layout"}', 1),
    ('fused = [f for f in findings if f.kind in ("attention", "fusion")]', 1),
    ('if finding.kind == "compute" or finding.kind == "fusion":\n    pass', 1),
    # one kind with behaviour of its own, a kind word outside a kind test, a kind beside another vocabulary: no table
    ('if finding.kind == "layout-churn":\n    pass', 0),
    ('if f.kind == "compute" or (f.kind == "mixed-precision" and f.ops):\n    pass', 0),
    ('DECISIONS = ("attention", "fusion", "precision")', 0),
    ('if site.kind in ("import", "api"):\n    pass', 0),
])
def test_the_kind_table_check_sees_each_spelling(source, tables):
    book = shipped_patterns()
    specific = {k for k in book.kinds if k not in CRITERIA_NAMES | set(DECISION_NAMES) | {"attention", "compute"}}
    assert len(_kind_tables_in(source, specific, set(book.kinds))) == tables


def test_finding_criteria_are_score_criteria():
    assert set(FINDING_CRITERIA) - {"impact"} <= CRITERIA_NAMES
    book = shipped_patterns()
    assert {k.criterion for k in book.kinds.values()} <= set(FINDING_CRITERIA)
    assert book.criterion_of("layout-churn") == "memory_layout" and book.criterion_of("rmsnorm") == "fusion"
    assert book.criterion_of("no-such-kind") == "fusion"  # an unlisted kind counts as a fusion, as it is priced
    assert {"attention", "rmsnorm", "swiglu"} <= book.fused_kinds and "slow-path" not in book.fused_kinds
    assert "compute" not in book.fused_kinds and book.criterion_of("compute") == "impact"


def test_weights_name_only_declared_finding_kinds(tmp_path):
    """weights.toml may price only kinds the pattern book declares: a mistyped kind is refused, not priced as an
    unlisted one without a word."""
    weights = load_weights()
    assert set(weights.signals.fusion.findings) <= set(shipped_patterns().kinds)
    cases = {"[signals.fusion.findings]\nrmsnrom = 0.4\n": "signals.fusion.findings.rmsnrom",
             "[signals.fusion]\nno_work_findings = [\"compute\", \"computed\"]\n": "signals.fusion.no_work_findings",
             "[decisions.precision]\noverflow_findings = [\"rms-norm\"]\n": "decisions.precision.overflow_findings"}
    for text, key in cases.items():
        path = tmp_path / "w.toml"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ConfigError, match=re.escape(key) + ".*unknown finding kind"):
            load_weights(path)


# ------------------------------------------------------------------ the JSON document's typed parts

def _typed_parts():
    """(TypedDict, the schema node it describes): each section's JSON part as mypy sees it."""
    from opassess.report.sections import graph as g
    from opassess.report.sections import performance as t

    defs = SCHEMA["$defs"]
    graph_mode = defs["graph_mode"]["properties"]
    performance = SCHEMA["properties"]["performance"]
    time_parts = [(t.PerformanceDoc, performance), (t.CompareDoc, performance["properties"]["compare"]["items"]),
                  (t.GpuBaselineDoc, performance["properties"]["gpu_baseline"]),
                  (t.TwoDiesDoc, performance["properties"]["two_dies"]), (t.EstimatedTimeDoc, defs["estimated_time"]),
                  (t.PenaltyDoc, defs["estimated_time"]["properties"]["penalties"]["items"])]
    return [(g.GraphModeDoc, defs["graph_mode"]), (g.GraphBackendDoc, defs["graph_backend"]),
            (g.GraphBreakDoc, defs["graph_break"]), (g.GraphVerdictDoc, defs["graph_verdict"]),
            (g.EffortDoc, defs["effort"]), (g.GraphEffortDoc, graph_mode["effort"]),
            (g.DynamoDoc, graph_mode["dynamo"]),
            (g.DynamoBreakDoc, graph_mode["dynamo"]["properties"]["breaks"]["items"]), *time_parts]


@pytest.mark.parametrize("typed, node", _typed_parts(), ids=lambda x: getattr(x, "__name__", ""))
def test_each_typed_part_of_the_document_has_the_schema_s_keys(typed, node):
    """A key the schema adds or drops and the TypedDict the code reads it through (mypy checks the look-ups) move
    together; the keys the schema requires are the TypedDict's required keys too."""
    keys = typed.__required_keys__ | typed.__optional_keys__
    assert set(node["properties"]) == keys
    assert set(node.get("required", ())) <= typed.__required_keys__


def test_the_graph_mode_builders_give_the_typed_shape():
    from opassess.report.sections import graph as g

    assert g.graph_mode_doc(None) is None
    backends = SCHEMA["$defs"]["graph_mode"]["properties"]["backends"]
    assert set(backends["required"]) == {"inductor", "npugraph_ex", "ge"} == set(g.TITLES)


# ------------------------------------------------------------------ the document read back: parts tied to the schema


def _object_node(node):
    """The object schema a node describes, through $ref, oneOf/anyOf (the object alternative) and arrays' items."""
    while True:
        if "$ref" in node:
            node = SCHEMA["$defs"][node["$ref"].rsplit("/", 1)[1]]
        elif "properties" in node or "additionalProperties" in node and isinstance(node["additionalProperties"], dict):
            return node
        elif "items" in node:
            node = node["items"]
        elif "oneOf" in node or "anyOf" in node:
            alternatives = [n for n in node.get("oneOf", node.get("anyOf")) if n.get("type") != "null"]
            assert len(alternatives) == 1, node
            node = alternatives[0]
        else:
            return node


def _dataclasses_in(hint):
    """The part classes a field's type reads: X, X | None, tuple[X, ...], Mapping[str, X]."""
    import dataclasses
    import typing

    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return [hint]
    return [part for arg in typing.get_args(hint) for part in _dataclasses_in(arg)]


def _one_shape(node):
    """An object of fixed names that are all one $ref ({"inductor": graph_backend, "npugraph_ex": ..., "ge": ...})."""
    refs = [v.get("$ref") for v in node.get("properties", {}).values()]
    return bool(refs) and None not in refs and len(set(refs)) == 1


def _tie(part, node, path, seen, problems):
    """Each part's JSON keys are its schema object's properties, and a key the part requires the schema requires."""
    import dataclasses
    import typing

    from opassess.report.parts import json_key

    node = _object_node(node)
    properties = node.get("properties", {})
    fields = {json_key(f): f for f in dataclasses.fields(part)}
    if set(fields) != set(properties):
        problems.append(f"{path} ({part.__name__}): only in the part {sorted(set(fields) - set(properties))}, "
                        f"only in the schema {sorted(set(properties) - set(fields))}")
    required = {k for k, f in fields.items() if f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING}
    if not required <= set(node.get("required", ())):
        problems.append(f"{path} ({part.__name__}): requires {sorted(required - set(node.get('required', ())))}, "
                        "which the schema does not")
    hints = typing.get_type_hints(part)
    for key, f in fields.items():
        for inner in _dataclasses_in(hints[f.name]):
            if (inner, path + "." + key) in seen or key not in properties:
                continue
            seen.add((inner, path + "." + key))
            child = _object_node(properties[key])
            if "properties" not in child and isinstance(child.get("additionalProperties"), dict):
                child = child["additionalProperties"]  # an object keyed by names: {back-end: its part}
            elif _one_shape(child) and set(child["properties"]) != {json_key(g) for g in dataclasses.fields(inner)}:
                child = next(iter(child["properties"].values()))  # fixed names, one shape: graph_mode.backends
            _tie(inner, child, path + "." + key, seen, problems)


def test_each_part_of_the_document_read_back_has_the_schema_s_keys():
    """Every record the readers (formats, display, gates, diff) decode the document into, walked from the whole
    document's: a key the schema adds or drops must be added to or dropped from its part (report/parts.py)."""
    from opassess.report.reading import DocumentPart

    problems: list[str] = []
    seen: set = set()
    _tie(DocumentPart, SCHEMA, "document", seen, problems)
    assert not problems, "\n".join(problems)
    assert len({part for part, _path in seen}) >= 40  # the walk reached every part, not just the top


def test_a_real_document_reads_back_and_the_parts_keep_every_value():
    """The view decodes the document it built: nothing is lost (each part's fields, encoded back, are the object)."""
    import dataclasses

    from opassess.report.document import build_document
    from opassess.report.parts import encode
    from opassess.report.reading import read_document
    from tests.report.support import real_assessment

    document = build_document(real_assessment("resnet_like"))
    parts = read_document(document)
    assert parts.model.class_name == document["model"]["class"]
    op, written = parts.operators[0], document["operators"][0]
    assert set(encode(op)) >= set(written) and op.person_days is not None
    assert dataclasses.asdict(op.person_days) == written["person_days"]
    assert [o.op for o in parts.operators] == [o["op"] for o in document["operators"]]


# The plain count of string-key look-ups (`["key"]`, `.get("key"`) in report/ and ci/ (issue 44): the formats, the
# display, the gates and the diff read the document as records (report/reading.py), so what is left is builders'
# writes (report/document.py), Jinja's environment and a few tables that are not the document. Lower it as they go.
LOOKUP = re.compile(r'\["[^"]+"\]|\.get\("[^"]+"')
LOOKUP_CEILING = 25


def test_report_and_ci_read_the_document_as_records_not_by_string_keys():
    root = Path(opassess.__file__).parent
    found = {str(path.relative_to(root)): len(LOOKUP.findall(path.read_text(encoding="utf-8")))
             for folder in ("report", "ci") for path in sorted((root / folder).rglob("*.py"))}
    assert sum(found.values()) <= LOOKUP_CEILING, {path: n for path, n in found.items() if n}
