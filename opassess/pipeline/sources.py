"""The source scan's part of the spine: `opassess source PATH...` as an Assessment (no model), and which files a
model's run reaches (a model scan prices the source sites in them: assess.py)."""
from __future__ import annotations

from pathlib import Path

from .. import __version__
from ..assessment import Assessment
from ..kb import format_version, load_kb
from ..options import ScanOptions
from ..records import Capture, Inventory, ModelInfo
from ..score.estimate import estimate
from ..score.source_cost import estimate_sources, mark_configured
from ..score.weights.load import load_weights
from ..source import scan_sources
from ..source.imports import project_files
from ..vocabulary import NO_CAPTURE
from . import Progress, installed_torch, noop, timed

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


def reached_files(options: ScanOptions, inventory: Inventory, root: str) -> set[str]:
    """Files (relative to the scan root) this model reaches: the model file and the project files it imports, every
    file a captured operator was called from, and with --train the training scripts and what they import."""
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


def assess_sources(paths: tuple[str, ...], options: ScanOptions, progress: Progress = noop,
                   start: float | None = None) -> Assessment:
    """`opassess source PATH...`: the source scan alone as an Assessment (no model, no operators), costed and placed
    on the risk grid like a model's; the model-level activities are left out (there is no model to bring up).
    `start`: the seconds the process ran before this (the command's interpreter start and imports), the first of the
    report's `seconds`, which then add up to the wall time up to the report's rendering."""
    seconds = {} if start is None else {"start": start}
    with timed(seconds, "source"):  # the facts it is judged by loaded too
        weights = load_weights(options.weights, options.profile)
        kb = load_kb(options.kb_dir)
        product = kb.resolve_product(options.product)
        torch_version = format_version(kb.resolve_version(options.torch_npu))
        progress(f"scanning the source of {len(paths)} path(s)")
        scan = scan_sources(paths, product=kb.product(options.product).kernel, configured=True)
    with timed(seconds, "estimate"):
        root = Path(scan.root)
        model = ModelInfo(source=paths[0] if len(paths) == 1 else ", ".join(paths), entry="source",
                          class_name=root.name or scan.root, parameters=0, dtype="", inputs=(), label=options.label)
        capture = Capture(method=NO_CAPTURE, device="none", device_note="source scan only: no model was loaded",
                          attempts=(), nodes=())
        inventory = Inventory(model=model, capture=capture, operators=())
        sites = estimate_sources(scan.findings, (), weights, scan.root)
        if scan.reach is not None:  # what the project's default configuration runs is priced; the rest is present
            sites = mark_configured(sites, scan.reach)
        result = estimate((), inventory, weights, source=sites, model_level=False)
    return Assessment(tool_version=__version__, torch_running=installed_torch(), model=model, capture=capture,
                      inventory=inventory, target=product,
                      torch_version=torch_version, kb_version=kb.version, classified=(), estimate=result,
                      findings=(), weights_source=str(weights.source), seconds=seconds,
                      effort_ranges={c: (e.low, e.high) for c, e in weights.effort.categories.items()},
                      source_scan=scan)
