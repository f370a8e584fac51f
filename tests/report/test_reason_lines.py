"""report/reason_lines.py: each reason once, with the signatures it covers."""
from __future__ import annotations

from opassess.records import Reason
from opassess.report.display.records import SignatureRow
from opassess.report.reason_lines import reason_rows


def test_each_reason_once_with_the_signatures_it_covers():
    sigs = tuple(SignatureRow(text=f"x: bfloat16[{n}]", count=1, category="direct") for n in (1, 2, 3, 4, 5))
    bf16 = ("dtype", "input dtype bfloat16 is not supported", "cann_aclnn_dtypes.tsv")
    reasons = (Reason(*bf16, signature=0), Reason("kernel", "aten::mm has an NPU kernel", "npu_aten_ops"),
               Reason(*bf16, signature=2), Reason(*bf16, signature=0), Reason("view-op", "aten::t", "rules", 1),
               Reason("view-op", "aten::t", "rules", 0), Reason("view-op", "aten::t", "rules", 2),
               Reason("view-op", "aten::t", "rules", 3), Reason("view-op", "aten::t", "rules", 4))
    rows = reason_rows(reasons, sigs)
    assert [r.code for r in rows] == ["dtype", "kernel", "view-op"]  # first-seen order, each once
    assert rows[0].signatures == (0, 2) and rows[0].covers == "signatures 1, 3 of 5: x: bfloat16[1]; x: bfloat16[3]"
    assert rows[1].signatures == () and rows[1].covers == ""  # given for the operator
    assert rows[2].covers == "all 5 signatures"
    assert reason_rows(reasons[:1], sigs[:1])[0].covers == ""  # one signature: nothing to tell apart

