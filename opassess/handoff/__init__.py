"""Hand-offs (`opassess scan --handoff DIR`): what other teams need from an assessment, as files.

- per custom-dev operator `repro_<name>.py`, a runnable minimal reproduction with the captured signatures (shapes,
  dtypes, attributes): it imports the model file (which registers project operators), builds random inputs and
  calls the operator once per signature, on the NPU when torch_npu is importable, else on the CPU;
- per custom-dev operator `ticket_<name>.md`, a ticket skeleton for the kernel team (schema, dtypes, shapes, call
  count, FLOP share, candidate NPU ops, source lines);
- per custom-dev operator `op_desc_<name>.json`, the operator prototype Ascend's msOpGen takes, and
  `op_plugin_<name>.yaml`, the op-plugin entry binding it into torch_npu (opdesc.py);
- per operator with non-direct signatures `test_<name>.py`, a pytest verification harness running each of them on the
  NPU against the CPU (verify.py), whose JUnit results `opassess calibrate --verified` reads back;
- `verify_apis.txt`, the operators to verify numerically after the port (non-direct ones and those whose
  classification is of medium or low confidence): one qualified API per line, `#` starts a comment. This is
  opassess's own format (not checked against any precision tool's config format): feed the names to the
  precision-comparison run's API list as that tool expects them.

Built from the JSON document only; every file goes through opassess/output.py.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..output import write_files
from ..report.sections.plan import shown_source
from ..report.text import days_detail, percent, share
from ..vocabulary import Category, Confidence
from .escape import file_stem, one_line
from .opdesc import op_desc_json, op_plugin_yaml
from .routes import MODEL_LOADING
from .verify import model_from_here, verification_harness, wants_harness

VERIFY_FILE = "verify_apis.txt"
# Reasons after which a direct operator's numbers still need a look (the classification's confidence is medium, low
# for kernel-product). Not api-undocumented: the API pages mark no API for Atlas training series (910A) and have no
# column for the inference products, so that silence says nothing of one operator (score/decisions.py); the kernel
# facts judge it as on Atlas A2. kernel-product (the kernel docs and the page disagree, or an aclop fallback) does.
CHECK_REASONS = ("decomposes", "dtype-cast", "kernel-product", "cpu-fallback", "not-in-kb")
LOW_CONFIDENCE_LIKELIHOOD = 3  # a risk likelihood at or above this: the port may go wrong, verify it


def handoff_files(document: Mapping[str, Any], directory: Path | None = None,
                  model_file: Path | None = None) -> dict[str, str]:
    """File name -> text of every hand-off for one assessment document (to be written to `directory`: the generated
    files find the model file, `model_file` or the document's source, relative to themselves)."""
    here = model_from_here(document, directory, model_file)
    files: dict[str, str] = {}
    total_flops = sum(op.get("flops") or 0 for op in document["operators"])
    for op in document["operators"]:
        if wants_harness(op):
            files[f"test_{file_stem(op['op'])}.py"] = verification_harness(op, document, here)
        if op.get("category") != Category.CUSTOM_DEV:
            continue
        name = file_stem(op["op"])
        files[f"op_desc_{name}.json"] = op_desc_json(op)
        files[f"op_plugin_{name}.yaml"] = op_plugin_yaml(op, document, name)
        files[f"repro_{name}.py"] = reproduction(op, document, here)
        files[f"ticket_{name}.md"] = ticket(op, document, total_flops)
    files[VERIFY_FILE] = verify_list(document)
    return files


def write_handoffs(document: Mapping[str, Any], directory: Path, model_file: Path | None = None) -> list[Path]:
    """Write the hand-offs into `directory` (created when missing); the paths written."""
    return write_files(handoff_files(document, directory, model_file), directory)


def to_verify(op: Mapping[str, Any]) -> str | None:
    """Why an operator must be verified numerically after the port, or None."""
    if op.get("category") not in (None, Category.DIRECT):
        return op["category"]
    if op.get("known") is False:
        return "unknown to the knowledge base"
    codes = [r["code"] for r in op.get("reasons") or () if r["code"] in CHECK_REASONS]
    if codes:
        level = Confidence.LOW if op.get("confidence") == Confidence.LOW else Confidence.MEDIUM
        return f"{level} confidence: " + ", ".join(dict.fromkeys(codes))
    likelihood = (op.get("risk") or {}).get("likelihood") or 0
    if likelihood >= LOW_CONFIDENCE_LIKELIHOOD:
        return f"low confidence: risk likelihood {likelihood}"
    return None


def verify_list(document: Mapping[str, Any]) -> str:
    lines = [
        f"# Operators to verify numerically after porting {one_line(document['model']['source'])} to "
        f"{one_line(document['target'])}",
        "# (opassess hand-off format: one qualified API per line; '#' starts a comment; the reason follows it)",
    ]
    for op in document["operators"]:
        why = to_verify(op)
        if why:
            lines.append(f"{one_line(op['op'])}  # {one_line(why)}")  # a name's newline cannot add a line
    return "\n".join(lines) + "\n"


def ticket(op: Mapping[str, Any], document: Mapping[str, Any], total_flops: int) -> str:
    """ticket_<op>.md: model-derived names as escaped single lines (a newline in one cannot start a heading)."""
    op = {**op, "op": one_line(op["op"]), "kind": one_line(op["kind"])}
    document = {**document, "model": {**document["model"], "source": one_line(document["model"]["source"]),
                                      "class": one_line(document["model"]["class"])}}
    flops = op.get("flops") or 0
    flop_share = percent(share(flops, total_flops)) if total_flops else "not measured (the trace counted no FLOPs)"
    candidates = [c for c in (op.get("replacement"), op.get("cann_op")) if c]
    candidates += [r["message"] for r in op.get("reasons") or () if r["code"] == "replacement"]
    supported = [aten for aten, ok in (op.get("aten_support") or {}).items() if ok]
    effort = op.get("person_days") or {}
    lines = [
        f"# Kernel request: `{op['op']}` for {document['target']} (torch_npu {document['torch_npu']})",
        "",
        f"Model: `{document['model']['source']}` ({document['model']['class']}). Category: custom-dev"
        + (f", estimated {days_detail(effort['likely'], effort['low'], effort['high'], ' person-days')}"
           if effort else "") + ".",
        f"Reproduction: `repro_{file_stem(op['op'])}.py` (runs on the NPU when torch_npu is importable).",
        "",
        "## Schema",
        "",
        f"- operator: `{op['op']}` ({op['kind']})",
        f"- ATen ops dispatched: {', '.join(f'`{a}`' for a in op.get('aten') or ()) or 'none recorded'}",
        "",
        "## Signatures (shapes, dtypes, attributes, calls)",
        "",
        "| # | input shapes | input dtypes | attributes | calls |",
        "|--:|---|---|---|--:|",
    ]
    for index, sig in enumerate(op.get("signatures") or (), 1):
        dtypes = ", ".join(str(d) for d in sig["input_dtypes"])
        lines.append(f"| {index} | `{json.dumps(sig['input_shapes'])}` | {dtypes} | "
                     f"`{json.dumps(sig['attrs'], sort_keys=True)}` | {sig['count']} |")
    lines += [
        "",
        f"Calls in one forward pass: {op['count']}. FLOP share of the model: {flop_share}.",
        "",
        "## Candidate NPU ops",
        "",
        *([f"- {c}" for c in candidates] or ["- none known: a new Ascend C kernel"]),
        *([f"- ATen ops with an NPU kernel to build on: {', '.join(supported)}"] if supported else []),
        "",
        "## Why it needs a kernel",
        "",
        *[f"- {r['code']}: {r['message']}" for r in op.get("reasons") or ()],
        "",
        "## Where it is called",
        "",
        *[f"- `{shown_source(s)}`" for s in op.get("source") or ()],
        "",
        "## Acceptance",
        "",
        "- [ ] the reproduction runs on the NPU for every signature above",
        "- [ ] outputs match the CPU reference within the agreed tolerance",
        "- [ ] performance measured against the reference implementation",
        "",
    ]
    return "\n".join(lines)


def reproduction(op: Mapping[str, Any], document: Mapping[str, Any], here: str | None = None) -> str:
    signatures = [{k: sig[k] for k in ("attrs", "input_shapes", "input_dtypes", "count")}
                  for sig in op.get("signatures") or ()]
    # model-derived text enters the code as repr() literals and the docstring as escaped single lines (escape.py)
    return _REPRO.format(
        op=op["op"], kind=op["kind"], target=document["target"], model=document["model"]["source"],
        op_line=one_line(op["op"]), kind_line=one_line(op["kind"]), target_line=one_line(document["target"]),
        here=here, signatures=json.dumps(signatures, indent=1), loading=MODEL_LOADING,
    )


_REPRO = '''"""Minimal reproduction of {op_line} ({kind_line}), custom-dev on {target_line}: written by `opassess scan
--handoff`.

Run it from anywhere: python THIS_FILE (it finds the model relative to itself, or at $OPASSESS_MODEL). It imports the
model file first (which registers the project's operators), then calls the operator once per captured signature with
random inputs of the captured shapes and dtypes, on the NPU when torch_npu is importable, else on the CPU (the
reference).
"""
import importlib
import importlib.util
import inspect
import json
import os
import sys
from pathlib import Path

import torch

OPERATOR = {op!r}
KIND = {kind!r}
MODEL_SOURCE = {model!r}
MODEL_FROM_HERE = {here!r}
SIGNATURES = json.loads(r"""{signatures}""")


{loading}

def make_input(shape, dtype, device):
    if shape is None:
        return None
    dtype = getattr(torch, dtype or "float32")
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape, dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.rand(shape, device=device) > 0.5
    return torch.randint(0, 8, shape, dtype=dtype, device=device)


def main():
    try:
        import torch_npu  # noqa: F401

        device = "npu"
    except ImportError:
        device = "cpu"
    model = load_model_module()
    call = resolve(model)
    for index, signature in enumerate(SIGNATURES, 1):
        inputs = [make_input(s, d, device) for s, d in zip(signature["input_shapes"], signature["input_dtypes"])]
        if KIND == "module":  # the captured attributes configure the module; the inputs go to its forward
            output = call(**signature["attrs"]).to(device)(*inputs)
        else:
            args, kwargs = schema_arguments(call, inputs, signature["attrs"])
            output = call(*args, **kwargs)
        shapes = [tuple(t.shape) for t in (output if isinstance(output, (tuple, list)) else [output])
                  if isinstance(t, torch.Tensor)]
        print(f"signature {{index}} on {{device}}: {{OPERATOR}} -> {{shapes}} "
              f"({{signature['count']}} call(s) in the model)")


if __name__ == "__main__":
    main()
'''
