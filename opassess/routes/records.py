"""The records of the routes: what the worker's ONNX export sends (OnnxExport), how the parent judges it (OnnxRoute),
and the serving check (ServingCheck)."""
from __future__ import annotations

from dataclasses import dataclass

from ..vocabulary import EXPORTERS, ROUTES  # noqa: F401 - re-exported: `scan --route` and --exporter, stated once

VERDICTS = ("supported", "opset-dependent", "no CANN mapping")  # an ONNX node's verdict against the map
SERVING_STATUSES = ("supported", "risk", "unsupported", "no facts")  # a serving check line's status


@dataclass(frozen=True)
class OnnxFailure:
    """An export that failed: which exporter, the operator it names when the message names one, the message."""

    exporter: str
    op: str  # "aten::linalg_eig" / "" when the message names none
    message: str


@dataclass(frozen=True)
class OnnxExport:
    """What the worker sends back about its export (plain data, checked by isolation/wire.py): the opset asked for and
    the one the model holds, the exporter that produced it ('' when none did), op counts per (domain, op_type), and
    every failed attempt (a fallback's earlier failure too)."""

    requested_opset: int
    opset: int  # the model's ai.onnx opset (0 when nothing was exported)
    exporter: str
    ops: tuple[tuple[str, str, int], ...]  # (domain, op_type, count); domain "" = ai.onnx
    failures: tuple[OnnxFailure, ...]


@dataclass(frozen=True)
class OnnxNode:
    """One ONNX op type of the exported model, judged against the ONNX -> CANN map at the model's opset."""

    op_type: str  # "Conv"; "<domain>::<op>" outside ai.onnx
    count: int
    cann_op: str  # "" when the map names none at this opset
    verdict: str  # one of VERDICTS
    evidence: str  # "msit_onnx_to_cann_op_map.tsv:1543 Conv@17 -> PartitionedCall", or what the map lacks


@dataclass(frozen=True)
class OnnxRoute:
    """The ONNX -> ATC route of one model: opset, exporter, judged nodes, export failures (custom-dev for the route)."""

    opset: int
    requested_opset: int
    exporter: str
    nodes: tuple[OnnxNode, ...]
    failures: tuple[OnnxFailure, ...]

    @property
    def exported(self) -> bool:
        return bool(self.exporter)


@dataclass(frozen=True)
class ServingItem:
    """One line of the serving check: what was checked, its status on the chip as the facts state it, the row."""

    subject: str  # "architecture LlamaForCausalLM" / "W8A8 (sglang W8A8 static, Linear)"
    status: str  # one of SERVING_STATUSES
    detail: str  # the table's cell ("yes", "TBD", ...) or what is missing
    evidence: str


@dataclass(frozen=True)
class ServingCheck:
    """The serving check of one model on one chip (`--route vllm-ascend`)."""

    engine: str
    product: str
    architecture: str
    quant: str  # "" when no --quant was given
    items: tuple[ServingItem, ...]
