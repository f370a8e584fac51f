"""The ONNX export of `scan --route onnx`, run in the worker (it runs model code): torch.onnx.export at the requested
opset, the dynamo exporter first where it works (it needs onnxscript, and must hold the opset asked for), the
TorchScript exporter otherwise; the exported graph reduced to op counts. What leaves the worker is `export_plain`'s
plain dict (isolation/wire.py checks it); an export that fails is recorded, never raised.

Constant nodes are moved to initializers before counting: they hold a value, not a computation (the map has no
row for them). Nodes calling a function the model defines are counted as that function's nodes; If/Loop bodies
are counted too.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import warnings
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from .records import OnnxExport, OnnxFailure

if TYPE_CHECKING:
    from ..options import ScanOptions

MAX_LINE = 300  # characters of the one line a failure is cut to


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


@contextlib.contextmanager
def _quiet():
    """The exporters' own output (warnings, C++ graph dumps on fds 1 and 2) kept out of the user's terminal."""
    saved = []
    try:
        with open(os.devnull, "wb") as null:
            for fd in (1, 2):
                saved.append((fd, os.dup(fd)))
                os.dup2(null.fileno(), fd)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)


def _failure(exporter: str, exc: BaseException | str) -> OnnxFailure:
    text = str(exc) if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    text = _ANSI.sub("", text)
    whole = " ".join(text.split())
    found = re.search(r"operator '([\w:.]+)'", whole) or re.search(r"\b(aten\.[\w]+(?:\.[\w]+)?)", whole) \
        or re.search(r"\b(aten::[\w]+)", whole)
    op = found.group(1) if found else ""
    # one line: the message's first (the exporters' reports run to pages: the operator is read from all of it)
    line = next((" ".join(part.split()) for part in text.splitlines() if part.strip()), "")
    return OnnxFailure(exporter, op[:200], line if len(line) <= MAX_LINE else line[:MAX_LINE - 1] + "…")


def _ai_onnx_opset(model) -> int:
    return next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)


def count_ops(model) -> Counter:
    """(domain, op_type) -> nodes, local functions expanded, subgraphs walked, Constant nodes left out."""
    functions = {(f.domain, f.name): f for f in model.functions}
    counts: Counter = Counter()

    def walk(nodes, depth: int = 0) -> None:
        if depth > 50:
            return
        for node in nodes:
            key = (node.domain, node.op_type)
            if key in functions:
                walk(functions[key].node, depth + 1)
                continue
            if node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
                counts[("" if node.domain == "ai.onnx" else node.domain, node.op_type)] += 1
            for attribute in node.attribute:
                for graph in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                    walk(graph.node, depth + 1)

    walk(model.graph.node)
    return counts


def check_onnx_installed() -> None:
    """MissingExtra (exit 2), one line naming the extra, when the onnx package is not installed or cannot be
    imported (built for another protobuf or numpy): the worker's exporters would otherwise both fail, and a broken
    environment would read as a model that needs custom development for the route."""
    from ..errors import MissingExtra

    if importlib.util.find_spec("onnx") is None:
        raise MissingExtra("--route onnx needs the onnx package, which is not installed: pip install 'opassess[onnx]'")
    try:
        import onnx  # noqa: F401 - our dependency, not model code: imported here to see that it works
    except Exception as exc:  # noqa: BLE001 - any failure of the import is a broken install
        first = (str(exc).splitlines() or [""])[0][:200]
        raise MissingExtra(f"--route onnx needs the onnx package, which is installed but cannot be imported "
                           f"({type(exc).__name__}: {first}): reinstall it, pip install 'opassess[onnx]'") from exc


def _dynamo(module, args, kwargs, opset: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = __import__("torch").onnx.export(module, args, kwargs=kwargs or None, dynamo=True,
                                                  opset_version=opset, verbose=False, report=False)
    return program.model_proto


def _torchscript(module, args, kwargs, opset: int):
    import onnx
    import torch

    buffer = io.BytesIO()
    inputs = (*args, kwargs) if kwargs else args
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, inputs, buffer, dynamo=False, opset_version=opset, do_constant_folding=True)
    return onnx.load_from_string(buffer.getvalue())


def export_onnx(module, args: tuple, kwargs: dict, opset: int, exporter: str = "auto") -> OnnxExport:
    """Export `module` on (args, kwargs) at `opset` and count its nodes; failures recorded, never raised."""
    import torch

    order = {"auto": ("dynamo", "torchscript"), "dynamo": ("dynamo",), "torchscript": ("torchscript",)}[exporter]
    failures: list[OnnxFailure] = []
    module.eval()
    for name in order:
        if name == "dynamo" and importlib.util.find_spec("onnxscript") is None:
            failures.append(OnnxFailure(name, "", "the dynamo exporter needs onnxscript, which is not installed"))
            continue
        try:
            with torch.no_grad(), _quiet():
                model = (_dynamo if name == "dynamo" else _torchscript)(module, args, kwargs, opset)
        except Exception as exc:  # noqa: BLE001 - an op the exporter cannot handle is a finding, not a crash
            failures.append(_failure(name, exc))
            continue
        got = _ai_onnx_opset(model)
        if got != opset:
            failures.append(OnnxFailure(name, "", f"exported at opset {got}, not the {opset} asked for"))
            continue
        counts = count_ops(model)
        ops = tuple(sorted((domain, op, n) for (domain, op), n in counts.items()))
        return OnnxExport(opset, got, name, ops, tuple(failures))
    return OnnxExport(opset, 0, "", (), tuple(failures))


def export_model(options: ScanOptions, progress: Callable[[str], None] | None = None) -> OnnxExport:
    """Load the model of a scan's options on the CPU and export it (runs model code: the worker's part)."""
    from ..load import LoadRequest, load_model

    if progress:
        progress(f"exporting to ONNX at opset {options.opset}")
    try:
        loaded = load_model(LoadRequest.of(options, device="cpu"))
    except Exception as exc:  # noqa: BLE001 - the capture succeeded; the route's failure is a finding of its own
        exporter = "dynamo" if options.exporter == "dynamo" else "torchscript"
        failure = _failure(exporter, f"the model could not be built on the CPU for the export: {exc}")
        return OnnxExport(options.opset, 0, "", (), (failure,))
    return export_onnx(loaded.module, loaded.args, loaded.kwargs, options.opset, options.exporter)


def export_plain(options: ScanOptions, progress: Callable[[str], None] | None = None) -> dict[str, object]:
    """The worker's part of `--route onnx`: the export as plain data (for isolation/wire.decode_onnx)."""
    result = export_model(options, progress)
    return {"requested_opset": result.requested_opset, "opset": result.opset, "exporter": result.exporter,
            "ops": [list(op) for op in result.ops],
            "failures": [{"exporter": f.exporter, "op": f.op, "message": f.message} for f in result.failures]}
