"""The versions section (report/sections/versions.py): the set to install for the torch line assessed against, a
feature's stated minimum when the model uses it, and a warning to pin when the running torch is newer than any
torch_npu release."""
from __future__ import annotations

from dataclasses import replace

from opassess.report.parts import decode
from opassess.report.sections.versions import VersionsPart, version_lines, versions_doc
from tests.report.support import real_assessment


def test_the_set_for_the_assessed_line_and_a_warning_for_a_newer_torch():
    assessment = real_assessment("resnet_like")
    doc = versions_doc(replace(assessment, torch_running="2.15.0"))
    assert (doc["torch_npu"], doc["torch"]) == ("2.13.0", "2.13.0")
    assert doc["cann"] is None and "not stated" in doc["cann_note"]
    assert doc["newest_with_cann"]["torch_npu"] == "2.12.0" and doc["newest_with_cann"]["cann"] == "9.1.0"
    assert doc["warnings"] == [{"code": "torch-newer", "running": "2.15.0", "newest": "2.14"}]
    assert doc["requirements"] == []  # a ResNet calls no feature with a stated minimum
    lines = version_lines(decode(VersionsPart, doc), str)
    assert lines[0].startswith("torch 2.15.0 is newer than any torch_npu release (the newest pairs with torch 2.14)")
    assert versions_doc(replace(assessment, torch_running="2.14.1"))["warnings"] == []
    older = versions_doc(replace(assessment, torch_version="2.9", torch_running="2.9.0"))
    assert (older["torch_npu"], older["product_version"], older["cann"]) == ("2.9.0.post6", "26.1.0", "9.1.0")
