"""Turn scanner sites into SourceFindings: category, NPU route, evidence (table rows) and confidence.

The rules, from the migration-route facts:
- direct: transfer_to_npu handles it at run time (the patch is cited): torch.cuda.set_device, .cuda(),
  init_process_group("nccl"), torch.cuda.amp.GradScaler ...
- param-converted: a hand edit with a known route: `get_backend() == "nccl"`, DataParallel -> DDP,
  apex FusedAdam -> NpuFusedAdam, flash_attn_func -> npu_fusion_attention (arguments the route drops are
  named), a Triton kernel triton-ascend can compile.
- custom-dev: no route: a CUDA kernel or extension (never matched to a torch_npu op by its name: no match rather than
  a wrong one), a Triton kernel using what triton-ascend lacks.
- flags nothing on the NPU reads (cuDNN benchmark, TF32) are precision notes: direct, no effort, NPU analogue named.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from ...advice import FLASH_CALLS, Constraints, flash_call, notes_of
from ...advice.flash import API
from ...messages import N_, Message, Text, joined
from ...vocabulary import Category, Confidence
from ..facts import KernelLibrary, MigrationRule, SourceFacts
from ..graph_sites import KINDS as GRAPH_SITES
from ..graph_sites import classify_graph
from ..records import SourceFinding
from .distributed import KINDS as DISTRIBUTED
from .distributed import DistributedClassifier

DIRECT, PARAM, CUSTOM = Category.DIRECT, Category.PARAM_CONVERTED, Category.CUSTOM_DEV
CUDA_SOURCES = (".cu", ".cuh")
# tl APIs of a purely elementwise kernel (no dot, reduction, scan or atomic): torch ops express it whole
ELEMENTWISE_TL = frozenset({
    "program_id", "num_programs", "arange", "load", "store", "cdiv", "cast", "full", "zeros", "zeros_like", "where",
    "maximum", "minimum", "abs", "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sigmoid", "erf", "math.erf",
    "math.exp", "math.tanh", "math.sqrt", "math.rsqrt", "fma", "clamp", "sin", "cos", "floor", "ceil",
    "libdevice.erf", "libdevice.tanh", "extra.cuda.libdevice.erf", "extra.cuda.libdevice.tanh"})
LINKS_SHOWN = 3  # imports and calls of a built module named on its extension's finding


def _handling(rule: MigrationRule) -> tuple[Category, str]:
    """Category and confidence of a cuda_api_migration row's handling."""
    if rule.handling == "automatic" or rule.handling == "no-op-on-npu":
        return DIRECT, "high"
    if rule.handling == "hand-edit":
        return PARAM, "high"
    if rule.npu_equivalent and not rule.npu_equivalent.lower().startswith("none"):
        return PARAM, "medium"  # unsupported as written, but the row names what to use instead
    return CUSTOM, "medium"


def preferred_library(rows: Iterable[KernelLibrary]) -> KernelLibrary | None:
    """Of several rows for one symbol, the one about calling it directly, else the first with a route."""
    rows = list(rows)
    return (next((r for r in rows if "direct" in r.context), None)
            or next((r for r in rows if r.route_kind != "none"), None) or (rows[0] if rows else None))


def _dropped_note(lib: KernelLibrary, kwargs: dict[str, str]) -> Text:
    """One sentence for the row's dropped features when the call passes some of them: the clauses naming what it
    passes first, then the rest, each clause said through the catalog ('compress_statistics (nested/double quant) ...
    not implemented in the earlier NPUBackend; the route also drops: fp4 quant_type rejected (...); ...')."""
    named, rest = lib.dropped_clauses(kwargs)
    passed = joined([Text(clause) for clause in named])
    if not rest:
        return Text(N_("this call passes what the route drops: %(passed)s"), {"passed": passed})
    return Text(N_("this call passes what the route drops: %(passed)s; the route also drops: %(rest)s"),
                {"passed": passed, "rest": joined([Text(clause) for clause in rest])})


class Classifier:
    """Classifies sites against one SourceFacts; `classify(site)` returns a finding or None (not GPU-specific)."""

    def __init__(self, facts: SourceFacts):
        self.facts = facts

    def classify(self, site) -> SourceFinding | None:
        """The finding for one site (None when the facts say nothing and it is not GPU-specific)."""
        handler = getattr(self, "_" + site.kind.replace("-", "_"), None)
        if handler is None:
            raise ValueError(f"no classification for site kind {site.kind!r}")
        return handler(site)

    def _finding(self, site, kind, category, route, evidence, confidence, notes=(), size=None, subject=None):
        return SourceFinding(site.file, site.line, site.code, kind, Category(category), subject or site.subject,
                             route, tuple(e for e in evidence if e), Confidence(confidence), tuple(notes),
                             size or site.size)

    def _patch_cites(self, *apis: str) -> list[str]:
        return [p.cite for api in apis for name in (api, api + ".__init__") for p in self.facts.patches(name)]

    # ------------------------------------------------------------------ Python sites

    def _kwargs(self, site) -> dict[str, str]:
        return dict(kv.split("=", 1) for kv in site.all("kwarg"))

    def _api(self, site) -> SourceFinding | None:
        q, kwargs = site.subject, self._kwargs(site)
        rule = self.facts.migration(q, kwargs)
        if site.get("autocast") == "bfloat16" and q.endswith("GradScaler"):  # not "become the NPU's GradScaler"
            return self._finding(site, "no-op", DIRECT, Text(N_("not needed under bfloat16 autocast: bf16 keeps "
                                                                "float32's exponent range, so there is no loss to "
                                                                "scale; drop the scaler")),
                                 [rule.cite if rule else ""], "medium")
        patches = self._patch_cites(q)
        libs = self.facts.library_rows(q)
        if rule and rule.handling == "no-op-on-npu":
            return self._no_op(site, rule)
        if rule and (rule.handling != "automatic" or not patches):
            category, confidence = _handling(rule)
            lib = preferred_library(libs)
            return self._finding(site, "library-call" if lib else "gpu-api", category,
                                 rule.npu_equivalent, [rule.cite, *patches, lib.cite if lib else ""], confidence)
        if patches:
            route = self.facts.patches(q)[0].effect if self.facts.patches(q) else "transfer_to_npu"
            return self._finding(site, "gpu-api", DIRECT, route, [*patches, rule.cite if rule else ""], "high")
        lib = preferred_library(libs)
        if lib:
            return self._library_call(site, lib, kwargs)
        if q.startswith("torch.cuda."):
            swap = self.facts.patches("torch.cuda")
            return self._finding(site, "gpu-api", PARAM, Text(N_("not installed by the torch.cuda module swap: keeps "
                                                                 "its CUDA implementation")),
                                 [swap[0].cite if swap else ""], "low")
        if q.startswith("torch.backends.cud"):
            return self._finding(site, "gpu-api", PARAM, Text(N_("unknown: not in the migration facts")), [], "low")
        return None

    def _library_call(self, site, lib: KernelLibrary, kwargs: dict[str, str]) -> SourceFinding:
        if site.subject in FLASH_CALLS and API in lib.route:
            return self._flash_call(site, lib)
        dropped = lib.dropped_args(kwargs)
        notes = [_dropped_note(lib, kwargs) if dropped else Text(N_("dropped by the route: %(what)s"),
                                                                  {"what": lib.dropped})]
        category = Category.parse(lib.category) if lib.category else PARAM
        if dropped and category is DIRECT:
            category = PARAM
        return self._finding(site, "library-call", category, lib.route, [lib.cite], "medium", notes)

    def _flash_call(self, site, lib: KernelLibrary) -> SourceFinding:
        """The npu_fusion_attention call with this call's arguments (opassess/advice/flash.py), its adapter lines, and
        the op's documented constraints it fails, each named (the category stays the row's: pricing is not changed
        here)."""
        keywords = dict(kw.split("=", 1) for kw in site.all("keyword"))
        call = flash_call(site.subject, list(site.all("argument")), keywords, Constraints(lib.cite, lib.constraints))
        notes = [*notes_of(call), *self._imported(site)]
        category = Category.parse(lib.category) if lib.category else PARAM
        return self._finding(site, "library-call", PARAM if category is DIRECT else category, call.text(), [lib.cite],
                             "medium", notes)

    def _imported(self, site) -> list[Text]:
        """The import that goes with this call (one item: source/python.py joined them)."""
        return [Text(N_("imported at line %(line)s"), {"line": line}) for line in site.all("imported")]

    def _no_op(self, site, rule: MigrationRule) -> SourceFinding:
        precision = site.subject.startswith("torch.backends.") or "precision" in site.subject
        notes = [Text(N_("set to %(value)s"), {"value": site.get("value")})] if site.get("value") else []
        return self._finding(site, "precision-note" if precision else "no-op", DIRECT, rule.npu_equivalent,
                             [rule.cite], "high", notes)

    def _assign(self, site) -> SourceFinding | None:
        rule = self.facts.migration(site.subject)
        if rule and rule.handling == "no-op-on-npu":
            return self._no_op(site, rule)
        return self._api(site)

    def _import(self, site) -> SourceFinding | None:
        module = site.subject
        guarded = site.get("guarded") == "yes"
        rule = self.facts.migration_for_import(module.split(".")[0])
        named = [row for name in site.all("name") for row in self.facts.library_rows(f"{module}.{name}")]
        lib = preferred_library(named or self.facts.libraries_for_module(module))
        if lib and lib.library == "triton":
            return None  # each @triton.jit kernel is its own finding
        kind = "guarded-import" if guarded else "library-import"
        notes = [Text(N_("guarded import: on the NPU the except branch runs, so the fast path is not taken"))] \
            if guarded else []
        if rule:
            category, confidence = _handling(rule)
            return self._finding(site, kind, category, rule.npu_equivalent, [rule.cite, lib.cite if lib else ""],
                                 confidence, notes)
        if lib is None:
            return None
        return self._finding(site, kind, Category.parse(lib.category), lib.route, [lib.cite], "medium", notes)

    def _device(self, site) -> SourceFinding:
        q = site.subject
        if q in ("tensor.cuda", "tensor.is_cuda"):
            rule = self.facts.migration(q)
            apis = ("torch.Tensor.cuda", "torch.nn.Module.cuda") if q == "tensor.cuda" else ("torch.Tensor.is_cuda",)
            return self._finding(site, "device-string", DIRECT, rule.npu_equivalent if rule else "npu",
                                 [rule.cite if rule else "", *self._patch_cites(*apis)], "high")
        rewrites = [p for name in (q, q + ".__init__") for p in self.facts.patches(name)
                    if p.kind in ("device-arg-rewrite", "backend-string")]
        rule = self.facts.migration(q, self._kwargs(site))
        if rewrites:
            return self._finding(site, "device-string", DIRECT, Text(N_("'cuda' becomes 'npu' at call time")),
                                 [p.cite for p in rewrites] + [rule.cite if rule else ""], "high")
        literal = self.facts.migration_for_literal("cuda")
        if q == "torch.device":
            to = self.facts.patches("torch.Tensor.to")
            return self._finding(site, "device-string", DIRECT, Text(N_("a torch.device('cuda') is rewritten by the "
                                                                        "calls transfer_to_npu wraps")),
                                 [to[0].cite if to else ""], "medium")
        return self._finding(site, "device-string", PARAM, literal.npu_equivalent if literal else "'npu'",
                             [literal.cite if literal else ""], "low",
                             [Text(N_("transfer_to_npu rewrites 'cuda' only in the calls it wraps; this callee is not "
                                      "one"))])

    def _backend(self, site) -> SourceFinding:
        patches = [p for name in (site.subject, site.subject + ".__init__") for p in self.facts.patches(name)
                   if p.kind == "backend-string"]
        rule = self.facts.migration(site.subject)
        if patches:
            return self._finding(site, "backend-string", DIRECT, Text(N_("'nccl' becomes 'hccl' at call time")),
                                 [p.cite for p in patches] + [rule.cite if rule else ""], "high")
        literal = self.facts.migration_for_literal("nccl")
        return self._finding(site, "backend-string", PARAM, literal.npu_equivalent if literal else "'hccl'",
                             [literal.cite if literal else ""], "medium",
                             [Text(N_("transfer_to_npu rewrites the backend only for "
                                      "init_process_group/_new_group_with_tag"))])

    def _compare(self, site) -> SourceFinding | None:
        rule = self.facts.migration_for_literal(site.subject)
        if rule is None:
            return None
        category, confidence = _handling(rule)
        return self._finding(site, "string-compare", category, rule.npu_equivalent, [rule.cite], confidence,
                             [Text(N_("compared with %(value)s"), {"value": site.get("against")})]
                             if site.get("against") else [])

    def _extension(self, site) -> SourceFinding:
        sources = site.all("source")
        rule = self.facts.migration(site.subject)
        cuda = site.subject.endswith("CUDAExtension") or any(s.endswith(CUDA_SOURCES) for s in sources)
        notes = [Text(N_("sources: %(files)s"), {"files": ", ".join(sources)})] if sources else []
        if site.get("sources") == "computed":  # source/package.py: every native file under the build file's folder
            notes.insert(0, Text(N_("its sources are computed when %(file)s runs: taken as the C++/CUDA files under "
                                    "its folder"), {"file": site.file}))
        if not cuda:
            notes.append(Text(N_("no CUDA source listed")))
        links = site.all("link")  # imports and calls of the module it builds (source/package.py)
        if links:
            shown = ", ".join(links[:LINKS_SHOWN])
            more = {"more": len(links) - LINKS_SHOWN} if len(links) > LINKS_SHOWN else {}
            notes.append(Text(N_("builds module %(name)s, imported or called at %(shown)s and %(more)s more: priced "
                                 "here, once") if more else
                              N_("builds module %(name)s, imported or called at %(shown)s: priced here, once"),
                              {"name": site.get("name"), "shown": shown, **more}))
        if site.size is not None:
            notes.append(Text(N_("priced as its kernels: %(kernels)s kernel(s), %(lines)s kernel line(s)"),
                              {"kernels": site.size.kernels, "lines": site.size.lines}))
        return dataclasses.replace(self._kernel_like(site, "cpp-extension", rule, notes), links=tuple(links))

    def _kernel_like(self, site, kind, rule, notes) -> SourceFinding:
        """No match rather than a wrong one: a kernel's name says nothing reliable about what it computes (a CUDA
        rotary kernel is not npu_interleave_rope), so a kernel or extension is an Ascend C port unless the facts
        name its route."""
        cite = rule.cite if rule else ""
        return self._finding(site, kind, CUSTOM, rule.npu_equivalent if rule else Text(N_("Ascend C rewrite")),
                             [cite], "high",
                             [*notes, Text(N_("no torch_npu op matched by what it computes (names are not matched)"))])

    # ------------------------------------------------------------------ Triton

    def _triton_config(self, site) -> SourceFinding | None:
        api = self.facts.triton_api(site.subject)
        if api is None:
            return None
        flagged = sorted({arg for arg, _, _ in api.unsupported_args for k in self._kwargs(site)
                          if re.search(rf"\b{re.escape(k)}\b", arg)})
        if not flagged:
            return None
        return self._finding(site, "triton-config", PARAM, Text(N_("triton-ascend does not tune these launch "
                                                                   "options: %(options)s"),
                                                                {"options": ", ".join(flagged)}), [api.cite], "high")

    def _triton_kernel(self, site) -> SourceFinding:
        rule = self.facts.migration("triton.jit")
        lib = preferred_library(self.facts.library_rows("triton.jit"))
        evidence = [rule.cite if rule else "", lib.cite if lib else ""]
        lacking = [*site.all("dtype"), *site.all("arg")]
        notes = [Text(N_("triton-ascend lacks %(flag)s"), {"flag": flag}) for flag in lacking]
        for flag in lacking:
            api = self.facts.triton_api("tl." + flag.split(":")[0])
            evidence.append(api.cite if api else "")
        grid = site.all("grid")
        unknown = site.all("unknown-api")
        confidence = "medium"
        if grid:
            core = self.facts.triton_rule("coreDim")
            evidence.append(core.cite if core else "")
            notes += [Text(N_("grid exceeds 65535 programs: %(grid)s; %(limit)s"),
                           {"grid": g, "limit": core.limit if core else ""}) for g in grid]
        if lacking:
            return self._finding(site, "triton-kernel", CUSTOM, Text(N_("rewrite the flagged parts (triton-ascend "
                                                                        "lacks them) or port to Ascend C")),
                                 evidence, "high", notes)
        if unknown:
            notes += [Text(N_("not in the triton-ascend API docs: %(api)s"), {"api": u}) for u in unknown]
            confidence = "low"
        apis = set(site.size.apis) if site.size else set()
        if apis and apis <= ELEMENTWISE_TL:  # composite before custom: torch ops do the same, on the NPU's kernels
            listed = Message.join(sorted(apis), ", ")  # with the reader's list separator
            notes.append(Text(N_("option: an elementwise kernel (%(apis)s): the same computation in torch ops (e.g. "
                                 "F.gelu(x + bias) for a bias + erf-GELU kernel) runs on the NPU's own kernels with "
                                 "no Triton port"), {"apis": listed}))
        return self._finding(site, "triton-kernel", PARAM, "triton-ascend", evidence, confidence, notes)

    # ------------------------------------------------------------------ native sites

    def _cuda_kernel(self, site) -> SourceFinding:
        rule = self.facts.migration("torch.utils.cpp_extension.CUDAExtension")
        return self._kernel_like(site, "cuda-kernel", rule, [])

    def _native_binding(self, site) -> SourceFinding:
        rule = self.facts.migration("torch.utils.cpp_extension.CUDAExtension")
        category, confidence = _handling(rule) if rule else (PARAM, "low")
        return self._finding(site, "native-binding", category, rule.npu_equivalent if rule else "", [rule.cite if rule
                             else ""], confidence, [Text(N_("module %(name)s"), {"name": site.get("module")})])

    def _native_runtime(self, site) -> SourceFinding:
        rule = self.facts.migration("torch.utils.cpp_extension.CUDAExtension")
        return self._finding(site, "native-runtime", CUSTOM, Text(N_("port the host calls to the Ascend runtime "
                                                                     "(ACL) or torch_npu APIs")),
                             [rule.cite if rule else ""], "medium",
                             [Text(N_("calls %(calls)s"), {"calls": ", ".join(site.all("call"))})])


def classify_sites(sites: Iterable, facts: SourceFacts, routes=None, product: str = "") -> list[SourceFinding]:
    """Findings for the sites the facts speak about, in the order given; distributed sites are judged against the
    HCCL facts (`routes`) for the product's kernel column (`product`, e.g. "950")."""
    classifier = Classifier(facts)
    distributed = DistributedClassifier(routes, facts, product) if routes is not None else None
    out = []
    graph = None
    # a site's finding depends on its kind, subject, detail and size, never on where it is (file, line, code): the
    # many repeats of one API in a tree are judged once, each then placed where it stands
    judged: dict[tuple, SourceFinding | None] = {}
    for site in sites:
        if site.kind in GRAPH_SITES:
            if graph is None:
                from ...kb.graph_facts import load_graph_facts
                from ...resources import data_path

                graph = load_graph_facts(data_path("kb"))
            out.append(classify_graph(site, graph, facts))
            continue
        key = (site.kind, site.subject, site.detail, site.size)
        if key in judged:
            finding = judged[key]
            if finding is not None:
                out.append(dataclasses.replace(finding, file=site.file, line=site.line, code=site.code))
            continue
        if site.kind in DISTRIBUTED:
            finding = distributed.classify(site) if distributed else None
        else:
            finding = classifier.classify(site)
        judged[key] = finding
        if finding is not None:
            out.append(finding)
    return out
