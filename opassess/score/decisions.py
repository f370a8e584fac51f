"""Decisions and priced changes: operators that share one cause and one fix are one model-level item, priced once.

A *decision* gathers the operators whose limits all come from one model-wide fact: the model's dtype has no kernel
on the target (910A has no bfloat16: one precision plan), or the kernel docs and the torch_npu API page disagree about
the target (one kernel check on the chip). A page with no mark for the target is not such a fact: the torch 2.7-2.13
pages mark no API for Atlas training series (910A: 1 of 3249 rows) and have no column for the inference products, so
their silence says nothing of one operator; the kernel facts judge it there as everywhere (api-undocumented informs).
Two more causes gather operators and source sites alike: the attention implementation (GPU attention libraries whose
routes all lead to the NPU's fused attention: one wrapper, [decisions.attention] routes) and the memory layout
(channels_last, which the NPU does not take: keep the default format, [decisions.layout] params and subjects).
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
from dataclasses import dataclass, replace

from ..messages import N_, Text, joined
from ..reasons import REASONS
from ..records import ClassifiedOp, Effort, Finding, Inventory, OpScore, Reason
from ..source.records import SourceEstimate
from ..vocabulary import PROJECT_KINDS, Category
from .records import Decision
from .weights import Weights
from .weights.decisions import ALGORITHM, DecisionRules

NO_EFFORT = Effort(0.0, 0.0, 0.0)
PRECISION, KERNEL_CHECK, ATTENTION, LAYOUT, FLOAT64 = "precision", "kernel-check", "attention", "layout", "float64"
ORDER = (PRECISION, FLOAT64, ATTENTION, LAYOUT, KERNEL_CHECK)  # the order decisions are listed in
SHARED = (ATTENTION, LAYOUT, FLOAT64)  # a decision only when at least min_members places share the cause
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
        return Change(setting, "no-op", Text(N_("drop %(setting)s: it leaves the result unchanged"),
                                             {"setting": setting}))
    if param in rules.local_rewrites:
        return Change(setting, "local-rewrite", rules.local_rewrites[param])
    return Change(setting, ALGORITHM, Text(N_("a real algorithm change: the operator's category range")))


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


def _cause(reason: Reason, model_dtype: str, rules: DecisionRules, replacement: str | None = None,
           float64: bool = False) -> str | None:
    """The decision a reason is the cause of, or None. `replacement`: the operator's route API
    (ClassifiedOp.replacement, from the whole route where a library-route reason quotes its first clause only).
    `float64`: every call of the operator carries float64 (a CPU fallback of a cast to float64 goes with the cast)."""
    if reason.code == "dtype":
        match = _DTYPE.match(reason.message)
        if match and match["dtype"] == model_dtype:
            return PRECISION
        return FLOAT64 if match and match["dtype"] == "float64" else None
    if reason.code == "dtype-cast":  # "the NPU returns float32 where this model expects float64"
        return FLOAT64 if "float64" in reason.message and model_dtype != "float64" else None
    if reason.code == "cpu-fallback" and float64 and model_dtype != "float64":
        return FLOAT64
    if reason.code == "kernel-product":  # the sources disagree about the product: one run on the chip settles it
        return KERNEL_CHECK
    if reason.code == "param-limit":
        match = _PARAM.match(reason.message)
        return LAYOUT if match and match["param"] in rules.rules[LAYOUT].params else None
    if reason.code == "library-route" or reason.code == "replacement" and reason.signature is not None:
        return ATTENTION if _names_route(f"{reason.message} {replacement or ''}", rules) else None
    return None


def _names_route(text: str, rules: DecisionRules) -> bool:
    """Whether a route (a reason's message, a site's npu_route) leads to one of the attention routes."""
    return any(re.search(rf"\b{re.escape(route)}\b", text) for route in rules.rules[ATTENTION].routes)


def site_cause(finding, rules: DecisionRules | None) -> str | None:
    """The decision a source site belongs to: an attention library's import or call whose route (the third-party
    table's) names an attention route, or a site naming a layout subject; None for kernels, notes and the rest."""
    if rules is None or not rules.group or finding.effort_free or finding.size is not None or finding.built_by:
        return None
    if finding.subject in rules.rules[LAYOUT].subjects:
        return LAYOUT
    if finding.kind in ("library-import", "library-call") and _names_route(finding.npu_route, rules):
        return ATTENTION
    return None


def shared_causes(scores: Sequence[OpScore], source: Sequence[SourceEstimate], weights: Weights,
                  model_dtype: str = "") -> frozenset[str]:
    """The causes shared widely enough to be decisions of their own: attention when at least min_members attention
    calls (reached library-call sites, and operators with an attention cause no site carries) share it, layout when
    at least min_members places (operators, sites) ask for it, float64 when at least min_members operator types of a
    model that is not float64 compute in it. Below that, each keeps its own price."""
    rules = weights.decisions
    if rules is None or not rules.group:
        return frozenset()
    carried = {key for item in source for key in item.operators}
    counts: dict[str, int] = {}
    for item in source:
        name = site_cause(item.finding, rules) if item.reached and item.covered_by is None else None
        if name is not None and item.finding.kind != "library-import":
            counts[name] = counts.get(name, 0) + 1
    for score in scores:
        if score.classified.operator.key in carried:
            continue
        op = score.classified
        float64 = carries_float64(op)
        for found in {_cause(r, model_dtype, rules, op.replacement, float64) for r in op.reasons} & set(SHARED):
            assert found is not None  # the intersection holds names only
            counts[found] = counts.get(found, 0) + 1
    return frozenset(name for name in SHARED if counts.get(name, 0) >= rules.rules[name].min_members)


def carries_float64(op: ClassifiedOp) -> bool:
    """Every call of the operator takes or returns float64."""
    nodes = op.operator.nodes
    return bool(nodes) and all("float64" in (*n.input_dtypes, *n.output_dtypes) for n in nodes)


def decide_sites(source: Sequence[SourceEstimate], weights: Weights, shared: frozenset[str]
                 ) -> tuple[tuple[SourceEstimate, ...], dict[str, list[str]], dict[str, list[str]]]:
    """Reached sites a decision covers cost only its check (its switch is priced once, on the decision); returns the
    sites and, per decision, the keys of its sites and the captured operators they carry (which cost nothing of
    their own: basis source-finding)."""
    rules = weights.decisions
    members: dict[str, list[str]] = {}
    linked: dict[str, list[str]] = {}
    out = []
    for item in source:
        name = site_cause(item.finding, rules) if item.reached and item.covered_by is None else None
        if name not in shared:
            out.append(item)
            continue
        assert rules is not None  # site_cause found a cause
        per = rules.rules[name].per_operator
        members.setdefault(name, []).append(item.key)
        linked.setdefault(name, []).extend(item.operators)
        out.append(replace(item, person_days=Effort(*per),
                           basis=Text(N_("%(decision)s check %(points)s (the switch is priced once, on the decision; "
                                         "the site alone: %(basis)s)"),
                                      {"decision": Text(rules.rules[name].title), "points": _points(per),
                                       "basis": item.basis})))
    return tuple(out), members, linked


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


def cover(op: ClassifiedOp, model_dtype: str, weights: Weights, shared: frozenset[str] = frozenset()) -> Cover | None:
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
    float64 = carries_float64(op)
    for reason in op.reasons:
        cause = _cause(reason, model_dtype, rules, op.replacement, float64)
        if cause in SHARED and cause not in shared:  # too few share it: its own price (shared_causes)
            cause = None
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
        parts.append(Text(N_("%(decision)s check %(points)s"), {"decision": Text(rules.rules[name].title),
                                                                 "points": _points(per)}))
    for change in changes.values():
        tier = rules.changes[change.tier]
        effort = effort + Effort(*tier)
        parts.append(Text(N_("%(setting)s: %(tier)s %(points)s (%(edit)s)"),
                          {"setting": change.setting, "tier": change.tier, "points": _points(tier),
                           "edit": change.edit}))
    return Cover(tuple(decisions), tuple(changes.values()), effort, joined(parts, " + "))


def decide(scores: Sequence[OpScore], inventory: Inventory, findings: Sequence[Finding], weights: Weights,
           covers: Mapping[str, Cover], sites: Mapping[str, Sequence[str]] | None = None,
           linked: Mapping[str, Sequence[str]] | None = None) -> tuple[Decision, ...]:
    """One Decision per cause some covered operator or site (`sites`: decision -> site keys, decide_sites) has: its
    members, its effort (once, plus each member's check) and, for precision, the plan (dtype on the target, loss
    scaling, overflow-prone operators). `linked`: decision -> the captured operators its sites carry (listed with its
    operators; they cost nothing of their own, their site's check is their price)."""
    rules = weights.decisions
    if rules is None:
        return ()
    members: dict[str, list[str]] = {}
    for key, item in covers.items():
        for name in item.decisions:
            members.setdefault(name, []).append(key)
    sites = sites or {}
    by_key = {s.classified.operator.key: s.classified for s in scores}
    out = []
    for name in ORDER:
        keys, places = members.get(name, []), tuple(sites.get(name, ()))
        if not keys and not places:
            continue
        rule = rules.rules[name]
        once = Effort(*rule.effort)
        check = Effort(*rule.per_operator)
        checks = sum((check for _ in (*keys, *places)), NO_EFFORT)
        members_ = (len(keys), len(places))
        basis = basis_text(once, check, members_)
        plan: tuple[str, ...]
        if name == ATTENTION:
            title, cause, plan = rule.title, ATTENTION_CAUSE, ATTENTION_PLAN
        elif name == LAYOUT:
            title, cause, plan = rule.title, LAYOUT_CAUSE, LAYOUT_PLAN
        elif name == PRECISION:
            title, cause, plan = _precision(keys, by_key, scores, inventory, findings, rules)
        elif name == FLOAT64:
            title, cause, plan = _float64(keys, by_key, rule.title)
        else:
            title = Text(N_("%(title)s: one run on the chip confirms the kernels of %(n)s operator type(s)"),
                         {"title": Text(rule.title), "n": len(keys)})
            cause = Text(N_("the kernel docs (CANN aclnn) and the torch_npu API page disagree about the target for "
                            "these operators, or their kernel falls back to the aclop path there: the kernel facts "
                            "decide, not verified on the chip (an API page with no mark for the target is no such "
                            "cause: the kernel facts judge those operators as on any product)"))
            plan = (Text(N_("run the model once on the target and compare every listed operator's output with the "
                            "reference run")),)
        listed = tuple(sorted({*keys, *(linked or {}).get(name, ())}))
        out.append(Decision(name=name, title=title, cause=cause, operators=listed,
                            person_days=once + checks, once=once, basis=basis, plan=plan, sites=places,
                            check=check, members=members_))
    return tuple(out)


# The attention and layout decisions' texts: fixed sentences (message ids; the reports translate them), their counts
# in the basis and the lists of operators and sites. Titles come from weights.toml ([decisions.*] title).
DECISION_TITLES = (N_("attention implementation"), N_("memory layout"))
ATTENTION_CAUSE = N_("these attention calls (GPU attention libraries, or operators whose route is the NPU's fused "
                     "attention) all lead to npu_fusion_attention or npu_fused_infer_attention_score: one wrapper "
                     "serves every one")
ATTENTION_PLAN: tuple[str, ...] = (
                  N_("write one attention wrapper on torch_npu.npu_fusion_attention (training and prefill) or "
                     "npu_fused_infer_attention_score (decode): input_layout, head_num, the mask as a bool atten_mask "
                     "where True masks out, scale, GQA heads"),
                  N_("call the wrapper at every listed site and operator; the attention libraries' imports go"),
                  N_("compare the attention outputs with the reference run once"))
LAYOUT_CAUSE = N_("the model asks for channels_last, which the NPU does not take (Tensor.to: memory_format "
                  "contiguous_format only; the migration guide's hand edit: the default format)")
LAYOUT_PLAN: tuple[str, ...] = (
               N_("drop memory_format=torch.channels_last at every listed site and operator: the NPU picks its own "
                  "internal format and converts with TransData"),
               N_("compare the outputs with the reference run once"))


FLOAT64_CAUSE = N_("the model computes in float64 on these lines, which the NPU does not (its kernels reject float64 "
                   "or compute it as float32): one choice settles every one")


def _float64(keys: list[str], by_key: Mapping[str, ClassifiedOp], title: str) -> tuple[str, str, tuple[str, ...]]:
    """Title, cause and plan of the float64 decision: its lines (the covered operators' call sites) named once."""
    lines = sorted({s for k in keys for s in by_key[k].operator.sources}, key=_line_order)
    shown = ", ".join(lines[:FLOAT64_LINES]) + (f" (+{len(lines) - FLOAT64_LINES})" if len(lines) > FLOAT64_LINES
                                                 else "")
    values = {"title": Text(title), "n": len(keys), "lines": len(lines)}
    plan = (Text(N_("keep these lines in float32: drop the casts to float64 (.double(), dtype=torch.float64) at "
                    "%(at)s"), {"at": shown}),
            N_("where float64 precision is needed, keep that part on the CPU and say so"),
            N_("compare the outputs with the float64 reference run once"))
    return Text(N_("%(title)s: %(n)s operator type(s) on %(lines)s line(s), one choice"), values), FLOAT64_CAUSE, plan


FLOAT64_LINES = 8  # lines the float64 plan names; the count says how many more


def _line_order(source: str) -> tuple[str, int]:
    path, _, line = source.rpartition(":")
    return (path, int(line)) if line.isdigit() else (source, 0)


def basis_text(once: Effort, check: Effort, members: tuple[int, int], _=str) -> str:
    """'0.5-1-3 once + 1 operator type(s) + 6 source site(s) x 0.02-0.05-0.15 (a check each)', in the reader's
    language with a gettext `_` (the record keeps the English)."""
    parts = ([_("%(n)d operator type(s)") % {"n": members[0]}] if members[0] else []) + (
        [_("%(n)d source site(s)") % {"n": members[1]}] if members[1] else [])
    return _("%(once)s once + %(members)s x %(check)s (a check each)") % {
        "once": _points((once.low, once.likely, once.high)), "members": " + ".join(parts),
        "check": _points((check.low, check.likely, check.high))}


def _precision(keys: list[str], by_key: Mapping[str, ClassifiedOp], scores: Sequence[OpScore], inventory: Inventory,
               findings: Sequence[Finding], rules: DecisionRules) -> tuple[str, str, tuple[str, ...]]:
    """Title, cause and plan lines of the precision decision: float16 where every covered kernel takes float16 (with
    loss scaling in the title when the capture is a training step; a forward-only scan keeps it as a plan line for
    when the model trains), else float32; the model's overflow-prone operators kept in float32."""
    dtype = inventory.model.dtype
    matches = [m for k in keys for r in by_key[k].reasons if r.code == "dtype"
               for m in [_DTYPE.match(r.message)] if m and m["dtype"] == dtype]
    product = matches[0]["product"] if matches else Text(N_("the target"))
    allowed = [set(a.strip() for a in m["allowed"].split(",")) for m in matches]
    target = "float16" if allowed and all("float16" in a for a in allowed) else "float32"
    p = rules.precision
    prone = overflow_prone(scores, findings, p)
    values = {"target": target, "product": product, "dtype": dtype, "n": len(keys)}
    title = Text(N_("precision plan: run in %(target)s with loss scaling on %(product)s (%(dtype)s has no kernel for "
                    "%(n)s operator type(s))") if target == "float16" and inventory.capture.training else
                 N_("precision plan: run in %(target)s on %(product)s (%(dtype)s has no kernel for %(n)s operator "
                    "type(s))"), values)
    cause = Text(N_("%(product)s has no %(dtype)s kernel for these operators (kernel facts)"), values)
    plan: list[str] = [Text(N_("run the model in %(target)s on %(product)s (torch_npu.npu.amp autocast to float16)")
                            if target == "float16" else N_("run the model in %(target)s on %(product)s"), values)]
    if target == "float16":
        step = Text(N_("this capture is a training step")) if inventory.capture.training else \
            Text(N_("when training"))
        plan.append(Text(N_("loss scaling %(step)s: %(scaler)s (the seed's practice: 2**10, 2000)"), {
            "step": step, "scaler": f"torch_npu.npu.amp.GradScaler(init_scale={p.init_scale}, "
                                    f"growth_interval={p.growth_interval})"}))
        plan.append(Text(N_("keep in float32 (overflow-prone in float16, max 65504): %(ops)s"),
                         {"ops": ", ".join(prone) if prone else Text(N_("none found in this capture"))}))
    plan.append(Text(N_("compare the outputs with the reference run once the switch is made")))
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
