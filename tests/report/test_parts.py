"""report/parts.py and report/reading.py: the JSON document read back as frozen records, once, with one error that
names where a malformed report goes wrong."""
from __future__ import annotations

import pytest

from opassess.report.parts import DocumentError, EffortPart, decode, encode
from opassess.report.reading import read_document
from opassess.report.sections.operators import ModelPart, OperatorPart
from opassess.report.sections.performance import PerformancePart
from tests.ci.records import op, report


def test_a_part_reads_its_keys_nested_parts_lists_and_the_key_that_is_no_python_name():
    model = decode(ModelPart, {"source": "m.py", "class": "Net", "inputs": ["x"],
                               "capture": {"method": "fx", "attempts": [{"method": "fx", "error": None}]}})
    assert (model.source, model.class_name, model.inputs) == ("m.py", "Net", ("x",))
    assert model.capture.attempts[0].method == "fx" and model.capture.attempts[0].seconds == 0.0  # a default
    assert model.entry == "" and model.label is None  # keys a report written before them lacks


def test_numbers_keep_their_json_type_and_encode_gives_the_object_back():
    """Formats print what the document holds: 2 stays 2 (not 2.0), so a report reads the same after the move."""
    effort = decode(EffortPart, {"low": 1, "likely": 2.5, "high": 4})
    assert (type(effort.low), type(effort.likely)) == (int, float)
    assert encode(effort) == {"low": 1, "likely": 2.5, "high": 4} and list(encode(effort)) == ["low", "likely", "high"]


def test_a_malformed_document_is_one_error_naming_where():
    document = report("m.py", [op("a"), op("b")])
    document["operators"][1]["person_days"] = {"low": 1.0, "high": 2.0}
    with pytest.raises(DocumentError, match=r"^operators\[1\]\.person_days: missing 'likely'$"):
        read_document(document)
    document["operators"][1] = {"op": "b", "signatures": [{"attrs": 3}]}
    with pytest.raises(DocumentError, match=r"^operators\[1\]\.signatures\[0\]\.attrs: expected an object, got int$"):
        read_document(document)
    with pytest.raises(DocumentError, match=r"^missing 'op'$"):
        decode(OperatorPart, {"kind": "module"})
    with pytest.raises(DocumentError, match=r"^compare\[0\]\.by_unit: expected an object, got list$"):
        decode(PerformancePart, {"product": "A2", "step_us": 1.0, "at_risk_us": 0.0, "method": "m",
                                 "by_unit": {"cube": 1.0}, "compare": [{"product": "A3", "by_unit": []}]})


def test_a_hand_written_document_reads_with_the_defaults_of_what_it_leaves_out():
    parts = read_document(report("examples/net.py", [op("a", "custom-dev", days=(1.0, 2.0, 3.0))]))
    (first,) = parts.operators
    assert (first.op, first.category, first.person_days, first.risk.stars) == ("a", "custom-dev",
                                                                              EffortPart(1.0, 2.0, 3.0), 2)
    assert parts.summary.person_days == EffortPart(1.0, 2.0, 3.0) and parts.summary.decisions is None
    assert parts.graph_mode is None and parts.source_findings == () and parts.performance is None
