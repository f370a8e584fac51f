"""The graph-mode facts (kb/graph_mode.json, written by tools/kb_graph.py) and the ATen op tags torch itself states
(opassess.graphmode judges with them; the source scan routes torch.compile sites by them)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ..datafile import read_kb_table
from ..records import AtenCall

TABLE = "graph_mode.json"
_KEYS = ("sources", "ge_converters", "ge_apis", "inductor_fallback", "verified", "capture")


@dataclass(frozen=True)
class GraphFacts:
    """Lookups over graph_mode.json; every answer carries the table row it came from."""

    path: Path
    data: Mapping[str, Any]

    def cite(self, table: str, row: int) -> str:
        """'torchair_ge_converter_status.tsv:6'."""
        return f"{self.data['sources'][table]['table']}:{row}"

    def ge_converter(self, aten: str) -> Mapping[str, Any] | None:
        """The converter entry of a qualified ATen op ('aten::add.Tensor'), None when none is registered."""
        return self.data["ge_converters"].get(aten)

    def ge_api(self, *names: str) -> tuple[str, Mapping[str, Any]] | None:
        """The first of `names` (operator key, qualified or base ATen op) the documented GE API list has."""
        for name in names:
            entry = self.data["ge_apis"].get(name)
            if entry is not None:
                return name, entry
        return None

    def inductor_fallback(self, aten: str) -> Mapping[str, Any] | None:
        """The fallback-list entry of a qualified ATen op, by overload first, then by its base name."""
        table = self.data["inductor_fallback"]
        return table.get(aten) or table.get(aten.split(".")[0])

    def verified(self, key: str) -> int | None:
        """The row of torch_npu's graph-verified API list naming `key` ('torch.addmm', 'Tensor.mul'), else None."""
        return self.data["verified"].get(key)

    @property
    def capture(self) -> Mapping[str, Any]:
        return self.data["capture"]

    def capture_cite(self, rule: str) -> str:
        """'graph_mode_capture_facts.tsv:7 (Ascend/torchair docs/zh/overview.md)' for a capture rule."""
        entry = self.capture[rule]
        return f"{self.cite('capture', entry['row'])} ({entry['path']})"

    def update_handler(self, op: str) -> Mapping[str, Any] | None:
        return self.capture["update_handlers"].get(op)

    @property
    def recapture_limit(self) -> int:
        return int(self.capture["recapture_limit"]["value"])


def load_graph_facts(directory: Path) -> GraphFacts:
    """The graph-mode facts of a knowledge-base folder; a missing or malformed table is one KnowledgeBaseError."""
    return _load(Path(directory) / TABLE)


@cache
def _load(path: Path) -> GraphFacts:
    return GraphFacts(path, read_kb_table(path, _KEYS, "tools/kb_graph.py"))


@cache
def op_arguments(aten: str) -> frozenset[str]:
    """The argument names of an ATen overload's schema ('aten::lstm.input' -> {'input', 'dropout', 'train', ...})."""
    handle = _handle(aten)
    return frozenset(a.name for a in handle._schema.arguments) if handle is not None else frozenset()


def _handle(aten: str):
    import torch

    namespace, _, rest = aten.partition("::")
    base, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), base), overload or "default")
    except (AttributeError, RuntimeError):
        return None


@cache
def op_tags(aten: str) -> frozenset[str]:
    """The tags PyTorch's own schema gives an ATen overload ('aten::nonzero' -> {'dynamic_output_shape', ...}):
    nondeterministic_seeded marks an RNG op, dynamic_output_shape and data_dependent_output a data-dependent result.
    Empty for an op torch does not know (a custom namespace not loaded here)."""
    handle = _handle(aten)
    return frozenset(str(tag).rsplit(".", 1)[-1] for tag in getattr(handle, "tags", ()))


def host_sync(call: AtenCall) -> bool:
    """An AtenCall reading a device value on the host (aten::_local_scalar_dense: .item(), .tolist(), `if t:`)."""
    return "data_dependent_output" in op_tags(call.qualified)


def data_dependent(call: AtenCall) -> bool:
    """An AtenCall whose output size depends on the data: tagged so by PyTorch, and for an indexing op only when an
    index is a boolean (or uint8) mask (aten::index.Tensor with int64 indices has a static size)."""
    if "dynamic_output_shape" not in op_tags(call.qualified):
        return False
    if "indices" in op_arguments(call.qualified):
        return any(d in ("bool", "uint8") for d in call.input_dtypes[1:])
    return True
