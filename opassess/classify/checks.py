"""The NPU kernels' own argument checks (op-plugin's check messages, npu_op_check_messages.tsv) that one signature's
dtypes trip: float64 rejected or computed in float32, int64 cast to int32."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..reasons import DTYPE, DTYPE_CAST
from ..records import N_, Signature
from ..vocabulary import Category
from .judgement import Judgement

if TYPE_CHECKING:
    from ..kb.store import KnowledgeBase


def kernel_checks(kb: KnowledgeBase, sig: Signature | None, j: Judgement, atens: Iterable[str]) -> None:
    """Step 4 of the classifier: a finding per kernel check the signature's dtypes trip, on the judged ATen ops."""
    if sig is None:
        return
    dtypes = set(d for d in sig.input_dtypes if d)
    for aten in atens:
        for check in kb.checks_for(aten):
            if check.kind == "float64-unsupported" and "float64" in dtypes:
                j.add_message(DTYPE, N_("the NPU kernel of %(op)s rejects float64 input; cast to float32"),
                              {"op": aten}, check.evidence(), category=Category.PARAM_CONVERTED)
            elif check.kind == "float64-cast" and "float64" in dtypes:
                j.add_message(DTYPE_CAST, N_("the NPU kernel of %(op)s computes float64 input in float32"),
                              {"op": aten}, check.evidence(), category=Category.PARAM_CONVERTED)
            elif check.kind == "int64-cast-int32" and "int64" in dtypes:
                j.add_message(DTYPE_CAST, N_("the NPU kernel of %(op)s casts int64 input to int32 (values beyond "
                                               "2^31 overflow)"), {"op": aten}, check.evidence(),
                              category=Category.PARAM_CONVERTED)
