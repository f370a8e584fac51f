"""Hand-built JSON report documents (format_version 1) for the CI tests: policies, diffs, portfolios, SARIF, JUnit.

Only the fields those stages read are filled; every number is chosen here, so the expected values in the tests
are worked out from this file alone.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

SHAPE = [1, 4, 8, 8]


def sig(category: str = "direct", *, count: int = 1, attrs: dict | None = None, shapes: Sequence = (SHAPE,),
        dtypes: Sequence = ("float32",)) -> dict[str, Any]:
    """One signature of an operator, as the JSON report writes it."""
    return {"attrs": dict(attrs or {}), "input_shapes": [list(s) for s in shapes], "input_dtypes": list(dtypes),
            "count": count, "modules": [], "sources": [], "category": category}


def op(name: str, category: str = "direct", *, days: tuple[float, float, float] = (1.0, 1.5, 2.0), stars: int = 2,
       known: bool = True, count: int | None = None, composite: float = 0.1, source: Sequence[str] = ("m.py:1",),
       signatures: Sequence[dict] | None = None, kind: str = "module", replacement: str | None = None,
       aten: Sequence[str] = ()) -> dict[str, Any]:
    """One operator entry; its count is the sum of its signatures' counts unless given."""
    signatures = list(signatures) if signatures is not None else [sig(category)]
    low, likely, high = days
    return {
        "op": name, "kind": kind, "aten": list(aten), "count": count if count is not None else sum(
            s["count"] for s in signatures), "modules": [""], "signatures": signatures, "source": list(source),
        "category": category, "known": known,
        "reasons": [{"code": "test", "message": f"{name} is {category} in this test", "evidence": "test",
                     "signature": None}],
        "replacement": replacement, "cann_op": None, "aten_support": {},
        "scores": {"functional": composite, "performance": composite, "ecosystem": composite,
                   "composite": composite, "subscores": []},
        "person_days": {"low": low, "likely": likely, "high": high},
        "risk": {"likelihood": stars, "impact": stars, "stars": stars, "signals": []},
        "pareto": False,
    }


def report(source: str, operators: Sequence[dict], *, total: tuple[float, float, float] | None = None,
           class_name: str = "Net", entry: str = "build_model", label: str | None = None) -> dict[str, Any]:
    """A report document; its total is the sum of its operators' person-days unless given."""
    if total is None:
        total = tuple(round(sum(o["person_days"][k] for o in operators), 2) for k in ("low", "likely", "high"))
    return {
        "format_version": 1,
        "tool": {"name": "opassess", "version": "0.0.test"},
        "model": {"source": source, "entry": entry, "class": class_name, "parameters": 0, "dtype": "float32",
                  "inputs": [], "label": label,
                  "capture": {"method": "fx", "device": "meta", "device_note": None, "attempts": []}},
        "target": "Atlas A2", "torch_npu": "2.1.0", "kb_version": "test-kb", "weights_source": "weights.toml",
        "operators": list(operators),
        "summary": {"operator_types": len(operators), "occurrences": sum(o["count"] for o in operators),
                    "person_days": {"low": total[0], "likely": total[1], "high": total[2]}},
        "risk_matrix": None, "by_module": None, "findings": [], "unknown_operators": [], "seconds": {"load": 0.25},
    }
