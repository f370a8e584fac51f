"""The distributed pre-flight's verdicts: each distributed site (distributed.py) against the HCCL facts and the target.

How a status becomes a category (the routes are the facts' own words where they give one):
- `unsupported` (BXOR, FSDP1 optimizer-state helpers, parallelize_module, DistributedOptimizer ...): custom-dev, a
  rewrite around the call; BOR and BAND param-converted: on 0/1 flags (their usual use) ReduceOp.MAX / MIN is the
  same reduction;
- `emulated` (AVG, PREMUL_SUM), `conditional` (gather: the compatible implementation), `restricted` with a visible
  conflict (a dtype the documented list lacks, a comm hook's fp32-only input), `param-converted` (rpc): param-converted;
- a float64/uint64 collective: param-converted before the product generation the facts name (Ascend 950), no site
  from it on;
- supported features leave no site, except scatter (the facts name a use_compatible_impl switch) as a direct note.
NCCL_* variables name the torch_npu variable that replaces them where data/hccl_env.toml (curated, cited) has one
(NCCL_ASYNC_ERROR_HANDLING -> TORCH_HCCL_ASYNC_ERROR_HANDLING), else cite the cuda_api_migration row on NCCL literals;
process-group options cite the ProcessGroupNCCL row (pg_options) and the HCCL timeout row (timeout).
"""
from __future__ import annotations

from ...kb.hccl_env import hccl_variables
from ...kb.routes import HcclFact, RouteFacts
from ...messages import N_, Text
from ...vocabulary import Category, Confidence
from ..facts import SourceFacts
from ..records import SourceFinding

KINDS = ("collective", "reduce-op", "comm-hook", "dist-api", "env-var", "process-group")
DIRECT, PARAM, CUSTOM = Category.DIRECT, Category.PARAM_CONVERTED, Category.CUSTOM_DEV
FLAG_REDUCTIONS = {"BOR": "MAX", "BAND": "MIN"}  # the same result on 0/1 flags, with a reduction HCCL has


class DistributedClassifier:
    """Judges distributed sites for one product (its products.toml kernel column: "A2", "950", ...)."""

    def __init__(self, routes: RouteFacts, facts: SourceFacts, product: str):
        self.routes, self.facts, self.product = routes, facts, product

    def classify(self, site) -> SourceFinding | None:
        return getattr(self, "_" + site.kind.replace("-", "_"))(site)

    @staticmethod
    def _finding(site, category, route, evidence, confidence, notes=()) -> SourceFinding:
        return SourceFinding(site.file, site.line, site.code, site.kind, Category(category), site.subject, route,
                             tuple(e for e in evidence if e), Confidence(confidence), tuple(notes))

    def _by_status(self, site, fact: HcclFact, notes=()) -> SourceFinding | None:
        detail = [f"HCCL: {fact.detail}"] if fact.detail else []
        if fact.status == "unsupported":
            route = (Text(N_("documented as unsupported on the NPU: rewrite around it")) if fact.documented
                     else Text(N_("no HCCL implementation: rewrite around it")))
            return self._finding(site, CUSTOM, route, [fact.cite], "high", [*detail, *notes])
        if fact.status in ("emulated", "conditional", "param-converted", "restricted"):
            confidence = "medium" if fact.documented else "high"
            if fact.status == "emulated":
                template = (N_("%(status)s on HCCL: %(detail)s; check the result against the GPU run") if fact.detail
                            else N_("%(status)s on HCCL; check the result against the GPU run"))
            else:
                template = N_("%(status)s on HCCL: %(detail)s") if fact.detail else N_("%(status)s on HCCL")
            route = Text(template, {"status": fact.status, "detail": fact.detail} if fact.detail
                         else {"status": fact.status})
            return self._finding(site, PARAM, route, [fact.cite], confidence, notes)
        return None

    def _reduce_op(self, site) -> SourceFinding | None:
        fact = self.routes.hccl(site.subject)
        if fact is None or fact.status == "supported":
            return None
        same = FLAG_REDUCTIONS.get(site.subject.rsplit(".", 1)[-1])
        if fact.status == "unsupported" and same:
            # BOR of 0/1 flags is their MAX, BAND their MIN, both HCCL reductions: a one-word change, not a rewrite
            return self._finding(site, PARAM, Text(N_("HCCL has no bitwise reduction; on 0/1 or boolean flags "
                                                      "ReduceOp.%(same)s gives the same result: use it (other values: "
                                                      "all_gather, then reduce locally)"), {"same": same}),
                                 [fact.cite], "high", [f"HCCL: {fact.detail}"])
        if fact.status == "unsupported":
            return self._finding(site, CUSTOM, Text(N_("HCCL has no bitwise reduction: rewrite it (e.g. all_gather, "
                                                       "then reduce locally)")), [fact.cite], "high",
                                 [f"HCCL: {fact.detail}"])
        return self._by_status(site, fact)

    def _collective(self, site) -> SourceFinding | None:
        fact = self.routes.hccl(site.subject)
        dtype = site.get("dtype")
        gate = self.routes.hccl_feature("collective dtypes")
        reduces = site.subject.rsplit(".", 1)[-1] in ("all_reduce", "reduce", "reduce_scatter",
                                                      "reduce_scatter_tensor")
        if site.get("source") == "any":
            anysource = self.routes.hccl_feature("recvAnysource")
            if anysource:
                return self._finding(site, PARAM, Text(N_("name the source rank (src=...)")), [anysource.cite], "high",
                                     [f"HCCL: {anysource.detail}"])
        if dtype and gate and dtype in gate.gated_dtypes:
            if self.product == gate.gated_from:
                return None  # the generation that runs it: nothing to do
            # every cause on the line: after the cast, a gather still raises on A2/A3 without the switch
            also = [Text(N_("also: enable the compatible implementation (use_compatible_impl(True)); HCCL: "
                            "%(detail)s"), {"detail": fact.detail})] if fact and fact.status == "conditional" else []
            return self._finding(site, PARAM, Text(N_("a %(dtype)s collective runs on HCCL only from Ascend "
                                                      "%(generation)s: cast to a supported dtype (float32) around it, "
                                                      "or target that generation"),
                                                   {"dtype": dtype, "generation": gate.gated_from}),
                                 [gate.cite, fact.cite if fact else ""], "high", [_seen(dtype), *also])
        if fact is None:
            return None
        if fact.status == "conditional":
            return self._finding(site, PARAM, Text(N_("enable the compatible implementation "
                                                      "(use_compatible_impl(True))")),
                                 [fact.cite], "high", [f"HCCL: {fact.detail}"])
        if dtype and fact.dtypes and dtype not in fact.dtypes and (reduces or fact.status != "supported"):
            return self._finding(site, PARAM, Text(N_("cast to one of %(dtypes)s around the call"),
                                                   {"dtypes": ", ".join(fact.dtypes)}), [fact.cite], "medium",
                                 [_seen(dtype)])
        if "use_compatible_impl" in fact.detail and fact.status == "supported":
            return self._finding(site, DIRECT, Text(N_("supported; the facts name a use_compatible_impl switch for "
                                                       "it")),
                                 [fact.cite], "medium", [f"HCCL: {fact.detail}"])
        return None

    def _comm_hook(self, site) -> SourceFinding | None:
        fact = self.routes.hccl(site.subject) or self.routes.hccl_feature("DDP comm hooks")
        if fact is None:
            return None
        return self._finding(site, PARAM, Text(N_("the hook's input must be %(dtypes)s on HCCL: check the gradient "
                                                  "dtype it receives"),
                                               {"dtypes": ", ".join(fact.dtypes) or fact.detail}),
                             [fact.cite], "medium", [f"HCCL: {fact.detail}"])

    def _dist_api(self, site) -> SourceFinding | None:
        fact = self.routes.hccl(site.subject)
        return self._by_status(site, fact) if fact else None

    def _env_var(self, site) -> SourceFinding:
        counterpart = hccl_variables().get(site.subject)
        if counterpart is not None:
            old = ([Text(N_("torch_npu also reads its older name %(old)s (deprecated)"), {"old": counterpart.old_name})]
                   if counterpart.old_name else [])
            return self._finding(site, PARAM, Text(N_("set %(hccl)s instead; nothing on the NPU reads %(variable)s"),
                                                   {"hccl": counterpart.hccl, "variable": site.subject}),
                                 [*counterpart.cites], "high",
                                 [*old, Text(N_("values: %(values)s"), {"values": counterpart.values})])
        rule = self.facts.migration_for_literal("NCCL")
        route = rule.npu_equivalent if rule else Text(N_("an HCCL_* variable"))
        return self._finding(site, PARAM, Text(N_("%(route)s; nothing on the NPU reads %(variable)s"),
                                               {"route": route, "variable": site.subject}),
                             [rule.cite if rule else ""], "medium",
                             [Text(N_("the facts name no per-variable HCCL counterpart: look it up in the torch_npu "
                                      "docs"))])

    def _process_group(self, site) -> SourceFinding | None:
        option = site.get("option")
        if option == "pg_options":
            rule = self.facts.migration("torch.distributed.ProcessGroupNCCL")
            return self._finding(site, PARAM, Text(N_("build HCCL options instead (NCCL options objects are not "
                                                      "translated)")),
                                 [rule.cite if rule else ""], "medium", ["pg_options"])
        fact = self.routes.hccl_feature("timeout")
        if option == "timeout" and fact:
            return self._finding(site, DIRECT, Text(N_("HCCL's own waits: %(detail)s"), {"detail": fact.detail}),
                                 [fact.cite], "low",
                                 [Text(N_("timeout=: whether it shortens HCCL's own op wait is not in the facts"))])
        return None


def _seen(dtype: str) -> Text:
    return Text(N_("tensor dtype %(dtype)s (seen in the source)"), {"dtype": dtype})


def classify_distributed(sites, routes: RouteFacts, facts: SourceFacts, product: str) -> list[SourceFinding]:
    """Findings for the distributed sites the HCCL facts speak about, for the product's kernel column."""
    judge = DistributedClassifier(routes, facts, product)
    return [f for f in (judge.classify(s) for s in sites) if f is not None]
