"""Signals: the facts measured on the traced model that scores and risks are computed from, one record per operator."""
from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..dtypes import node_bytes
from ..findings.graph import DataFlow
from ..messages import N_, Text
from ..records import ClassifiedOp, Finding, Inventory, Reason
from .weights import Weights

# Kernel version ranges as the knowledge base's evidence writes them ("npu_aten_ops: add [aclnn v2.1..newest;
# aclop v2.1..2.12]", "v*..2.12", "v2.1,v2.2", "aclnn all", "torch_npu native") and as the Ascend tables do
# ("[v2.1..v2.12]", "all_version").
_RANGE = re.compile(r"v?(\*|\d+\.\d+)\s*\.\.\s*(newest|v?\d+\.\d+)")
_SINGLE = re.compile(r"\bv(\d+\.\d+)\b")
_ALL = re.compile(r"all_version|\ball\b|torch_npu native")
_DEPRECATED = re.compile(r"deprecated", re.IGNORECASE)
# Classifier reasons naming ATen ops the NPU never runs (the CPU/meta decomposition of a composite torch_npu takes
# whole): their aten_support entry is kept for the record but is not a missing kernel.
_NOT_JUDGED = ("composite", "cpu-only-decomposition")


@dataclass(frozen=True)
class ModelContext:
    """Model-wide facts an operator is measured against: compute per operator, the main path."""

    measure: str  # "roofline" (flops/ridge vs bytes from the trace) | "size proxy" (bytes from shapes)
    units: Mapping[str, float]  # operator key -> compute units (byte-equivalents)
    total: float
    main_path: frozenset[str]  # node names on a longest input-to-output path
    has_edges: bool
    # The time model's step on the target (opassess/perf), when there is one: operator key -> estimated us, and
    # the part at risk; the risk's impact reads the share of the step, the performance score the share at risk
    times: Mapping[str, float] = field(default_factory=dict)
    at_risk: Mapping[str, float] = field(default_factory=dict)
    step_us: float = 0.0
    time_measure: str = ""

    @classmethod
    def of(cls, inventory: Inventory, weights: Weights, flow: DataFlow | None = None,
           performance: Any = None) -> ModelContext:
        """Measure compute per operator and the main path of one inventory (`flow`: its capture's data-flow graph,
        when the caller already built it). With the time model's `performance` (opassess.perf.Performance), an
        operator's estimated time and time at risk on the target are kept beside its compute."""
        nodes = [node for operator in inventory.operators for node in operator.nodes]
        traced = any(node.flops or node.bytes_moved for node in nodes)
        ridge = weights.signals.compute.ridge_flops_per_byte
        units: dict[str, float] = {}
        for operator in inventory.operators:
            if traced:
                # Roofline: a node takes as long as the larger of its compute and memory time, both expressed
                # in bytes moved at the ridge point. Example: 2e9 flops and 1e6 bytes -> max(1e7, 1e6) = 1e7.
                value = sum(max(node.flops / ridge, node.bytes_moved) for node in operator.nodes)
            else:
                value = sum(float(node_bytes(node)) for node in operator.nodes)  # the size proxy
            units[operator.key] = float(value)
        flow = flow if flow is not None else DataFlow.of(inventory.capture)
        step = getattr(performance, "step", None)
        timed = {}
        if step is not None and step.step_us > 0:
            timed = {"time_measure": Text(N_("estimated step time on %(product)s"), {"product": step.product}),
                     "step_us": step.step_us, "times": {o.op: o.us for o in step.operators},
                     "at_risk": {o.op: o.at_risk_us for o in step.operators}}
        return cls(**timed,
            measure="roofline" if traced else "size proxy",
            units=units,
            total=sum(units.values()),
            main_path=flow.main_path(),
            has_edges=bool(inventory.capture.edges),
        )

    def share(self, op: str) -> float:
        return self.units.get(op, 0.0) / self.total if self.total > 0 else 0.0

    def time_share(self, op: str) -> float:
        """The operator's estimated time as a share of the estimated step (0 without a time model)."""
        return self.times.get(op, 0.0) / self.step_us if self.step_us > 0 else 0.0

    def at_risk_share(self, op: str) -> float:
        """The operator's estimated time at risk as a share of the estimated step (0 without a time model)."""
        return self.at_risk.get(op, 0.0) / self.step_us if self.step_us > 0 else 0.0


@dataclass(frozen=True)
class OpSignals:
    """What was measured for one operator (over all its occurrences)."""

    dtypes: tuple[str, ...]  # every tensor dtype its nodes saw, inputs and outputs
    max_rank: int
    input_shapes: int  # distinct input shape tuples
    attr_combos: int  # distinct attribute combinations among the signatures that hit an attribute limit
    attr_names: tuple[str, ...]
    data_dependent: tuple[str, ...]  # ATen ops whose output size depends on the data
    aten_ops: tuple[str, ...]  # the ATen ops whose NPU support the classifier judged
    missing_kernels: tuple[str, ...]  # ... of which have no NPU kernel
    aten_calls: int  # ATen calls dispatched, all occurrences
    layout_calls: tuple[str, ...]  # ... of which move memory (permute, clone, ...), one entry per call
    collectives: tuple[str, ...]  # distributed ATen ops
    reasons: tuple[Reason, ...]  # all the classifier's reasons (each criterion picks the codes its table names)
    ai_cpu_reasons: tuple[Reason, ...]  # reasons that place the op on the CPU
    limit_reasons: tuple[Reason, ...]  # attribute values outside documented limits
    versions: tuple[int, int] | None  # (releases with every kernel, releases in span); None: no range in evidence
    version_evidence: str  # the ranges read, for the report
    deprecated: tuple[Reason, ...]
    findings: tuple[Finding, ...]
    occurrences: int
    compute_units: float
    compute_share: float
    compute_measure: str
    on_main_path: bool | None  # None when the capture has no edges
    at_risk_share: float = 0.0  # the time model: estimated time at risk over the estimated step (0 without one)
    at_risk_us: float = 0.0
    time_share: float | None = None  # the time model: estimated time over the estimated step; None without one
    time_measure: str = ""


def measure(op: ClassifiedOp, context: ModelContext, weights: Weights, findings: Sequence[Finding] = ()) -> OpSignals:
    """Measure one classified operator's signals on the traced model."""
    operator = op.operator
    nodes = operator.nodes
    rules = weights.signals
    not_judged = {name for name in {*op.aten_support, *(c.qualified for n in nodes for c in n.aten)}
                  if any(r.code in _NOT_JUDGED and _names(r.message, name) for r in op.reasons)}
    # The calls the NPU would run: a composite's traced decomposition is not among them.
    calls = [call for node in nodes for call in node.aten if call.qualified not in not_judged]
    called = {call.op for call in calls} | {entry for node in nodes for entry in node.entry}

    dtypes = _unique(d for node in nodes for d in (*node.input_dtypes, *node.output_dtypes))
    if not nodes:
        dtypes = _unique(d for sig in operator.signatures for d in sig.input_dtypes)
    shapes = [s for node in nodes for s in node.input_shapes] or [
        s for sig in operator.signatures for s in sig.input_shapes]
    max_rank = max((len(s) for s in shapes if s is not None), default=0)

    data_dependent = [name for name in sorted(called) if name in rules.shape_match.data_dependent_ops]
    # aten::index with a bool index tensor is boolean-mask indexing: the output size is the mask's popcount.
    if any(call.op == "aten::index" and "bool" in call.input_dtypes for call in calls):
        data_dependent.append("aten::index (bool mask)")

    limit_reasons = tuple(r for r in op.reasons if r.code in rules.special_attrs.reason_codes)
    kernel_reasons = [r for r in op.reasons if r.code in rules.version_compat.reason_codes]
    versions, version_text = _versions(kernel_reasons, rules.version_compat.oldest, rules.version_compat.newest)
    involved = {node.name for node in nodes}
    return OpSignals(
        dtypes=dtypes,
        max_rank=max_rank,
        input_shapes=len({json.dumps(sig.input_shapes) for sig in operator.signatures}) or 1,
        attr_combos=_limit_combos(op, limit_reasons),
        attr_names=tuple(sorted({name for sig in operator.signatures for name in sig.attrs})),
        data_dependent=tuple(data_dependent),
        aten_ops=tuple(op.aten_support),
        missing_kernels=tuple(name for name, ok in op.aten_support.items() if not ok and name not in not_judged),
        aten_calls=len(calls),
        layout_calls=tuple(call.op for call in calls if call.op in rules.memory_layout.layout_ops),
        collectives=tuple(sorted(name for name in called
                                 if name.partition("::")[0] in rules.multi_card.comm_namespaces)),
        reasons=tuple(op.reasons),
        ai_cpu_reasons=tuple(r for r in op.reasons if r.code in weights.risk.likelihood.ai_cpu_reason_codes),
        limit_reasons=limit_reasons,
        versions=versions,
        version_evidence=version_text,
        deprecated=tuple(r for r in kernel_reasons if _DEPRECATED.search(r.evidence)),
        findings=tuple(f for f in findings if operator.key in f.ops or involved.intersection(f.nodes)),
        occurrences=operator.count,
        compute_units=context.units.get(operator.key, 0.0),
        compute_share=context.share(operator.key),
        compute_measure=context.measure,
        on_main_path=bool(involved & context.main_path) if context.has_edges else None,
        at_risk_share=context.at_risk_share(operator.key),
        at_risk_us=context.at_risk.get(operator.key, 0.0),
        time_share=context.time_share(operator.key) if context.step_us > 0 else None,
        time_measure=context.time_measure,
    )


def measure_all(classified: Sequence[ClassifiedOp], context: ModelContext, weights: Weights,
                findings: Sequence[Finding] = ()) -> Mapping[str, OpSignals]:
    """Every classified operator's signals, by operator key: measured once, read by the scores and the estimate."""
    return {op.operator.key: measure(op, context, weights, findings) for op in classified}


def _limit_combos(op: ClassifiedOp, limit_reasons: Sequence[Reason]) -> int:
    """Distinct attribute combinations among the signatures an attribute-limit reason names (1 if none is named)."""
    signatures = op.operator.signatures
    indices = {r.signature for r in limit_reasons if r.signature is not None and r.signature < len(signatures)}
    if not indices:
        return 1 if limit_reasons else 0
    return len({json.dumps(signatures[i].attrs, sort_keys=True, default=str) for i in indices})


def _names(message: str, aten: str) -> bool:
    """Whether `message` names the ATen op `aten` as a whole word ("aten::mean" is not named by "aten::mean.dim")."""
    return re.search(rf"(?<![\w:.]){re.escape(aten)}(?![\w.])", message) is not None


def _unique(values: Iterable[str | None]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def _versions(reasons: Sequence[Reason], oldest: tuple[int, int], newest: tuple[int, int]) -> tuple[
        tuple[int, int] | None, str]:
    """Releases (major.minor) within [oldest, newest] in which every kernel named in the evidence exists.

    Each reason whose evidence carries version ranges is one kernel fact; its releases are the union of its
    ranges (a kernel may run through either of CANN's two paths), and the operator needs every kernel, so the
    facts intersect. Example with span 2.1..2.15 (15 releases): "[v2.7..newest]" -> 2.7..2.15 = 9 releases.
    """
    span = [(oldest[0], minor) for minor in range(oldest[1], newest[1] + 1)] if oldest[0] == newest[0] else []
    if not span:  # a span across major versions: count minors up to 99 per major (torch 3.x)
        span = [(major, minor) for major in range(oldest[0], newest[0] + 1) for minor in range(100)
                if oldest <= (major, minor) <= newest]
    covered: set[tuple[int, int]] | None = None
    texts = []
    for reason in reasons:
        releases = _releases(reason.evidence, span)
        if releases is None:
            continue
        texts.append(reason.evidence)
        covered = releases if covered is None else covered & releases
    if covered is None:
        return None, ""
    return (len(covered), len(span)), "; ".join(texts)


def _releases(evidence: str, span: list[tuple[int, int]]) -> set[tuple[int, int]] | None:
    """Releases of `span` one piece of evidence names; None when it names none (no version information)."""
    if _ALL.search(evidence):
        return set(span)
    found: set[tuple[int, int]] = set()
    matched = False
    rest = evidence
    for match in _RANGE.finditer(evidence):
        matched = True
        start = span[0] if match.group(1) == "*" else _parse(match.group(1))
        end = span[-1] if match.group(2) == "newest" else _parse(match.group(2))
        found |= {release for release in span if start <= release <= end}
        rest = rest.replace(match.group(0), " ")
    for match in _SINGLE.finditer(rest):  # single releases: "v2.1,v2.2"
        matched = True
        found.add(_parse(match.group(1)))
    if not matched:
        return None
    return found & set(span)


def _parse(text: str) -> tuple[int, int]:
    major, minor = text.lstrip("v").split(".")
    return int(major), int(minor)
