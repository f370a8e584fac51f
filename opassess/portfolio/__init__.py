"""Portfolio: scan many models, each in its own worker, and plan their migration with effort shared.

targets.py finds the models, workers.py runs each in an isolated process (timeout, memory cap, crash isolation),
ray_executor.py runs each as a Ray task on a cluster instead (shipping.py carries the model folders there),
state.py lets an interrupted run resume, plan.py orders the models by marginal effort with operators paid once.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..ci.policy import Policy, evaluate
from ..ci.snapshot import read_snapshot
from ..errors import OpassessError, ReportError
from .plan import bands, plan_portfolio
from .records import (
    DEFAULT_TIMEOUT,
    ModelPlan,
    ModelResult,
    OpDemand,
    Portfolio,
    PortfolioEvent,
    PortfolioOptions,
    default_jobs,
    physical_memory,
)
from .state import check_written, fingerprint, read_state, report_digest, resumable, write_state
from .targets import PORTFOLIO_NAME, STATE_FILE, ModelTarget, Skipped, expand_targets, no_models_message
from .workers import Executor, LocalWorkers

if TYPE_CHECKING:
    from ..score.weights import Weights

__all__ = ["DEFAULT_TIMEOUT", "PORTFOLIO_NAME", "STATE_FILE", "Executor", "LocalWorkers", "ModelPlan", "ModelResult",
           "ModelTarget", "OpDemand", "Portfolio", "PortfolioEvent", "PortfolioOptions", "Skipped", "default_jobs",
           "expand_targets", "physical_memory", "plan_portfolio", "scan_portfolio"]


def scan_portfolio(options: PortfolioOptions, on_event: Callable[[PortfolioEvent], None] | None = None,
                   weights: Weights | None = None, executor: Executor | None = None) -> Portfolio:
    """Scan every model of the portfolio (in local worker processes unless another executor is given), write each
    one's reports as it finishes, and plan."""
    from ..output import write_output
    from ..report import REPORTERS
    from ..score.weights.load import load_weights

    notify = on_event or (lambda _event: None)
    if weights is None:  # fail before any scan
        weights = load_weights(options.scan.weights, options.scan.profile)
    if options.scan.quant:  # as a single scan's preflight: a scheme the serving facts do not name is bad usage
        from ..kb.routes import load_route_facts
        from ..routes.serving import check_quant

        check_quant(options.scan.quant, load_route_facts())
    unknown = [fmt for fmt in options.formats if fmt not in REPORTERS]
    if unknown:
        raise ReportError(f"unknown report format {unknown[0]!r}; choose one of {', '.join(sorted(REPORTERS))}")
    models, skipped = expand_targets(options.targets, options.scan.entry)
    if not models:
        raise OpassessError(no_models_message(options.targets, skipped, options.scan.entry))
    out_dir = options.out_dir
    if out_dir.exists() and not out_dir.is_dir():
        raise ReportError(f"{out_dir}: with several models, -o names a directory, and this is a file")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create the output directory {out_dir}: {exc.strerror or exc}") from exc

    digests: dict[str, dict[str, str]] = {m.target: {} for m in models}
    fingerprints = {m.target: fingerprint(replace(options, scan=m.scan_options(options.scan)), m.target)
                    for m in models}
    state: dict[str, object] = read_state(out_dir) if options.resume else {}
    results: dict[str, ModelResult] = {}
    done = 0
    for model in models:
        previous = resumable(state.get(model.target), fingerprints[model.target], out_dir) \
            if options.resume else None
        if previous is not None and previous.name == model.name:
            results[model.target] = previous
            done += 1
            notify(PortfolioEvent("resumed", model.name, done, len(models), previous))
    state = {target: entry for target, entry in state.items() if target in results}  # the rest is rescanned
    write_state(out_dir, state)

    def finish(model: ModelTarget, result: ModelResult, texts: Mapping[str, str] | None) -> None:
        nonlocal done
        if texts is not None:
            written = []
            for fmt, text in texts.items():
                name = f"{model.name}{REPORTERS[fmt].extension}"  # json's extension is .json
                write_output(text, out_dir / name)
                written.append(name)
                digests[model.target][name] = report_digest(text)
            try:
                snapshot = read_snapshot(json.loads(texts["json"]))
            except (OpassessError, ValueError) as exc:
                result = replace(result, status="failed", cause=f"unreadable JSON report: {exc}")
                snapshot = None
            result = replace(result, reports=tuple(written), snapshot=snapshot)
        results[model.target] = result
        state[model.target] = {"target": model.target, "name": model.name, "status": result.status,
                               "cause": result.cause, "reports": list(result.reports),
                               "seconds": round(result.seconds, 3), "fingerprint": fingerprints[model.target],
                               "sha256": digests[model.target]}
        write_state(out_dir, state)  # persisted before the next model can fail
        done += 1
        notify(PortfolioEvent("done", model.name, done, len(models), result))

    pending = [m for m in models if m.target not in results]
    if pending:
        from ..isolation.inputs import holding, pin_inputs
        from .manifest import is_manifest

        # every input read and hashed before the first model runs, every verdict judged by those copies, and a file
        # changed while the models ran an error naming it (isolation/inputs.py)
        with holding(pin_inputs(options.scan, extra=[Path(t) for t in options.targets if is_manifest(t)])):
            (executor or LocalWorkers()).run(pending, options, finish, notify, done, len(models))
        check_written(out_dir, state, digests)  # -o holds what this process wrote, or the run fails naming the file
    ordered = tuple(results[m.target] for m in models)
    return _assemble(ordered, skipped, options.policy, weights, out_dir)




def _assemble(results: Sequence[ModelResult], skipped: Sequence[Skipped], policy: Policy, weights: Weights,
              out_dir: Path | None) -> Portfolio:
    ok = [(r.name, r.target, r.snapshot) for r in results if r.status == "ok" and r.snapshot is not None]
    plan, demands, standalone, shared = plan_portfolio(ok, weights)
    breaches = tuple((name, b) for name, _, snapshot in ok for b in evaluate(snapshot, policy))
    shared_band, standalone_band = bands(plan, weights)
    return Portfolio(results=tuple(results), skipped=tuple(skipped), plan=plan, custom_dev=demands,
                     standalone_total=standalone, shared_total=shared, breaches=breaches, out_dir=out_dir,
                     shared_band=shared_band, standalone_band=standalone_band)
