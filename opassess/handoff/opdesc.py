"""The operator-description hand-off: per custom-dev operator `op_desc_<op>.json`, the operator prototype Ascend's
custom-operator project generator (msOpGen: `msopgen gen -i op_desc_<op>.json -c ai_core-<soc> -lan cpp -out DIR`)
takes, and `op_plugin_<op>.yaml`, an op-plugin `op_plugin_functions.yaml` entry binding it into torch_npu.

The prototype form follows msOpGen's documented JSON: a list of operators, each with `op` (UpperCamelCase type),
`language`, `input_desc` / `output_desc` (name, param_type required|optional|dynamic, `format` and `type` lists
matched column by column: one column per supported dtype combination) and `attr` (name, param_type
required|optional, type int|bool|float|string|list_int|list_float|list_bool|list_list_int, default_value).
From the capture come: the input dtypes (one column per distinct dtype combination of the captured signatures), the
number of tensor inputs, the attribute names, types and values. Inferred (the capture does not record them), and
listed in `opassess_inferred` of each operator (and as comments in the YAML): the op type name, the input and output
names, the formats (ND), the output (one, of the first input's dtype), the attribute param_types and defaults (an
attribute with one captured value is optional with it as default; several values: required), and the binding's
name and torch version range. The JSON schema is opdesc.schema.json beside this module.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..resources import package_path
from .escape import identifier, one_line, yaml_scalar

SCHEMA = package_path("handoff", "opdesc.schema.json")
# torch dtype -> msOpGen `type` name (msOpGen's documented type list: float16, float, int8 ... bfloat16, double).
MSOPGEN_TYPES = {"float16": "float16", "float32": "float", "bfloat16": "bfloat16", "float64": "double",
                 "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
                 "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool",
                 "complex64": "complex64", "complex128": "complex128"}
# msOpGen attribute type -> the op-plugin / ATen schema type of the same argument.
SCHEMA_TYPES = {"int": "int", "bool": "bool", "float": "float", "string": "str", "list_int": "int[]",
                "list_float": "float[]", "list_bool": "bool[]", "list_list_int": "int[][]"}


def op_type(key: str) -> str:
    """'opassess_two::gated_tanh' -> 'GatedTanh'; 'custom_op.SignSTE' -> 'SignSTE' (UpperCamelCase, as msOpGen
    requires)."""
    name = re.split(r"::|\.", key)[-1]
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name) if p]
    return "".join(p[:1].upper() + p[1:] for p in parts) or "CustomOp"


def attr_type(values: list[Any]) -> str | None:
    """The msOpGen attribute type of the captured values; None when they do not fit one."""
    def kind(value: Any) -> str | None:
        if isinstance(value, bool):
            return "bool"
        if isinstance(value, int):
            return "int"
        if isinstance(value, float):
            return "float"
        if isinstance(value, str):
            return "string"
        if isinstance(value, list) and value:
            inner = {kind(v) for v in value}
            if inner == {"int"}:
                return "list_int"
            if inner <= {"int", "float"}:
                return "list_float"
            if inner == {"bool"}:
                return "list_bool"
            if inner == {"list_int"}:
                return "list_list_int"
        return None

    kinds = {kind(v) for v in values}
    if kinds == {"int", "float"}:
        return "float"
    return kinds.pop() if len(kinds) == 1 else None


def _tensor_positions(signatures: list[Mapping[str, Any]]) -> list[int]:
    width = max((len(s["input_shapes"]) for s in signatures), default=0)
    return [i for i in range(width) if any(i < len(s["input_shapes"]) and s["input_shapes"][i] is not None
                                          for s in signatures)]


def describe(op: Mapping[str, Any]) -> dict[str, Any]:
    """The msOpGen prototype of one operator (one element of the JSON list), with `opassess_inferred`."""
    signatures = list(op.get("signatures") or ())
    positions = _tensor_positions(signatures)
    columns: list[tuple[str, ...]] = []  # distinct dtype combinations with every dtype known, in first-seen order
    for sig in signatures:
        combo = tuple(sig["input_dtypes"][i] if i < len(sig["input_dtypes"]) else None for i in positions)
        known = tuple(d for d in combo if d)
        if len(known) == len(combo) and known not in columns:
            columns.append(known)
    inferred = [{"field": "op", "why": f"UpperCamelCase of the operator key {op['op']!r}"},
                {"field": "input_desc[].name, output_desc[].name",
                 "why": "the capture records no argument names: x0, x1, ... and y"},
                {"field": "format", "why": "the capture records no memory format: ND for every column"},
                {"field": "output_desc", "why": "the capture records no output dtypes: one output of the first "
                                                "input's dtype per column"}]
    unknown = sorted({d for combo in columns for d in combo if d not in MSOPGEN_TYPES})
    if unknown:
        inferred.append({"field": "type", "why": f"no msOpGen type for {', '.join(unknown)}: kept as written"})
    inputs = []
    for n, position in enumerate(positions):
        present = all(position < len(s["input_shapes"]) and s["input_shapes"][position] is not None
                      for s in signatures)
        inputs.append({"name": f"x{n}", "param_type": "required" if present else "optional",
                       "format": ["ND"] * len(columns),
                       "type": [MSOPGEN_TYPES.get(combo[n], combo[n]) for combo in columns]})
    outputs = [{"name": "y", "param_type": "required", "format": ["ND"] * len(columns),
                "type": [MSOPGEN_TYPES.get(combo[0], combo[0]) for combo in columns]}] if columns else []
    attrs = []
    names = list(dict.fromkeys(name for sig in signatures for name in sig.get("attrs") or {}))
    for name in names:
        values = [sig["attrs"][name] for sig in signatures if name in (sig.get("attrs") or {})]
        kind = attr_type(values)
        if kind is None:
            inferred.append({"field": f"attr {name}", "why": f"captured values {values!r} fit no msOpGen attribute "
                                                             f"type: left out"})
            continue
        distinct = list({json.dumps(v, sort_keys=True): v for v in values}.values())
        entry: dict[str, Any] = {"name": name, "param_type": "required", "type": kind}
        if len(distinct) == 1 and len(values) == len(signatures):
            entry.update(param_type="optional", default_value=distinct[0])
            inferred.append({"field": f"attr {name}.param_type, default_value",
                             "why": f"one value captured ({json.dumps(distinct[0])}): optional with it as default"})
        else:
            inferred.append({"field": f"attr {name}.param_type",
                             "why": f"values captured: {', '.join(json.dumps(v) for v in distinct)}: required"})
        attrs.append(entry)
    description: dict[str, Any] = {"op": op_type(op["op"]), "language": "cpp", "input_desc": inputs,
                                   "output_desc": outputs}
    if attrs:
        description["attr"] = attrs
    description["opassess_inferred"] = inferred
    return description


def op_desc_json(op: Mapping[str, Any]) -> str:
    """op_desc_<op>.json: a one-operator msOpGen prototype file."""
    return json.dumps([describe(op)], indent=2, ensure_ascii=False) + "\n"


def _schema_default(value: Any, kind: str) -> str:
    if kind == "bool":
        return "True" if value else "False"
    if kind == "string":
        return "'" + one_line(value).replace("'", "\\'") + "'"
    return json.dumps(value)


def op_plugin_yaml(op: Mapping[str, Any], document: Mapping[str, Any], stem: str) -> str:
    """op_plugin_<op>.yaml: an op_plugin_functions.yaml `custom:` entry for the torch_npu binding of the kernel built
    from op_desc_<op>.json (msOpGen's project exposes it as aclnn<Op>)."""
    description = describe(op)
    name = "npu_" + re.sub(r"(?<!^)(?=[A-Z])", "_", description["op"]).lower()
    tensors = [f"Tensor{'?' if d['param_type'] == 'optional' else ''} {d['name']}" for d in description["input_desc"]]
    attrs = []
    for index, attr in enumerate(description.get("attr", ())):
        text = f"{SCHEMA_TYPES[attr['type']]} {identifier(attr['name'], f'attr{index}')}"
        if "default_value" in attr:
            text += "=" + _schema_default(attr["default_value"], attr["type"])
        attrs.append(text)
    arguments = ", ".join(tensors + (["*", *attrs] if attrs else []))
    first = description["input_desc"][0]["name"] if description["input_desc"] else "self"
    version = str(document.get("torch_npu") or "2.1")
    lines = [
        f"# torch_npu binding of {one_line(op['op'])} for op-plugin's op_plugin/config/op_plugin_functions.yaml "
        "(`custom:`),",
        f"# written by `opassess scan --handoff` beside op_desc_{stem}.json (msOpGen prototype {description['op']}).",
        "# Inferred (the capture does not record them): the function name, argument names, the output (one tensor of",
        f"# the first input's size and dtype), the version range (from torch_npu {version}, the report's), and",
        "# attribute defaults taken from a single captured value; the kernel entry aclnn<Op> is the name msOpGen's",
        "# project generates for the operator.",
        "custom:",
        f"  - func: {yaml_scalar(f'{name}({arguments}) -> Tensor')}",  # quoted: no model text ends the scalar
        f"    op_api: [v{version}, newest]",
        "    gen_opapi:",
        "      out:",
        f"        size: {first}",
        f"        dtype: {first}",
        f"      exec: aclnn{description['op']}",
    ]
    return "\n".join(lines) + "\n"
