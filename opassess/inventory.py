"""Inventory stage: group captured nodes into operators as users write them, with counts, modules and signatures."""
from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .records import Capture, Inventory, ModelInfo, Operator, OpNode, Signature


def signature_key(node: OpNode) -> str:
    """What makes two occurrences of an operator the same port: attributes, input shapes and dtypes."""
    return json.dumps([node.attrs, node.input_shapes, node.input_dtypes], sort_keys=True, default=str)


def _unique(values: Iterable[Any]) -> tuple:
    seen: dict[Any, None] = {}
    for value in values:
        if value is not None and value not in seen:
            seen[value] = None
    return tuple(seen)


def build_inventory(info: ModelInfo, capture: Capture) -> Inventory:
    """Group capture.nodes by operator key; operators ordered by first occurrence in the forward pass."""
    groups: dict[str, list[OpNode]] = {}
    for node in capture.nodes:
        groups.setdefault(node.key, []).append(node)
    operators = []
    for op, nodes in groups.items():
        by_signature: dict[str, list[OpNode]] = {}
        for node in nodes:
            by_signature.setdefault(signature_key(node), []).append(node)
        signatures = tuple(
            Signature(attrs=group[0].attrs, input_shapes=group[0].input_shapes, input_dtypes=group[0].input_dtypes,
                      count=len(group), modules=_unique(n.module_path for n in group),
                      sources=_unique(n.source for n in group))
            for group in by_signature.values()
        )
        operators.append(Operator(
            key=op,
            kind=nodes[0].kind,
            count=len(nodes),
            modules=_unique(n.module_path for n in nodes),
            signatures=signatures,
            aten=_unique(call.qualified for n in nodes for call in n.aten),
            sources=_unique(n.source for n in nodes),
            nodes=tuple(nodes),
            project_sources=_unique(n.project_source for n in nodes if n.project_source),
            flops=sum(n.flops for n in nodes),
            bytes_moved=sum(n.bytes_moved for n in nodes),
            entry=_unique(e for n in nodes for e in n.entry),
            backward_aten=_unique(call.qualified for n in nodes for call in n.backward),
            backward_flops=sum(n.backward_flops for n in nodes),
        ))
    return Inventory(model=info, capture=capture, operators=tuple(operators))
