"""The route facts (kb/route_facts.json, built by tools/kb_routes.py): HCCL, ONNX -> CANN, inference quantisation.

Three lookups behind one loader, each record keeping its table row so a report cites e.g.
"hccl_distributed_support.tsv:7": what HCCL does with a torch.distributed feature (`hccl`), the CANN operator ATC
converts an ONNX op to at an opset (`onnx_op`), and which quantisation schemes a serving engine runs on a chip
(`quant`).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path

from ..errors import KnowledgeBaseError
from ..resources import data_path

FACTS_FILE = "kb/route_facts.json"
SUPPORTED_FORMAT = 1
HCCL_TABLE = "hccl_distributed_support.tsv"
ONNX_TABLE = "msit_onnx_to_cann_op_map.tsv"
QUANT_TABLE = "ascend_inference_quant_support.tsv"


@dataclass(frozen=True)
class HcclFact:
    """One torch.distributed feature on HCCL: status (supported / emulated / unsupported / conditional / restricted /
    param-converted), whether only the docs say so, the dtypes the row lists, dtypes gated to a product generation."""

    row: int
    feature: str
    names: tuple[str, ...]
    status: str
    documented: bool
    dtypes: tuple[str, ...]
    gated_dtypes: tuple[str, ...]
    gated_from: str  # the products.toml kernel column from which gated_dtypes work ("950"), "" when none
    detail: str

    @property
    def cite(self) -> str:
        doc = " (doc)" if self.documented else ""
        return f"{HCCL_TABLE}:{self.row} {self.feature}: {self.status}{doc}"


@dataclass(frozen=True)
class OnnxMapping:
    """The CANN operator an ONNX op converts to at one opset (PartitionedCall: lowered as a subgraph)."""

    op_type: str
    opset: int
    cann_op: str
    row: int

    @property
    def cite(self) -> str:
        return f"{ONNX_TABLE}:{self.row} {self.op_type}@{self.opset} -> {self.cann_op}"


@dataclass(frozen=True)
class QuantScheme:
    """One quantisation scheme of a serving engine, with its status per product column as the table states it."""

    row: int
    engine: str
    scheme: str
    quant_type: str
    layer: str
    support: tuple[tuple[str, str], ...]  # (kernel column, status as written: yes / no / TBD / WIP / functional ...)

    def status(self, kernel: str) -> str:
        """The stated status on a product ('' when the table has no cell for it)."""
        return dict(self.support).get(kernel, "")

    @property
    def cite(self) -> str:
        return f"{QUANT_TABLE}:{self.row} {self.engine} {self.scheme} ({self.layer or 'any layer'})"


class RouteFacts:
    """Lookups over route_facts.json; build with load_route_facts()."""

    def __init__(self, data: dict, path: Path):
        if data.get("format") != SUPPORTED_FORMAT:
            raise KnowledgeBaseError(f"{path}: format {data.get('format')!r}, expected {SUPPORTED_FORMAT}")
        self.path = path
        self._data = data

    @property
    def provenance(self) -> dict:
        """Generator, date, source tables (sha256, rows) and their `#` source lines."""
        return {k: self._data[k] for k in ("generator", "generated_at", "sources", "upstream")}

    @cached_property
    def hccl_facts(self) -> tuple[HcclFact, ...]:
        """Every row of the HCCL table, in table order."""
        return tuple(HcclFact(e["row"], e["feature"], tuple(e.get("names", ())), e["status"], e["documented"],
                              tuple(e.get("dtypes", ())), tuple(e.get("only_from", {}).get("dtypes", ())),
                              e.get("only_from", {}).get("product", ""), e.get("detail", ""))
                     for e in self._data["hccl"])

    def hccl(self, api: str) -> HcclFact | None:
        """The row about a qualified torch name: exact, else the same last name under the row name's module
        (torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook -> the DDP comm hooks row)."""
        api = api.replace(".distributed_c10d.", ".")
        for fact in self.hccl_facts:
            if api in fact.names:
                return fact
        last = api.rsplit(".", 1)[-1]
        for fact in self.hccl_facts:
            for name in fact.names:
                module, _, short = name.rpartition(".")
                if short == last and api.startswith(module + "."):
                    return fact
        return None

    def hccl_feature(self, word: str) -> HcclFact | None:
        """The first row whose feature text contains `word` ('collective dtypes', 'timeout', 'recvAnysource')."""
        return next((f for f in self.hccl_facts if word in f.feature), None)

    @cached_property
    def _onnx(self) -> dict[int, dict[str, OnnxMapping]]:
        return {int(opset): {op: OnnxMapping(op, int(opset), cann, row) for op, (cann, row) in ops.items()}
                for opset, ops in self._data["onnx"]["opsets"].items()}

    @property
    def onnx_opsets(self) -> tuple[int, ...]:
        """The opsets the ONNX map lists, ascending."""
        return tuple(sorted(self._onnx))

    def onnx_op(self, op_type: str, opset: int) -> OnnxMapping | None:
        """The mapping of an ai.onnx op at exactly this opset (None when the map does not list it there)."""
        return self._onnx.get(opset, {}).get(op_type)

    def onnx_opsets_of(self, op_type: str) -> tuple[int, ...]:
        """Every opset at which the map lists an ai.onnx op."""
        return tuple(opset for opset in self.onnx_opsets if op_type in self._onnx[opset])

    @cached_property
    def quant_schemes(self) -> tuple[QuantScheme, ...]:
        """Every quantisation row, in table order."""
        return tuple(QuantScheme(e["row"], e["engine"], e["scheme"], e.get("quant_type", ""), e.get("layer", ""),
                                 tuple(sorted(e.get("support", {}).items())))
                     for e in self._data["quant"])


@cache
def _load(path: str) -> RouteFacts:
    from ..datafile import read_generated

    return read_generated(path, "route facts table", "tools/kb_routes.py", RouteFacts)


def load_route_facts(path: Path | None = None) -> RouteFacts:
    """The shipped route facts (read once per process), or those at `path`."""
    return _load(str(path or data_path(FACTS_FILE)))
