"""Hand-built records for the score/estimate/calibrate tests: tiny inventories whose numbers are easy to work by
hand."""
from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opassess.inventory import build_inventory
from opassess.records import AtenCall, Capture, ClassifiedOp, Inventory, ModelInfo, Operator, OpNode, Reason

INFO = ModelInfo(source="tests/hand_built.py", entry="build_model", class_name="Hand", parameters=0,
                 dtype="float32", inputs=("x: float32[1, 4, 8, 8]",))
SHAPE = (1, 4, 8, 8)


def call(op: str, overload: str = "default", shapes: Sequence[Any] = (SHAPE,), dtypes: Sequence[Any] = ("float32",),
         out_shapes: Sequence[Any] = (SHAPE,), out_dtypes: Sequence[Any] = ("float32",)) -> AtenCall:
    return AtenCall(op=op, overload=overload, input_shapes=tuple(shapes), input_dtypes=tuple(dtypes),
                    output_shapes=tuple(out_shapes), output_dtypes=tuple(out_dtypes))


def node(name: str, op: str, module: str = "", *, kind: str = "module", shapes: Sequence[Any] = (SHAPE,),
         dtypes: Sequence[Any] = ("float32",), out_shapes: Sequence[Any] | None = None,
         out_dtypes: Sequence[Any] | None = None, attrs: Mapping[str, Any] | None = None,
         aten: Sequence[AtenCall] = (), flops: int = 0, bytes_moved: int = 0) -> OpNode:
    return OpNode(name=name, key=op, kind=kind, module_path=module, attrs=dict(attrs or {}), input_shapes=tuple(shapes),
                  input_dtypes=tuple(dtypes), output_shapes=tuple(out_shapes if out_shapes is not None else shapes[:1]),
                  output_dtypes=tuple(out_dtypes if out_dtypes is not None else dtypes[:1]), aten=tuple(aten),
                  source=f"hand_built.py:{name}", flops=flops, bytes_moved=bytes_moved)


def inventory(nodes: Sequence[OpNode], edges: Sequence[tuple[str, str]] = ()) -> Inventory:
    capture = Capture(method="fx", device="meta", device_note=None, attempts=(), nodes=tuple(nodes),
                      edges=tuple(edges))
    return build_inventory(INFO, capture)


def operator(inv: Inventory, op: str) -> Operator:
    return next(o for o in inv.operators if o.key == op)


def classified(operator: Operator, category: str = "direct", *, reasons: Sequence[Reason] = (),
               replacement: str | None = None, known: bool = True,
               support: Mapping[str, bool] | None = None, signature_categories: Sequence[str] | None = None
               ) -> ClassifiedOp:
    """A ClassifiedOp as the classifier would write it; every ATen op supported unless `support` says otherwise."""
    return ClassifiedOp(
        operator=operator,
        category=category,
        signature_categories=tuple(signature_categories or (category,) * len(operator.signatures)),
        reasons=tuple(reasons),
        replacement=replacement,
        cann_op=None,
        known=known,
        aten_support=dict(support if support is not None else {name: True for name in operator.aten}),
    )


MODELS = Path(__file__).resolve().parents[1] / "models"


@functools.cache
def scan(name: str) -> tuple[Inventory, tuple[ClassifiedOp, ...]]:
    """A real model file run through the pipeline's first stages: (inventory, classified operators)."""
    from opassess.classify import classify
    from opassess.kb import load_kb
    from opassess.options import ScanOptions
    from opassess.pipeline.capture import scan_inventory

    inv = scan_inventory(ScanOptions(target=str(MODELS / name)))
    return inv, classify(inv, load_kb(None))
