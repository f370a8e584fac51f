"""Join measured kernels to the report's operators: kernel name / type -> aclnn API -> ATen op -> operator.

How one kernel finds its operator (the first rule that names a candidate decides; shapes break ties):
  1. the kernel name starts with an aclnn API (`aclnnAddmm_MatMulCommon_MatMulV2` -> aclnnAddmm); the knowledge
     base's op-plugin map (aclnn.json) says which ATen ops call it (aclnnAddmm -> addmm); the operators of the
     report that dispatch one of them (forward `aten`, `entry` or with --train `backward_aten`) are the candidates;
  2. the kernel type is the CANN op the report names for an operator (`cann_op`: Conv2D, aclnnBatchNorm);
  3. `aclnn<Type>` is an API of the map (type Add -> aclnnAdd -> add), or the type lower-cased is an ATen op
     the report's operators dispatch (Relu -> relu).
Several candidates: the one whose captured input shapes appear most among the kernel's input shapes wins (shapes
are compared only where the export has them: not at Level0); still tied, the first in report order, and the
others are named. A kernel with no candidate is unmatched, with the reason.
"""
from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..datafile import TomlTable
from ..errors import KnowledgeBaseError
from ..kb import kernels as kernel_facts
from ..resources import data_path
from .read import Kernel

_API = re.compile(r"^(aclnn[A-Za-z0-9]+?)(?:_|$)")
COMMUNICATION = ("COMMUNICATION", "HCCL", "HCCL_AI_CPU")


@dataclass(frozen=True, slots=True)  # one per kernel launch: millions in a large export
class Match:
    """Where one kernel went: the index of its operator in the report (None: unmatched) and why."""

    kernel: Kernel
    op: int | None
    rule: str  # 'aclnn-name', 'cann-op', 'type', 'kernel-type', or for an unmatched kernel 'unmatched'
    why: str  # unmatched: the reason; matched: how (aclnnAddmm -> aten::addmm)
    shape_match: bool | None  # the kernel's input shapes include a captured signature's (None: no shapes)
    atens: tuple[str, ...] = ()  # the ATen base names the join went through (empty for a CANN-op match)
    others: tuple[str, ...] = ()  # other candidate operators (a tie broken by report order)


def base_name(aten: str) -> str:
    """'aten::add.Tensor' -> 'add'."""
    return aten.removeprefix("aten::").partition(".")[0]


@lru_cache(maxsize=1)
def api_to_aten() -> Mapping[str, frozenset[str]]:
    """aclnn API -> the ATen base names whose NPU kernel calls it (inverse of the kb's op-plugin map)."""
    inverse: dict[str, set[str]] = defaultdict(set)
    for overload, entry in kernel_facts.load().data["aten"].items():
        for api in entry.get("apis") or ():
            inverse[api].add(overload.partition(".")[0])
    return {api: frozenset(names) for api, names in inverse.items()}


@lru_cache(maxsize=1)
def kernel_types() -> Mapping[str, tuple[frozenset[str], str]]:
    """CANN op type -> (the ATen base names whose NPU kernels launch it, the evidence): data/kernel_types.toml."""
    root = TomlTable.of_file(data_path("kernel_types.toml"), "kernel-type file", KnowledgeBaseError)
    found: dict[str, tuple[frozenset[str], str]] = {}
    for row in root.tables("type"):
        entry = (frozenset(row.strings("aten")), row.string("evidence"))
        for ktype in row.strings("types"):
            found[ktype] = entry
        row.finish()
    root.finish()
    return found


class OperatorIndex:
    """The report's operators indexed by the ATen ops they dispatch and the CANN op they name."""

    def __init__(self, operators: Sequence[Mapping[str, Any]]) -> None:
        self.operators = operators
        self.by_aten: dict[str, list[int]] = defaultdict(list)
        self.by_cann: dict[str, list[int]] = defaultdict(list)
        for index, op in enumerate(operators):
            names = [*(op.get("aten") or ()), *(op.get("entry") or ()), *(op.get("backward_aten") or ())]
            for name in dict.fromkeys(base_name(a) for a in names):
                self.by_aten[name].append(index)
            if op.get("cann_op"):
                self.by_cann[op["cann_op"]].append(index)

    def dispatching(self, atens: frozenset[str]) -> list[int]:
        return sorted({i for name in atens for i in self.by_aten.get(name, ())})

    def dtypes_of(self, index: int) -> set[str]:
        return {d for sig in self.operators[index].get("signatures") or () for d in sig.get("input_dtypes") or ()
                if isinstance(d, str)}

    def shapes_of(self, index: int) -> set[tuple[int, ...]]:
        return {tuple(shape) for sig in self.operators[index].get("signatures") or ()
                for shape in sig.get("input_shapes") or () if isinstance(shape, list)}


def _candidates(kernel: Kernel, index: OperatorIndex) -> tuple[list[int], str, str, frozenset[str]]:
    """(candidate operator indexes, rule, how or why-not, the ATen base names joined through): by its aclnn API name;
    else, whatever its name prefix, by what it did: its type (a CANN op the report names, an aclnn<Type> API, an
    ATen op, a kernel type of data/kernel_types.toml) with its input shapes."""
    apis = api_to_aten()
    found = _API.match(kernel.name)
    not_by_name = ""
    if found:
        api = found.group(1)
        atens = apis.get(api)
        if atens is None:
            not_by_name = f"{api} is not in the knowledge base's ATen -> aclnn map (op-plugin)"
        elif index.dispatching(atens):
            return index.dispatching(atens), "aclnn-name", f"{api} -> aten::{', aten::'.join(sorted(atens))}", atens
        else:
            not_by_name = f"{api} runs aten::{', aten::'.join(sorted(atens))}; no operator of the report dispatches it"
    by_type = _by_type(kernel, index)
    if by_type is not None:
        return by_type
    if not_by_name:
        return [], "unmatched", not_by_name, apis.get(found.group(1), frozenset()) if found else frozenset()
    ktype = kernel.type or ""
    if (kernel.placement or "") in COMMUNICATION:
        return [], "unmatched", f"a {kernel.placement} task (collective communication), not a model operator", \
            frozenset()
    if not ktype:
        return [], "unmatched", "no aclnn API in its name and no kernel type (N/A at Level0): nothing to join on", \
            frozenset()
    return [], "unmatched", (f"type {ktype} is neither a CANN op the report names nor an aclnn API of an ATen op "
                             f"the report's operators dispatch (a format/dtype conversion or an op the capture "
                             f"did not see)"), frozenset()


def _by_type(kernel: Kernel, index: OperatorIndex) -> tuple[list[int], str, str, frozenset[str]] | None:
    """The join by the kernel's type, or None."""
    ktype = kernel.type or ""
    if not ktype:
        return None
    if index.by_cann.get(ktype):
        return list(index.by_cann[ktype]), "cann-op", f"CANN op {ktype}", frozenset()
    atens = api_to_aten().get(f"aclnn{ktype}")
    if atens and index.dispatching(atens):
        how = f"type {ktype} -> aclnn{ktype} -> aten::{', aten::'.join(sorted(atens))}"
        return index.dispatching(atens), "type", how, atens
    if index.by_aten.get(ktype.lower()):
        return list(index.by_aten[ktype.lower()]), "type", f"type {ktype} -> aten::{ktype.lower()}", \
            frozenset({ktype.lower()})
    known = kernel_types().get(ktype)
    if known is None or not index.dispatching(known[0]):
        return None
    measured = {s for s in kernel.input_shapes or () if s is not None}
    dtypes = {d for d in kernel.input_dtypes or () if d}
    ops = [op for op in index.dispatching(known[0]) if (not measured or index.shapes_of(op) & measured)
           and (not dtypes or not index.dtypes_of(op) or index.dtypes_of(op) & dtypes)]
    if not ops:  # what it did (shapes, dtypes) matches no captured signature: not joined on the type alone
        return None
    atens = frozenset(a for a in known[0] if index.by_aten.get(a))
    return ops, "kernel-type", f"type {ktype} -> aten::{', aten::'.join(sorted(atens))} (data/kernel_types.toml)", \
        atens


def match_kernel(kernel: Kernel, index: OperatorIndex) -> Match:
    ops, rule, how, atens = _candidates(kernel, index)
    how = sys.intern(how)  # the same text for every launch of a kernel: kept once
    if not ops:
        return Match(kernel, None, "unmatched", how, None, tuple(sorted(atens)))
    measured = {s for s in kernel.input_shapes or () if s is not None}
    if not measured:
        shape_match = None
        best = ops[0]
    else:
        scores = {op: len(index.shapes_of(op) & measured) for op in ops}
        best = max(ops, key=lambda op: (scores[op], -ops.index(op)))
        shape_match = scores[best] > 0
    tied = tuple(index.operators[op]["op"] for op in ops if op != best)
    return Match(kernel, best, rule, how, shape_match, tuple(sorted(atens)), tied)


def join(kernels: Sequence[Kernel], operators: Sequence[Mapping[str, Any]]) -> list[Match]:
    """One Match per kernel, in export order."""
    index = OperatorIndex(operators)
    return [match_kernel(kernel, index) for kernel in kernels]
