"""The assessing side of the spine (stages 3-6), run by the parent, never by a worker: `preflight` checks the
configuration before any model code runs; `assess_capture` takes a capture (capture.py, or a worker's through
isolation/wire.py) through inventory, classify, reach, graph mode, source scan, findings, time model, score and
estimate to the Assessment; `assess` runs both halves in this process (the library's `opassess.assess`)."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypedDict

from .. import __version__
from ..assessment import Assessment
from ..classify import classify
from ..classify.library import adopt_site_verdicts
from ..classify.reach import Reach, judge_reach
from ..classify.verified import apply_verified
from ..findings import DataFlow, Graph, find_findings, load_patterns
from ..graphmode import assess_graph_mode
from ..graphmode.records import GraphMode
from ..inventory import build_inventory
from ..kb import KnowledgeBase, format_version, load_kb
from ..kb.routes import load_route_facts
from ..kb.served_models import load_served_models
from ..options import ScanOptions
from ..perf import NoDeviceProfile, estimate_performance, load_profile
from ..perf.records import Performance
from ..records import Capture, ClassifiedOp, Effort, Finding, InputFile, Inventory, ModelInfo
from ..routes import OnnxExport, check_serving, judge_onnx
from ..routes.onnx_export import check_onnx_installed, export_model
from ..routes.onnx_judge import check_opset
from ..routes.records import OnnxFailure, OnnxRoute, ServingCheck
from ..routes.serving import check_quant
from ..score.criteria import score
from ..score.estimate import estimate
from ..score.signals import ModelContext, measure_all
from ..score.source_cost import captured_calls, estimate_sources, mark_reached
from ..score.weights import Weights
from ..score.weights.load import load_weights
from ..source import SourceScanError, scan_sources
from ..source.graph_sites import note_graph_readiness
from ..source.imports import project_files
from ..source.records import SourceScan
from . import Progress, installed_torch, noop, timed
from .capture import capture_stage
from .sources import reached_files


def preflight(options: ScanOptions) -> None:
    """Check the configuration (weights, knowledge base, --target, --torch-npu, --source, the route's --opset and
    --quant) before any model code runs, in the process that will assess the capture: the rules that need the data
    files, which ScanOptions (below the knowledge base) cannot read."""
    load_weights(options.weights, options.profile)
    kb = load_kb(options.kb_dir)
    kb.resolve_product(options.product)
    format_version(kb.resolve_version(options.torch_npu))
    _device_profiles(options, kb)
    missing = next((p for p in options.source if not Path(p).exists()), None)
    if missing is not None:
        raise SourceScanError(f"{missing}: no such file or directory (--source)")
    if options.route == "onnx":
        check_opset(options.opset)
        check_onnx_installed()
    if options.quant:  # a scheme no row of the serving facts names is bad usage, before any model code runs
        check_quant(options.quant, load_route_facts())


def _device_profiles(options: ScanOptions, kb: KnowledgeBase) -> tuple[str, ...]:
    """The --compare products resolved (an unknown name is a usage error) after the --device-profile overlay has been
    read and checked against the target."""
    if options.device_profile is not None:
        try:
            load_profile(kb.resolve_product(options.product), kb, options.device_profile)
        except NoDeviceProfile:
            pass
    return tuple(dict.fromkeys(kb.resolve_product(name) for name in options.compare))


def assess(options: ScanOptions, progress: Progress = noop) -> Assessment:
    """Run the whole pipeline on one model in this process and return the Assessment every reporter renders."""
    preflight(options)
    info, capture, seconds = capture_stage(options, progress)
    export = None
    if options.route == "onnx":  # in this process only under OPASSESS_IN_PROCESS=1 (a debugger): no isolation
        export = export_model(options, progress)
    return assess_capture(options, info, capture, seconds, progress, onnx_export=export)


def assess_capture(options: ScanOptions, info: ModelInfo, capture: Capture, seconds: dict[str, float],
                   progress: Progress = noop, onnx_export: OnnxExport | None = None,
                   pinned: tuple[KnowledgeBase, Weights, tuple[InputFile, ...]] | None = None) -> Assessment:
    """Stages 3-6 on a capture: inventory, classify, findings, score, estimate (run by the parent, never a worker);
    with a route, its check too (`onnx_export`: what the worker's ONNX export sent, checked by isolation/wire.py).
    `pinned`: the knowledge base, weights and input hashes read before the model ran (isolation/inputs.py), used
    instead of reading the files again."""
    seconds = dict(seconds)
    if pinned is not None:
        kb, weights, inputs = pinned
    else:
        kb, weights, inputs = load_kb(options.kb_dir), load_weights(options.weights, options.profile), ()
    product = kb.resolve_product(options.product)
    torch_version = format_version(kb.resolve_version(options.torch_npu))
    inventory = build_inventory(info, capture)
    with timed(seconds, "classify"):
        progress(f"classifying {len(inventory.operators)} operator types")
        classified = classify(inventory, kb, target=product, torch_version=torch_version)
        classified = apply_verified(classified, kb.verified)  # results from the user's own hardware win over facts
        reach = _reach_stage(inventory, kb, product, torch_version, weights)
    graph = _graph_stage(options, capture, classified, kb, torch_version, seconds, weights.graph_mode, info.inputs)
    source_scan = _source_stage(options, progress, seconds, kb.product(options.product).kernel)
    if source_scan is not None and graph is not None:  # torch.compile sites: this model's readiness on their route

        source_scan = replace(source_scan, findings=note_graph_readiness(source_scan.findings, graph))
    if source_scan is not None:  # a flash-attn call the capture saw: its call rendered with the shapes it ran on
        source_scan = replace(source_scan, findings=tuple(captured_calls(source_scan.findings, inventory.operators,
                                                                         source_scan.root)))
    sites = estimate_sources(source_scan.findings, inventory.operators, weights, source_scan.root) \
        if source_scan else ()
    if sites and options.source and source_scan is not None:  # --source DIR: what this model reaches is priced
        sites = mark_reached(sites, reached_files(options, inventory, source_scan.root))
    classified = adopt_site_verdicts(classified, sites)  # a stand-in call the source scan saw: one verdict
    with timed(seconds, "findings"):
        flow = DataFlow.of(inventory.capture)  # built once: the findings walk it, the signals take its main path
        graph_roles = Graph(flow, load_patterns())  # the roles, once: the findings and the time model read them
        findings = find_findings(inventory, kb, dtype=options.dtype, product=product,
                                 torch_version=torch_version, flow=flow, graph=graph_roles,
                                 natively=frozenset(c.operator.key for c in classified
                                                    if any(r.code == "kernel-dtype" for r in c.reasons)))
    with timed(seconds, "performance"):
        performance = _performance_stage(options, kb, inventory, classified, findings, product, torch_version,
                                          graph_roles)
    with timed(seconds, "score"):  # measuring the signals and scoring every operator
        context = ModelContext.of(inventory, weights, flow, performance)  # time shares and the main path, once
        signals = measure_all(classified, context, weights, findings)  # per operator, once: scores and risks read
        scores = score(classified, inventory, weights, findings, signals=signals)
    with timed(seconds, "estimate"):
        result = estimate(scores, inventory, weights, findings, signals=signals, source=sites,
                      parallel_dimensions=options.parallel.dimensions if options.parallel else 0)
    return Assessment(
        tool_version=__version__, torch_running=installed_torch(),
        model=replace(inventory.model, label=options.label) if options.label else inventory.model,
        capture=inventory.capture,
        inventory=inventory,
        target=product,
        torch_version=torch_version,
        kb_version=kb.version,
        classified=classified,
        estimate=result,
        findings=findings,
        weights_source=str(weights.source),
        seconds=seconds,
        effort_ranges={c: (e.low, e.high) for c, e in weights.effort.categories.items()},
        source_scan=source_scan,
        **_route_stage(options, info, onnx_export, kb),
        graph_mode=graph,
        performance=performance,
        inputs=inputs,
        kb_overlay=str(kb.overlay) if kb.overlay is not None else None,
        reach=reach,
    )


def _reach_stage(inventory: Inventory, kb: KnowledgeBase, product: str, torch_version: str, weights: Weights
                 ) -> Reach | None:
    """The present-not-reached calls of the capture's run, judged; each operator the capture did not see and that is
    not direct priced once as a source site of its category ([source] in the weights): apart from the total."""
    reach = judge_reach(inventory, kb, target=product, torch_version=torch_version)
    rules = weights.source_rules
    if reach is None or rules is None or not reach.uncaptured:
        return reach
    total = Effort(0.0, 0.0, 0.0)
    for op in reach.uncaptured:
        low, likely, high = rules.effort[str(op.category)]
        total = total + Effort(low, likely, high)
    basis = " + ".join(f"{op.operator.key} ({op.category} site "
                       f"{'-'.join(f'{v:g}' for v in rules.effort[str(op.category)])})" for op in reach.uncaptured)
    return replace(reach, person_days=total, basis=basis)


class _Route(TypedDict, total=False):
    onnx: OnnxRoute
    serving: ServingCheck


def _route_stage(options: ScanOptions, info: ModelInfo, onnx_export: OnnxExport | None, kb: KnowledgeBase
                 ) -> _Route:
    """The route's record for the Assessment: {"onnx": OnnxRoute} or {"serving": ServingCheck}; {} without a route."""
    if options.route == "onnx":
        export = onnx_export or OnnxExport(options.opset, 0, "", (), (
            OnnxFailure("torchscript", "", "no export came back from the worker"),))
        return {"onnx": judge_onnx(export, load_route_facts())}
    if options.route == "vllm-ascend":
        product = kb.product(options.product)
        try:  # the compute data types the chip has, by its device figures (None: the tables give none)
            profile = load_profile(product.name, kb)
            cube = {d: profile.cite.get(f"peak.cube.{d}", "") for d in profile.peaks.get("cube", {})}
        except NoDeviceProfile:
            cube = None
        aclnn = kb.kernel_facts.data if cube is None else None  # no figures: the kernel docs' product tables
        return {"serving": check_serving(info.class_name, options.quant, product.kernel, product.name,
                                         load_route_facts(), cube, aclnn, load_served_models())}
    return {}


def _graph_stage(options: ScanOptions, capture: Capture, classified: tuple[ClassifiedOp, ...], kb: KnowledgeBase,
                 torch_version: str, seconds: dict[str, float], rates: Mapping[str, tuple[float, float, float]] | None,
                 inputs: tuple[str, ...] = ()) -> GraphMode | None:
    """Graph-mode readiness per operator and per back-end (None when switched off), from the capture and the facts."""
    if options.graph_mode == "off":
        return None
    with timed(seconds, "graph_mode"):
        return assess_graph_mode(capture, classified, kb, torch_version, backend=options.graph_backend, rates=rates,
                                 inputs=inputs)


def _performance_stage(options: ScanOptions, kb: KnowledgeBase, inventory: Inventory,
                       classified: Sequence[ClassifiedOp], findings: Sequence[Finding], product: str,
                       torch_version: str, graph: Graph) -> Performance:
    """The time model (opassess/perf): the step on the target and on each --compare product."""
    version = kb.resolve_version(torch_version)

    def aclop_only(aten: str) -> bool:
        fact = kb.kernel_support(aten, version).fact
        return fact is not None and fact.paths(version) == ("aclop",)

    return estimate_performance(inventory, classified, findings, product, kb=kb,
                                compare=_device_profiles(options, kb), overlay=options.device_profile,
                                aclop_only=aclop_only, graph=graph, layout=options.parallel,
                                global_batch=options.global_batch, gpu=options.gpu_baseline,
                                match_gpus=options.match_gpus)


def _source_stage(options: ScanOptions, progress: Progress, seconds: dict[str, float], kernel: str
                  ) -> SourceScan | None:
    """The source scan of a model scan: --source paths, plus the model file and the project files it imports (when
    the target is a file); None when there is nothing to scan. Static: nothing more of the project is run."""
    paths: list[Path] = [Path(p) for p in options.source]
    target = Path(options.target)
    if options.project_scan and target.suffix == ".py" and target.is_file():
        paths += project_files(target)
    if not paths:
        return None
    with timed(seconds, "source"):
        progress(f"scanning the source of {len(paths)} path(s)")
        return scan_sources(paths, product=kernel)
