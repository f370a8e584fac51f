"""Decisions and priced changes: operators that share one cause and one fix are one model-level item, priced once.

A *decision* gathers the operators whose limits all come from one model-wide fact: the model's dtype has no kernel
on the target (910A has no bfloat16: one precision plan), or the kernel docs and the torch_npu API page disagree about
the target (one kernel check on the chip). A page with no mark for the target is not such a fact: the torch 2.7-2.13
pages mark no API for Atlas training series (910A: 1 of 3249 rows) and have no column for the inference products, so
their silence says nothing of one operator; the kernel facts judge it there as everywhere (api-undocumented informs).
A *priced change* is a parameter limit costed by the edit it needs: a no-op argument (interpolate scale_factor=1.0)
or a local rewrite (topk sorted=False -> sorted=True), from [changes].
An operator is covered only when every limit it trips is such a cause; it keeps its category and reasons and costs
the checks of its decisions plus its priced changes; each decision's own effort is added once.
Every figure comes from weights.toml ([decisions], [changes]); they are assumptions until calibrated.
"""
from __future__ import annotations

import ast
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..reasons import REASONS
from ..records import ClassifiedOp, Decision, Effort, Finding, Inventory, OpScore, Reason
from ..vocabulary import PROJECT_KINDS, Category
from .weights import Weights
from .weights_decisions import ALGORITHM, DecisionRules

NO_EFFORT = Effort(0.0, 0.0, 0.0)
PRECISION, KERNEL_CHECK = "precision", "kernel-check"
_DTYPE = re.compile(r"^input dtype (?P<dtype>\S+) is not supported by (?P<who>.+?) on (?P<product>.+?) "
                    r"\(allowed: (?P<allowed>[^)]*)\)")
_PARAM = re.compile(r"^(?P<param>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>.+?): ")


@dataclass(frozen=True)
class Change:
    """One parameter limit priced by the change it needs."""

    setting: str  # "sorted=False"
    tier: str  # "no-op" | "local-rewrite" | "algorithm"
    edit: str  # what to do


@dataclass(frozen=True)
class Cover:
    """How one operator is covered: the decisions it belongs to and its priced changes, and what it costs itself."""

    decisions: tuple[str, ...]
    changes: tuple[Change, ...]
    person_days: Effort
    basis: str


def change_of(reason: Reason, rules: DecisionRules) -> Change | None:
    """The tier of a param-limit reason ('sorted=False: sorted must be True on the NPU'); None for other reasons."""
    if reason.code != "param-limit":
        return None
    match = _PARAM.match(reason.message)
    if match is None:
        return None
    param, text = match["param"], match["value"]
    setting = f"{param}={text}"
    if param in rules.no_op_values and _is_one_of(text, rules.no_op_values[param]):
        return Change(setting, "no-op", f"drop {param}={text}: it leaves the result unchanged")
    if param in rules.local_rewrites:
        return Change(setting, "local-rewrite", rules.local_rewrites[param])
    return Change(setting, ALGORITHM, "a real algorithm change: the operator's category range")


def _is_one_of(text: str, values: tuple) -> bool:
    """'1.0', '(1.0, 1.0)' or '[1, 1]' against no-op values (numbers compare by value)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return False
    items = value if isinstance(value, (list, tuple)) and value else [value]
    return all(any(_same(item, v) for v in values) for item in items)


def _same(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b)
    return a == b


def _cause(reason: Reason, model_dtype: str) -> str | None:
    """The decision a reason is the cause of, or None."""
    if reason.code == "dtype":
        match = _DTYPE.match(reason.message)
        return PRECISION if match and match["dtype"] == model_dtype else None
    if reason.code == "kernel-product":  # the sources disagree about the product: one run on the chip settles it
        return KERNEL_CHECK
    return None


def _blocking(reason: Reason, weights: Weights) -> bool:
    """A reason that gives the operator work of its own: a limit reason ([effort] limit_reasons) or a code that can
    decide a non-direct verdict (the reason registry) which no decision or priced change covers."""
    if reason.code == "replacement":
        return reason.signature is not None  # a required replacement; the shared one is advice
    code = REASONS.get(reason.code)
    return reason.code in weights.effort.limit_reasons or (
        code is not None and code.decides in (Category.PARAM_CONVERTED, Category.CUSTOM_DEV))


def _points(values: Iterable[float]) -> str:
    return "-".join(f"{v:g}" for v in values)


def cover(op: ClassifiedOp, model_dtype: str, weights: Weights) -> Cover | None:
    """The operator's cover when every limit it trips is a decision's cause or a priced change (not an algorithm
    change); None when it has work of its own (custom-dev, unknown, the project's own kernel, another limit).
    Example (shipped weights): torch.topk(sorted=False) on Ascend 950, whose aclnnTopk doc lists 950 while the API
    page marks it ✘ (kernel-product + param-limit) = kernel check 0-0.02-0.05 + local rewrite 0.25-0.5-1 =
    0.25-0.52-1.05."""
    rules = weights.decisions
    if rules is None or not rules.group or op.category == Category.CUSTOM_DEV or not op.known \
            or op.operator.kind in PROJECT_KINDS:
        return None
    decisions: dict[str, None] = {}
    changes: dict[str, Change] = {}
    for reason in op.reasons:
        cause = _cause(reason, model_dtype)
        change = change_of(reason, rules)
        if cause is not None:
            decisions[cause] = None
        elif change is not None and change.tier != ALGORITHM:
            changes.setdefault(change.setting, change)
        elif _blocking(reason, weights):
            return None
    if not decisions and not changes:
        return None
    effort, parts = NO_EFFORT, []
    for name in decisions:
        per = rules.rules[name].per_operator
        effort = effort + Effort(*per)
        parts.append(f"{rules.rules[name].title} check {_points(per)}")
    for change in changes.values():
        tier = rules.changes[change.tier]
        effort = effort + Effort(*tier)
        parts.append(f"{change.setting}: {change.tier} {_points(tier)} ({change.edit})")
    return Cover(tuple(decisions), tuple(changes.values()), effort, " + ".join(parts))


def decide(scores: Sequence[OpScore], inventory: Inventory, findings: Sequence[Finding], weights: Weights,
           covers: Mapping[str, Cover]) -> tuple[Decision, ...]:
    """One Decision per cause some covered operator has: its operators, its effort (once, plus each operator's
    check) and, for precision, the plan (dtype on the target, loss scaling, overflow-prone operators)."""
    rules = weights.decisions
    if rules is None:
        return ()
    members: dict[str, list[str]] = {}
    for key, item in covers.items():
        for name in item.decisions:
            members.setdefault(name, []).append(key)
    by_key = {s.classified.operator.key: s.classified for s in scores}
    out = []
    for name in (PRECISION, KERNEL_CHECK):
        keys = members.get(name)
        if not keys:
            continue
        rule = rules.rules[name]
        once = Effort(*rule.effort)
        checks = sum((Effort(*rule.per_operator) for _ in keys), NO_EFFORT)
        basis = (f"{_points(rule.effort)} once + {len(keys)} operator type(s) x {_points(rule.per_operator)} "
                 f"(a check each)")
        if name == PRECISION:
            title, cause, plan = _precision(keys, by_key, scores, inventory, findings, rules)
        else:
            title = f"{rule.title}: one run on the chip confirms the kernels of {len(keys)} operator type(s)"
            cause = ("the kernel docs (CANN aclnn) and the torch_npu API page disagree about the target for these "
                     "operators, or their kernel falls back to the aclop path there: the kernel facts decide, not "
                     "verified on the chip (an API page with no mark for the target is no such cause: the kernel "
                     "facts judge those operators as on any product)")
            plan = ("run the model once on the target and compare every listed operator's output with the "
                    "reference run",)
        out.append(Decision(name=name, title=title, cause=cause, operators=tuple(sorted(keys)),
                            person_days=once + checks, once=once, basis=basis, plan=plan))
    return tuple(out)


def _precision(keys: list[str], by_key: Mapping[str, ClassifiedOp], scores: Sequence[OpScore], inventory: Inventory,
               findings: Sequence[Finding], rules: DecisionRules) -> tuple[str, str, tuple[str, ...]]:
    """Title, cause and plan lines of the precision decision: float16 with loss scaling where every covered kernel
    takes float16, else float32; the model's overflow-prone operators kept in float32."""
    dtype = inventory.model.dtype
    matches = [m for k in keys for r in by_key[k].reasons if r.code == "dtype"
               for m in [_DTYPE.match(r.message)] if m and m["dtype"] == dtype]
    product = matches[0]["product"] if matches else "the target"
    allowed = [set(a.strip() for a in m["allowed"].split(",")) for m in matches]
    target = "float16" if allowed and all("float16" in a for a in allowed) else "float32"
    p = rules.precision
    prone = overflow_prone(scores, findings, p)
    title = (f"precision plan: run in {target}" + (" with loss scaling" if target == "float16" else "")
             + f" on {product} ({dtype} has no kernel for {len(keys)} operator type(s))")
    cause = f"{product} has no {dtype} kernel for these operators (kernel facts)"
    plan = [f"run the model in {target} on {product}"
            + (" (torch_npu.npu.amp autocast to float16)" if target == "float16" else "")]
    if target == "float16":
        step = "this capture is a training step" if inventory.capture.step == "train" else "when training"
        plan.append(f"loss scaling {step}: torch_npu.npu.amp.GradScaler(init_scale={p.init_scale}, "
                    f"growth_interval={p.growth_interval}) (the seed's practice: 2**10, 2000)")
        plan.append("keep in float32 (overflow-prone in float16, max 65504): "
                    + (", ".join(prone) if prone else "none found in this capture"))
    plan.append("compare the outputs with the reference run once the switch is made")
    return title, cause, tuple(plan)


def overflow_prone(scores: Sequence[OpScore], findings: Sequence[Finding], rules) -> tuple[str, ...]:
    """Operators at risk of overflow in float16: an ATen op in overflow_aten (softmax, exp, norms, attention, the
    square and rsqrt of a norm), a reduction a hand-written-norm finding names (its mean of squares), or a reduction
    over at least large_reduction elements."""
    named = {key for f in findings if f.kind in rules.overflow_findings for key in f.ops}
    out = []
    for score in scores:
        op = score.classified.operator
        if any(a in rules.overflow_aten for a in op.aten) or op.key in named and any(
                a in rules.reduction_aten for a in op.aten) or any(
                call.op + ("." + call.overload if call.overload != "default" else "") in rules.reduction_aten
                and call.input_shapes and call.input_shapes[0] is not None
                and math.prod(call.input_shapes[0]) >= rules.large_reduction
                for node in op.nodes for call in node.aten):
            out.append(op.key)
    return tuple(sorted(out))
