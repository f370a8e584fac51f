"""The one place that wires the stages together: load -> trace -> inventory -> classify -> score -> estimate."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from . import __version__
from .assessment import Assessment
from .load import LoadRequest, load_model
from .options import ScanOptions
from .records import Capture, ClassifiedOp, Effort, Finding, InputFile, Inventory, ModelInfo
from .trace.driver import trace_model
from .trace.lazy_dynamo import dynamo_on_demand
from .trace.methods import check_methods
from .trace.train import TrainOptions

if TYPE_CHECKING:  # the stages' records, named for the types only: the stages themselves are imported when run
    from .classify.reach import Reach
    from .findings.graph import Graph
    from .graphmode.records import GraphMode
    from .kb.store import KnowledgeBase
    from .perf.records import Performance
    from .routes.records import OnnxExport, OnnxRoute, ServingCheck
    from .score.weights import Weights
    from .source.records import SourceScan

Progress = Callable[[str], None]


def _noop(_: str) -> None:
    return None


@contextmanager
def timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    """Time the `with` body as `stage`: seconds[stage] = its wall time (a report's `seconds`, stage by stage)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[stage] = time.perf_counter() - started


def scan_inventory(options: ScanOptions, progress: Progress = _noop) -> Inventory:
    """Load and trace the model and group its operators (stages 1-3)."""
    from .inventory import build_inventory

    info, capture, _ = capture_stage(options, progress)
    return build_inventory(info, capture)


def installed_torch() -> str | None:
    """The torch release installed here ('2.15.0'), read from its metadata (a source scan never imports torch)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch").split("+")[0]
    except PackageNotFoundError:
        return None


def preflight(options: ScanOptions) -> None:
    """Check the configuration (weights, knowledge base, --target, --torch-npu, --source, the route's --opset and
    --quant) before any model code runs, in the process that will assess the capture: the rules that need the data
    files, which ScanOptions (below the knowledge base) cannot read."""
    from .kb import format_version, load_kb
    from .score.weights.load import load_weights

    load_weights(options.weights, options.profile)
    kb = load_kb(options.kb_dir)
    kb.resolve_product(options.product)
    format_version(kb.resolve_version(options.torch_npu))
    _device_profiles(options, kb)
    missing = next((p for p in options.source if not Path(p).exists()), None)
    if missing is not None:
        from .source import SourceScanError

        raise SourceScanError(f"{missing}: no such file or directory (--source)")
    if options.route == "onnx":
        from .routes.onnx_export import check_onnx_installed
        from .routes.onnx_judge import check_opset

        check_opset(options.opset)
        check_onnx_installed()
    if options.quant:  # a scheme no row of the serving facts names is bad usage, before any model code runs
        from .kb.routes import load_route_facts
        from .routes.serving import check_quant

        check_quant(options.quant, load_route_facts())


def _device_profiles(options: ScanOptions, kb: KnowledgeBase) -> tuple[str, ...]:
    """The --compare products resolved (an unknown name is a usage error) after the --device-profile overlay has been
    read and checked against the target."""
    from .perf import NoDeviceProfile, load_profile

    if options.device_profile is not None:
        try:
            load_profile(kb.resolve_product(options.product), kb, options.device_profile)
        except NoDeviceProfile:
            pass
    return tuple(dict.fromkeys(kb.resolve_product(name) for name in options.compare))


def capture_stage(options: ScanOptions, progress: Progress = _noop) -> tuple[ModelInfo, Capture, dict[str, float]]:
    """Load and trace the model (stages 1-2): all a worker runs, and all it sends back (isolation/wire.py)."""
    if options.methods:
        check_methods(options.methods)  # a mistyped --capture fails before any model code runs
    seconds: dict[str, float] = {}
    with dynamo_on_demand():  # torch._dynamo only if the model or a capture method uses it (trace/lazy_dynamo.py)
        with timed(seconds, "load"):
            progress(f"loading {options.target}")
            loaded = load_model(LoadRequest.of(options))
        with timed(seconds, "trace"):
            train = TrainOptions(amp=options.amp) if options.train else None
            capture = trace_model(loaded, options.methods, progress, train, drive=options.drive)
    if options.graph_mode == "dynamo":  # torch._dynamo on the model, here in the worker (model code runs here)
        from .graphmode.dynamo import run_dynamo

        progress("running torch._dynamo on the forward (--graph-mode dynamo)")
        with timed(seconds, "dynamo"):
            on = loaded if capture.device == loaded.device else loaded.rebuild(capture.device)
            run = run_dynamo(on.module, on.args, on.kwargs)
            if run.error and on.device == "meta":  # a value read on the host (.item()) needs real data: the CPU
                on = on.rebuild("cpu")
                run = run_dynamo(on.module, on.args, on.kwargs)
            capture = replace(capture, dynamo=run)
    progress(f"captured {len(capture.nodes)} operator calls with {capture.method} on {capture.device}")
    return loaded.info, capture, seconds


def assess(options: ScanOptions, progress: Progress = _noop) -> Assessment:
    """Run the whole pipeline on one model in this process and return the Assessment every reporter renders."""
    preflight(options)
    info, capture, seconds = capture_stage(options, progress)
    export = None
    if options.route == "onnx":  # in this process only under OPASSESS_IN_PROCESS=1 (a debugger): no isolation
        from .routes.onnx_export import export_model

        export = export_model(options, progress)
    return assess_capture(options, info, capture, seconds, progress, onnx_export=export)


def assess_capture(options: ScanOptions, info: ModelInfo, capture: Capture, seconds: dict[str, float],
                   progress: Progress = _noop, onnx_export: OnnxExport | None = None,
                   pinned: tuple[KnowledgeBase, Weights, tuple[InputFile, ...]] | None = None) -> Assessment:
    """Stages 3-6 on a capture: inventory, classify, findings, score, estimate (run by the parent, never a worker);
    with a route, its check too (`onnx_export`: what the worker's ONNX export sent, checked by isolation/wire.py).
    `pinned`: the knowledge base, weights and input hashes read before the model ran (isolation/inputs.py), used
    instead of reading the files again."""
    from .classify import classify
    from .classify.library import adopt_site_verdicts
    from .classify.verified import apply_verified
    from .findings import DataFlow, Graph, find_findings, load_patterns
    from .inventory import build_inventory
    from .kb import format_version, load_kb
    from .score.criteria import score
    from .score.estimate import estimate
    from .score.signals import ModelContext, measure_all
    from .score.source_cost import captured_calls, estimate_sources, mark_reached
    from .score.weights.load import load_weights

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
        from .source.graph_sites import note_graph_readiness

        source_scan = replace(source_scan, findings=note_graph_readiness(source_scan.findings, graph))
    if source_scan is not None:  # a flash-attn call the capture saw: its call rendered with the shapes it ran on
        source_scan = replace(source_scan, findings=tuple(captured_calls(source_scan.findings, inventory.operators,
                                                                         source_scan.root)))
    sites = estimate_sources(source_scan.findings, inventory.operators, weights, source_scan.root) \
        if source_scan else ()
    if sites and options.source and source_scan is not None:  # --source DIR: what this model reaches is priced
        sites = mark_reached(sites, _reached_files(options, inventory, source_scan.root))
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
    from .classify.reach import judge_reach

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
    from .kb.routes import load_route_facts

    if options.route == "onnx":
        from .routes import OnnxExport, judge_onnx
        from .routes.records import OnnxFailure

        export = onnx_export or OnnxExport(options.opset, 0, "", (), (
            OnnxFailure("torchscript", "", "no export came back from the worker"),))
        return {"onnx": judge_onnx(export, load_route_facts())}
    if options.route == "vllm-ascend":
        from .perf import NoDeviceProfile, load_profile
        from .routes import check_serving

        product = kb.product(options.product)
        try:  # the compute data types the chip has, by its device figures (None: the tables give none)
            profile = load_profile(product.name, kb)
            cube = {d: profile.cite.get(f"peak.cube.{d}", "") for d in profile.peaks.get("cube", {})}
        except NoDeviceProfile:
            cube = None
        return {"serving": check_serving(info.class_name, options.quant, product.kernel, product.name,
                                         load_route_facts(), cube)}
    return {}


def _graph_stage(options: ScanOptions, capture: Capture, classified: tuple[ClassifiedOp, ...], kb: KnowledgeBase,
                 torch_version: str, seconds: dict[str, float], rates: Mapping[str, tuple[float, float, float]] | None,
                 inputs: tuple[str, ...] = ()) -> GraphMode | None:
    """Graph-mode readiness per operator and per back-end (None when switched off), from the capture and the facts."""
    if options.graph_mode == "off":
        return None
    from .graphmode import assess_graph_mode

    with timed(seconds, "graph_mode"):
        return assess_graph_mode(capture, classified, kb, torch_version, backend=options.graph_backend, rates=rates,
                                 inputs=inputs)


def _performance_stage(options: ScanOptions, kb: KnowledgeBase, inventory: Inventory,
                       classified: Sequence[ClassifiedOp], findings: Sequence[Finding], product: str,
                       torch_version: str, graph: Graph) -> Performance:
    """The time model (opassess/perf): the step on the target and on each --compare product."""
    from .perf import estimate_performance

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
    from .source import scan_sources
    from .source.imports import project_files

    paths: list[Path] = [Path(p) for p in options.source]
    target = Path(options.target)
    if options.project_scan and target.suffix == ".py" and target.is_file():
        paths += project_files(target)
    if not paths:
        return None
    with timed(seconds, "source"):
        progress(f"scanning the source of {len(paths)} path(s)")
        return scan_sources(paths, product=kernel)


TRAINING_SCRIPT = "train.py"  # beside the model: the entry point of its training run


def training_scripts(options: ScanOptions) -> list[Path]:
    """With --train, the training run's entry points: each Python file --source names, and a train.py beside the
    model file."""
    if not options.train:
        return []
    scripts = [Path(p) for p in options.source if Path(p).suffix == ".py" and Path(p).is_file()]
    beside = Path(options.target).parent / TRAINING_SCRIPT
    if Path(options.target).suffix == ".py" and beside.is_file() and beside.resolve() != Path(options.target).resolve():
        scripts.append(beside)
    return scripts


def _reached_files(options: ScanOptions, inventory: Inventory, root: str) -> set[str]:
    """Files (relative to the scan root) this model reaches: the model file and the project files it imports, every
    file a captured operator was called from, and with --train the training scripts and what they import."""
    from .source.imports import project_files

    target = Path(options.target)
    paths = [Path(p) for p in project_files(target)] if target.suffix == ".py" and target.is_file() else []
    for entry in training_scripts(options):  # --train: the training script runs the model, so its sites are reached
        paths += [Path(p) for p in project_files(entry)]
    paths += [Path(source.rpartition(":")[0]) for node in inventory.capture.nodes
              for source in (node.source, node.project_source) if source and ":" in source]
    base = Path(root).resolve()
    out = set()
    for path in paths:
        try:
            out.add(path.resolve().relative_to(base).as_posix())
        except (ValueError, OSError):
            continue
    return out


def assess_sources(paths: tuple[str, ...], options: ScanOptions, progress: Progress = _noop,
                   start: float | None = None) -> Assessment:
    """`opassess source PATH...`: the source scan alone as an Assessment (no model, no operators), costed and placed
    on the risk grid like a model's; the model-level activities are left out (there is no model to bring up).
    `start`: the seconds the process ran before this (the command's interpreter start and imports), the first of the
    report's `seconds`, which then add up to the wall time up to the report's rendering."""
    from .kb import format_version, load_kb
    from .records import Capture, ModelInfo
    from .score.estimate import estimate
    from .score.source_cost import estimate_sources
    from .score.weights.load import load_weights
    from .source import scan_sources
    from .vocabulary import NO_CAPTURE

    seconds = {} if start is None else {"start": start}
    with timed(seconds, "source"):  # the facts it is judged by loaded too
        weights = load_weights(options.weights, options.profile)
        kb = load_kb(options.kb_dir)
        product = kb.resolve_product(options.product)
        torch_version = format_version(kb.resolve_version(options.torch_npu))
        progress(f"scanning the source of {len(paths)} path(s)")
        scan = scan_sources(paths, product=kb.product(options.product).kernel)
    with timed(seconds, "estimate"):
        root = Path(scan.root)
        model = ModelInfo(source=paths[0] if len(paths) == 1 else ", ".join(paths), entry="source",
                          class_name=root.name or scan.root, parameters=0, dtype="", inputs=(), label=options.label)
        capture = Capture(method=NO_CAPTURE, device="none", device_note="source scan only: no model was loaded",
                          attempts=(), nodes=())
        inventory = Inventory(model=model, capture=capture, operators=())
        result = estimate((), inventory, weights, source=estimate_sources(scan.findings, (), weights, scan.root),
                          model_level=False)
    return Assessment(tool_version=__version__, torch_running=installed_torch(), model=model, capture=capture,
                      inventory=inventory, target=product,
                      torch_version=torch_version, kb_version=kb.version, classified=(), estimate=result,
                      findings=(), weights_source=str(weights.source), seconds=seconds,
                      effort_ranges={c: (e.low, e.high) for c, e in weights.effort.categories.items()},
                      source_scan=scan)

