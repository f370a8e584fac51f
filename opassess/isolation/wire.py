"""The capture as plain data: what a worker sends the parent, and the strict check the parent makes of it.

A worker loads and runs the model and sends only the records of the load and trace stages (ModelInfo, Capture and
the stage times) as JSON, which builds no objects; the parent, which has run no model code, decodes it here and
refuses anything that is not exactly the shape of those records (an unknown or missing key, a wrong type, a string
or message over its cap) before it builds the inventory, classifies, scores and renders. What the parent cannot
check is whether the capture is true: a model runs the code that captures it and can hide an op by not calling it.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from enum import StrEnum
from typing import TYPE_CHECKING, TypeVar

from ..errors import OpassessError
from ..records import (
    AtenCall,
    Capture,
    CaptureAttempt,
    DynamoBreak,
    DynamoRun,
    FunctionReach,
    ModelInfo,
    OpNode,
    Registration,
    StandIn,
)
from ..trace.registrations import COMPOSITE_KEYS
from ..vocabulary import CaptureStep

if TYPE_CHECKING:
    from ..routes.records import OnnxExport

MAX_MESSAGE = 512 * 2**20  # bytes of one message from a worker (a 7B model's capture is a few MiB)
MAX_TEXT = 2**20  # characters of one string in it
MAX_DEPTH = 16  # nesting of an attribute value


class BadCapture(OpassessError):
    """What a worker sent is not a capture: the model wrote to opassess's result channel, or the worker broke."""


# field -> type spec: "str", "str?", "int", "float", "strs" (list of str), "dtypes" (list of str|None), "shapes"
# (list of list[int]|None), "value" (a JSON value), or a record class, or [record class] (a list of them), or
# (record class,) (one of them or null), or a StrEnum class (one of its values, decoded to the member)
_Kind = str | list[type] | tuple[type] | type[StrEnum]
_R = TypeVar("_R")

_ATEN: dict[str, _Kind] = {
    "op": "str", "overload": "str", "input_shapes": "shapes", "input_dtypes": "dtypes", "output_shapes": "shapes",
    "output_dtypes": "dtypes"}
_NODE: dict[str, _Kind] = {
    "name": "str", "key": "str", "kind": "str", "module_path": "str", "attrs": "attrs", "input_shapes": "shapes",
    "input_dtypes": "dtypes", "output_shapes": "shapes", "output_dtypes": "dtypes", "aten": [AtenCall],
    "source": "str?", "flops": "int", "bytes_moved": "int", "entry": "strs", "backward": [AtenCall],
    "backward_flops": "int", "project_source": "str?"}
_ATTEMPT: dict[str, _Kind] = {"method": "str", "error": "str?", "seconds": "float"}
_STAND_IN: dict[str, _Kind] = {"library": "str", "symbols": "strs", "why": "str", "built_by": "str?"}
_DYNAMO_BREAK: dict[str, _Kind] = {"reason": "str", "source": "str?"}
_DYNAMO: dict[str, _Kind] = {
    "graphs": "int", "ops": "int", "breaks": [DynamoBreak], "seconds": "float", "error": "str?"}
_CAPTURE: dict[str, _Kind] = {
    "method": "str", "device": "str", "device_note": "str?", "attempts": [CaptureAttempt], "nodes": [OpNode],
    "edges": "edges", "module_types": "names", "step": CaptureStep, "step_note": "str?", "stand_ins": [StandIn],
    "dynamo": (DynamoRun,), "registrations": [Registration], "reach": "reach",
    "driven": "strs", "refused": "strs"}
_REACH: dict[str, _Kind] = {"file": "str", "name": "str", "first_line": "int", "ran": "ints", "missed": "ints"}
_REGISTRATION: dict[str, _Kind] = {"op": "str", "kinds": "strs", "reference": "strs"}
_INFO: dict[str, _Kind] = {
    "source": "str", "entry": "str", "class_name": "str", "parameters": "int", "dtype": "str", "inputs": "strs",
    "label": "str?"}
_SCHEMA: dict[type, dict[str, _Kind]] = {AtenCall: _ATEN, OpNode: _NODE, CaptureAttempt: _ATTEMPT, StandIn: _STAND_IN,
                                       Capture: _CAPTURE, ModelInfo: _INFO, DynamoRun: _DYNAMO,
                                       DynamoBreak: _DYNAMO_BREAK, Registration: _REGISTRATION,
                                       FunctionReach: _REACH}


def _plain(record: object) -> dict[str, object]:
    spec = _SCHEMA[type(record)]
    out = {}
    for name, kind in spec.items():
        value = getattr(record, name)
        if isinstance(kind, list):
            value = [_plain(item) for item in value]
        elif isinstance(kind, tuple):
            value = None if value is None else _plain(value)
        elif kind in ("attrs", "names"):
            value = dict(value)
        elif kind == "reach":
            value = None if value is None else [_plain(item) for item in value]
        elif isinstance(kind, type):
            value = value.value
        out[name] = value
    return out


def encode_capture(info: ModelInfo, capture: Capture, seconds: dict[str, float]) -> dict[str, object]:
    """The capture as JSON-able plain data (for `decode_capture` in the parent)."""
    return {"info": _plain(info), "capture": _plain(capture), "seconds": dict(seconds)}


def _fail(where: str, what: str) -> BadCapture:
    return BadCapture(f"malformed capture from the worker at {where}: {what}")


def _text(value: object, where: str) -> str:
    if type(value) is not str:
        raise _fail(where, f"expected a string, got {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise _fail(where, f"a string of {len(value)} characters (at most {MAX_TEXT})")
    return value


def _maybe_text(value: object, where: str) -> str | None:
    return None if value is None else _text(value, where)


def _int(value: object, where: str) -> int:
    if type(value) is int:
        return value
    raise _fail(where, f"expected a number, got {type(value).__name__}")


def _float(value: object, where: str) -> float:
    if type(value) is int or type(value) is float:
        return float(value)
    raise _fail(where, f"expected a number, got {type(value).__name__}")


def _list(value: object, where: str) -> list[object]:
    if type(value) is not list:
        raise _fail(where, f"expected a list, got {type(value).__name__}")
    return value


def _value(value: object, where: str, depth: int = 0) -> object:
    """An attribute value: None, bool, int, float, str, or a list of them (trace.values.jsonable makes no more)."""
    if depth > MAX_DEPTH:
        raise _fail(where, "an attribute nested too deep")
    if value is None or type(value) in (bool, int, float):
        return value
    if type(value) is str:
        return _text(value, where)
    if type(value) is list:
        return [_value(item, where, depth + 1) for item in value]
    raise _fail(where, f"an attribute of type {type(value).__name__}")


def _choice(kind: type[StrEnum], value: object, where: str) -> StrEnum:
    text = _text(value, where)
    try:
        return kind(text)
    except ValueError:
        raise _fail(where, f"{text[:40]!r} is not one of {', '.join(kind)}") from None


def _field(kind: _Kind, value: object, where: str) -> object:
    if isinstance(kind, list):
        return tuple(_record(kind[0], item, f"{where}[{i}]") for i, item in enumerate(_list(value, where)))
    if isinstance(kind, tuple):
        return None if value is None else _record(kind[0], value, where)
    if isinstance(kind, type):
        return _choice(kind, value, where)
    if kind == "str":
        return _text(value, where)
    if kind == "str?":
        return _maybe_text(value, where)
    if kind == "int":
        return _int(value, where)
    if kind == "float":
        return _float(value, where)
    if kind == "strs":
        return tuple(_text(v, where) for v in _list(value, where))
    if kind == "ints":
        return tuple(_int(v, where) for v in _list(value, where))
    if kind == "reach":
        return None if value is None else tuple(
            _record(FunctionReach, item, f"{where}[{i}]") for i, item in enumerate(_list(value, where)))
    if kind == "dtypes":
        return tuple(_maybe_text(v, where) for v in _list(value, where))
    if kind == "shapes":
        return tuple(None if s is None else tuple(_int(d, where) for d in _list(s, where))
                     for s in _list(value, where))
    if kind == "edges":
        edges = []
        for pair in _list(value, where):
            ends = _list(pair, where)
            if len(ends) != 2:
                raise _fail(where, "an edge that is not a pair")
            edges.append((_text(ends[0], where), _text(ends[1], where)))
        return tuple(edges)
    if kind in ("attrs", "names"):
        if type(value) is not dict:
            raise _fail(where, f"expected an object, got {type(value).__name__}")
        check: Callable[[object, str], object] = _text if kind == "names" else _value
        return {_text(k, where): check(v, f"{where}.{k}") for k, v in value.items()}
    raise AssertionError(kind)  # pragma: no cover - the schema above names only these


def _record(cls: type[_R], value: object, where: str) -> _R:
    spec = _SCHEMA[cls]
    if type(value) is not dict:
        raise _fail(where, f"expected an object, got {type(value).__name__}")
    if set(value) != set(spec):
        odd = sorted(set(value) ^ set(spec))
        raise _fail(where, f"unknown or missing key(s) {', '.join(odd)[:200]}")
    return cls(**{name: _field(kind, value[name], f"{where}.{name}") for name, kind in spec.items()})


def decode_capture(data: object) -> tuple[ModelInfo, Capture, dict[str, float]]:
    """The records a worker's capture message holds, or BadCapture saying what is wrong with it (an `onnx` part, of
    `--route onnx`, is decode_onnx's)."""
    if type(data) is not dict or set(data) - {"onnx"} != {"info", "capture", "seconds"}:
        raise _fail("the top", "expected an object with info, capture and seconds")
    seconds = data["seconds"]
    if type(seconds) is not dict or not set(seconds) <= {"load", "trace", "dynamo"}:
        raise _fail("seconds", "expected the load, trace and dynamo times")
    times = {_text(k, "seconds"): _float(v, f"seconds.{k}") for k, v in seconds.items()}
    capture = _record(Capture, data["capture"], "capture")
    _registrations(capture.registrations)
    return _record(ModelInfo, data["info"], "info"), capture, times


def _registrations(found: tuple[Registration, ...]) -> None:
    """A registration names a project's or library's op ('ns::name', never aten or prims but a project's overload of
    one: the parent asks its own dispatcher about those) and only composite dispatch keys: the parent judges that op
    by it."""
    for i, registration in enumerate(found):
        where = f"capture.registrations[{i}]"
        namespace, _, name = registration.op.partition("::")
        # a project's own overload of an ATen op ('aten::relu.myimpl', trace/keys.project_overload) is one too
        if not namespace or not name or (namespace in ("aten", "prims") and "." not in name):
            raise _fail(where, f"{registration.op[:80]!r} is not a project's or library's op ('namespace::name')")
        odd = sorted(set(registration.kinds) - set(COMPOSITE_KEYS))
        if odd or len(set(registration.kinds)) != len(registration.kinds):
            raise _fail(where, f"dispatch keys other than the composite ones: {', '.join(odd)[:200] or 'repeated'}")
        if any(not op.startswith(("aten::", "prims::")) for op in registration.reference):
            raise _fail(where, "a reference implementation's op that is not an ATen op")


def dumps(message: object) -> bytes:
    """One message as one line of JSON (json.dumps never writes a raw newline)."""
    return json.dumps(message, separators=(",", ":"), allow_nan=True).encode("utf-8") + b"\n"


MAX_ONNX_OPS = 10_000  # distinct op types in one export (ONNX defines a few hundred)
MAX_ONNX_FAILURES = 8  # attempts: one per exporter


def decode_onnx(data: object) -> OnnxExport | None:
    """The OnnxExport of a capture message's `onnx` part (None when it has none), or BadCapture: exactly the keys
    export_plain writes, an opset 0..99, known exporters, op counts as [domain, op_type, count] with count >= 1."""
    from ..routes.records import EXPORTERS, OnnxExport, OnnxFailure

    if type(data) is not dict or "onnx" not in data:
        return None
    part = data["onnx"]
    keys = {"requested_opset", "opset", "exporter", "ops", "failures"}
    if type(part) is not dict or set(part) != keys:
        raise _fail("onnx", f"expected an object with {', '.join(sorted(keys))}")
    opsets = [_int(part[k], f"onnx.{k}") for k in ("requested_opset", "opset")]
    if not all(0 <= o < 100 for o in opsets):
        raise _fail("onnx", "an opset outside 0..99")
    exporter = _text(part["exporter"], "onnx.exporter")
    if exporter not in ("", *EXPORTERS):
        raise _fail("onnx.exporter", f"unknown exporter {exporter[:40]!r}")
    ops = []
    for i, item in enumerate(_list(part["ops"], "onnx.ops")[:MAX_ONNX_OPS + 1]):
        row = _list(item, f"onnx.ops[{i}]") if i < MAX_ONNX_OPS else []
        if i == MAX_ONNX_OPS or len(row) != 3:
            raise _fail(f"onnx.ops[{i}]", "expected [domain, op_type, count] (at most 10000 of them)")
        domain, op, count = _text(row[0], f"onnx.ops[{i}]"), _text(row[1], f"onnx.ops[{i}]"), row[2]
        if type(count) is not int or count < 1 or len(domain) > 200 or not 0 < len(op) <= 200:
            raise _fail(f"onnx.ops[{i}]", "a count that is not a positive int, or a name over 200 characters")
        ops.append((domain, op, count))
    failures = []
    for i, item in enumerate(_list(part["failures"], "onnx.failures")):
        where = f"onnx.failures[{i}]"
        if i == MAX_ONNX_FAILURES or type(item) is not dict or set(item) != {"exporter", "op", "message"}:
            raise _fail(where, "expected {exporter, op, message} (at most 8 of them)")
        if item["exporter"] not in EXPORTERS:
            raise _fail(where, "unknown exporter")
        failures.append(OnnxFailure(item["exporter"], _text(item["op"], where)[:200], _text(item["message"], where)
                                    [:2000]))
    return OnnxExport(opsets[0], opsets[1], exporter, tuple(ops), tuple(failures))
