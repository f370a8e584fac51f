"""How the capture's stand-in operators are judged (kind "library": a call of a GPU-only kernel library that was not
installed, or a Triton launch; see opassess/standins). None is direct: the GPU code they stand for does not run on
the NPU as it is.
  - a library call with a row in source_facts.json's third-party kernel table takes the row's category and route
    (flash_attn_func -> torch_npu.npu_fusion_attention, param-converted), citing the row and naming the arguments
    the route drops; a row whose route is an NPU build of the library (category direct) is param-converted here:
    the project must change a dependency and validate it, and the call was only seen through a stand-in;
  - a Triton launch is custom-dev with low confidence: the capture sees the launch, not the kernel body, so whether
    triton-ascend compiles it (the table's triton row) is for the source scan to decide;
  - a library call the table does not name is custom-dev, not in the knowledge base.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..messages import N_, Text
from ..records import ClassifiedOp, Operator, Reason
from ..source.classify import preferred_library
from ..source.facts import SourceFacts, load_source_facts
from ..source.records import SourceEstimate
from ..vocabulary import Category, Confidence

_NPU_API = re.compile(r"torch_npu\.[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]")


def classify_library(op: Operator, facts: SourceFacts | None = None) -> ClassifiedOp:
    """The ClassifiedOp of one stand-in operator (op.kind == "library")."""
    facts = facts or load_source_facts()
    if op.key.startswith("triton:"):
        category, reasons, route, known, confidence = _triton(op, facts)
    else:
        category, reasons, route, known, confidence = _library_call(op, facts)
    return ClassifiedOp(operator=op, category=category, signature_categories=tuple(category for _ in op.signatures),
                        reasons=tuple(reasons), replacement=route, cann_op=None, known=known, aten_support={},
                        confidence=Confidence(confidence))


def _triton(op: Operator, facts: SourceFacts):
    name = op.key.removeprefix("triton:")
    lib = preferred_library(facts.library_rows("triton.jit"))
    rule = facts.migration("triton.jit")
    evidence = "; ".join(e for e in (lib.cite if lib else "", rule.cite if rule else "") if e) or "knowledge base: none"
    reasons = [Reason.of("stand-in", N_("the Triton kernel %(name)s was launched but not run (no GPU here); the "
                                        "capture records its tensor arguments, not what the kernel does"),
                         {"name": name}, Text(N_("trace: stand-in launch")))]
    reasons.append(Reason.of("triton-kernel", N_("%(name)s is a Triton kernel: it needs triton-ascend (%(route)s) and "
                                                 "a check of its body against what triton-ascend lacks (the source "
                                                 "scan judges the body); until then it is counted as a kernel to port"),
                             {"name": name, "route": lib.route.split(";")[0] if lib else
                              Text(N_("not in the knowledge base"))}, evidence))
    return Category.CUSTOM_DEV, reasons, "triton-ascend" if lib else None, lib is not None, "low"


def _library_call(op: Operator, facts: SourceFacts):
    lib = preferred_library(facts.library_rows(op.key))
    library = op.key.split(".")[0]
    stand_in = Reason.of("stand-in", N_("%(library)s is not installed here: %(op)s was recorded by a stand-in with the "
                                        "output shapes the library documents"), {"library": library, "op": op.key},
                         Text(N_("trace: stand-in call")))
    if lib is None:
        rows = [row for row in facts.libraries if library in row.modules]
        evidence = "; ".join(row.cite for row in rows) + " (none names it)" if rows else \
            "third_party_kernel_libs.tsv: no row for it"
        return Category.CUSTOM_DEV, [stand_in, Reason.of(
            "not-in-kb", N_("%(op)s is not in the third-party kernel table: no known NPU route for this function"),
            {"op": op.key}, evidence)], None, False, "low"
    category = Category.parse(lib.category) if lib.category else Category.PARAM_CONVERTED
    if lib.route_kind == "none" and category == Category.DIRECT:
        category = Category.CUSTOM_DEV
    reasons = [stand_in]
    if category == Category.DIRECT:
        category = Category.PARAM_CONVERTED
        reasons.append(Reason.of("library-route", N_("%(library)s has an NPU build (%(route)s): a dependency change "
                                                     "to make and validate"),
                                 {"library": lib.library, "route": lib.route.split(";")[0]}, lib.cite))
    else:
        reasons.append(Reason.of("library-route", N_("%(category)s: %(route)s"),
                                 {"category": lib.category, "route": lib.route.split(";")[0]}, lib.cite))
    passed = {k for sig in op.signatures for k in sig.attrs}
    dropped = lib.dropped_args(passed)
    if dropped:
        reasons.append(Reason.of("param-limit", N_("the route drops %(args)s, which this model passes (%(why)s)"),
                                 {"args": ", ".join(dropped), "why": lib.dropped.split(";")[0]}, lib.cite))
    routes = _NPU_API.findall(lib.route)
    return category, reasons, routes[0] if routes else None, True, "medium"


def adopt_site_verdicts(classified: tuple[ClassifiedOp, ...], sites: Sequence[SourceEstimate]
                        ) -> tuple[ClassifiedOp, ...]:
    """A stand-in operator the source scan also found (SourceEstimate.operators: the same flash_attn call at the same
    line, the launch of a Triton kernel whose body was scanned) takes the site's verdict, so one call has one
    category in the report: the site saw more (the call's arguments as written, the kernel's body) and carries the
    effort. The operator keeps its own reasons and says which site decided."""
    by_key: dict[str, SourceEstimate] = {}  # operator key -> the site that found it
    for site in sites:
        for key in site.operators:
            by_key.setdefault(key, site)
    out = []
    for item in classified:
        found = by_key.get(item.operator.key)
        if found is None:
            out.append(item)
            continue
        finding = found.finding
        decided = Reason.of("source-site", N_("the same call as the source site %(site)s (%(kind)s): its verdict, "
                                              "%(category)s, decides and its effort is counted there, once"),
                            {"site": f"{finding.file}:{finding.line}", "kind": finding.kind,
                             "category": finding.category}, "; ".join(finding.evidence) or "source scan")
        out.append(replace(item, category=Category(finding.category),
                           signature_categories=tuple(str(finding.category) for _ in item.signature_categories),
                           reasons=(*item.reasons, decided), confidence=finding.confidence,
                           replacement=item.replacement or (finding.npu_route or None)))
    return tuple(out)
