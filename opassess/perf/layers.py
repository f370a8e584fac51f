"""What the layout's communication is sized by, read from the capture: the hidden size, the tokens of one
micro-batch, the repeated layers (transformer blocks) and the mixture-of-experts layers among them.

hidden: the input width most Linear calls share (a Llama block's q, k, v, o, gate and up projections all take
`hidden`); tokens: that Linear's input elements / hidden; layers: the largest group of sibling modules of one class
under a numbered list (model.layers.0 .. model.layers.31) holding Linear calls; MoE layers: modules whose class names
a mixture of experts (MoE, SparseMoe) or a path ending in `experts`, counted once per block.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..dtypes import element_bytes, numel
from ..records import Inventory, OpNode

_NUMBERED = re.compile(r"^(.*)\.(\d+)$")
_MOE = re.compile(r"moe|mixtureofexperts", re.IGNORECASE)


@dataclass(frozen=True)
class ModelShape:
    hidden: int
    tokens: int  # per micro-batch (batch x sequence)
    element_bytes: int  # of the activations the collectives move
    layers: int  # repeated blocks (0: none found)
    moe_layers: int
    block: str  # "model.layers" ("" when none found)


def _linears(inventory: Inventory) -> list[OpNode]:
    return [n for o in inventory.operators if o.kind != "optimizer" for n in o.nodes
            if isinstance(n.attrs.get("in_features"), int) and n.input_shapes and n.input_shapes[0]]


def _blocks(module_types: dict[str, str], paths: set[str]) -> tuple[str, int]:
    groups: Counter[tuple[str, str]] = Counter()
    for path, kind in module_types.items():
        match = _NUMBERED.match(path)
        if match and any(p == path or p.startswith(path + ".") for p in paths):
            groups[(match.group(1), kind)] += 1
    if not groups:
        return "", 0
    (parent, _kind), count = groups.most_common(1)[0]
    return parent, count


def model_shape(inventory: Inventory) -> ModelShape | None:
    """The shape the collectives are sized by; None when the capture has no Linear call to read it from."""
    linears = _linears(inventory)
    if not linears:
        return None
    hidden = Counter(n.attrs["in_features"] for n in linears).most_common(1)[0][0]
    node = next(n for n in linears if n.attrs["in_features"] == hidden)
    tokens = max(1, numel(node.input_shapes[0]) // hidden)
    block, layers = _blocks(dict(inventory.capture.module_types), {n.module_path for n in linears})
    moe = {path.rsplit(".", 1)[0] if path.endswith(".experts") else path
           for path, kind in inventory.capture.module_types.items()
           if (_MOE.search(kind) or path.endswith(".experts")) and (not block or path.startswith(block + "."))}
    moe_blocks = {m for m in moe if not any(m != o and m.startswith(o + ".") for o in moe)}
    return ModelShape(hidden=hidden, tokens=tokens, element_bytes=element_bytes(node.input_dtypes[0]),
                      layers=layers, moe_layers=len(moe_blocks), block=block)
