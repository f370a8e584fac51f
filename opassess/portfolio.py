"""Portfolio: scan many models, each in its own worker process, and plan their migration with effort shared.

Isolation. Every model is scanned in a fresh worker process (forkserver where the platform has it, else spawn)
with a per-model timeout and an address-space cap (resource.setrlimit(RLIMIT_AS)). A worker that hangs is killed
at its deadline; one that aborts, segfaults or runs out of memory is reported as failed with its cause; every
other model's result is still written.

Persistence. Each finished model's reports are written to the output directory as soon as it finishes, and a
state file (portfolio.state.json) records which targets are done with the options they were scanned with, so an
interrupted run can `resume` without rescanning them. Failed models are retried on resume.

Shared effort. An operator ported for one model is not paid again for the next: the first model that needs an
operator type (in a category) pays its full person-days; a later model pays only for the signatures (attributes,
shapes, dtypes) the ports so far do not cover, costed with estimate.effort as the difference between the operator
with and without them. Models are ordered greedily by marginal effort, cheapest next, so a lead sees which models
come almost for free once others are ported; custom-dev operators are ranked by how many models need them.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import resource
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from multiprocessing import connection as mp_connection
from pathlib import Path
from typing import Any

from .errors import OpassessError, ReportError
from .pipeline import ScanOptions
from .policy import Breach, Policy, evaluate
from .records import ClassifiedOp, Effort, Operator, OpScore, Signature
from .snapshot import OpState, SignatureState, Snapshot, read_snapshot

STATE_FILE = "portfolio.state.json"
STATE_VERSION = 1
PORTFOLIO_NAME = "portfolio"  # portfolio.json, portfolio.md
_ZERO = Effort(0.0, 0.0, 0.0)
_KILL_GRACE = 5.0  # seconds a worker that has sent its result gets to exit before it is killed
_POLL = 0.5  # seconds between deadline checks while waiting on workers


def default_jobs() -> int:
    """The number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def physical_memory() -> int:
    """Bytes of physical memory (0 when the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


@dataclass(frozen=True)
class PortfolioOptions:
    """What to scan and how: the targets, one ScanOptions template (its target is replaced per model), limits."""

    targets: tuple[str, ...]  # model files, directories of model files, package.module:factory
    scan: ScanOptions
    out_dir: Path
    formats: tuple[str, ...] = ()  # per-model report formats written besides JSON (which is always written)
    jobs: int = field(default_factory=default_jobs)
    timeout: float = 600.0  # seconds per model
    memory_limit: int | None = None  # bytes of address space per worker; None: physical memory / jobs; 0: no cap
    resume: bool = False
    policy: Policy = Policy()

    def memory_cap(self) -> int:
        if self.memory_limit is not None:
            return self.memory_limit
        return physical_memory() // max(1, self.jobs)


@dataclass(frozen=True)
class ModelTarget:
    """One model of the portfolio and the stem its report files are named with."""

    target: str
    name: str  # "resnet_like" -> resnet_like.json, resnet_like.md


@dataclass(frozen=True)
class Skipped:
    """A file found in a target directory that is not scanned, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class ModelResult:
    """How one model's scan ended."""

    target: str
    name: str
    status: str  # "ok" | "failed"
    cause: str | None  # why it failed: "timed out after 5 s", "worker crashed: SIGABRT (abort)", ...
    reports: tuple[str, ...]  # files written, relative to the output directory
    seconds: float
    resumed: bool = False  # taken from an earlier, interrupted run
    snapshot: Snapshot | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class ModelPlan:
    """One model in porting order: what it costs alone and what it adds after the models before it."""

    name: str
    target: str
    standalone: Effort  # its operators' person-days summed, as if ported alone
    marginal: Effort  # what it adds given the models before it
    cumulative: Effort  # marginal summed over the plan so far
    new_ops: tuple[str, ...]  # operator types it pays for first
    extended_ops: tuple[str, ...]  # already ported, but it brings new signatures
    shared_ops: tuple[str, ...]  # already covered entirely by earlier models
    custom_dev: tuple[str, ...]
    costs: tuple[tuple[str, Effort], ...] = ()  # (operator, what this model pays for it) for new and extended ones


@dataclass(frozen=True)
class OpDemand:
    """A custom-dev operator and the models it unblocks."""

    op: str
    models: tuple[str, ...]  # models that need it
    sole_blocker_of: tuple[str, ...]  # models whose only custom-dev operator it is
    effort: Effort  # what porting it costs across the portfolio (paid once, plus signature extensions)


@dataclass(frozen=True)
class Portfolio:
    """The result of a portfolio scan."""

    results: tuple[ModelResult, ...]  # in target order
    skipped: tuple[Skipped, ...]
    plan: tuple[ModelPlan, ...]  # successfully scanned models, cheapest marginal first
    custom_dev: tuple[OpDemand, ...]  # ranked by how many models each unblocks
    standalone_total: Effort  # every model ported on its own
    shared_total: Effort  # with each operator paid once
    breaches: tuple[tuple[str, Breach], ...]  # (model name, breach)
    out_dir: Path | None = None

    @property
    def failed(self) -> tuple[ModelResult, ...]:
        return tuple(r for r in self.results if r.status != "ok")


@dataclass(frozen=True)
class PortfolioEvent:
    """Progress of a portfolio scan, for a progress bar: kind is 'start', 'resumed' or 'done'."""

    kind: str
    name: str
    done: int  # models finished so far
    total: int
    result: ModelResult | None = None


# ------------------------------------------------------------------ targets


def _looks_like_model(path: Path, entry: str) -> bool:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return re.search(rf"^\s*def\s+{re.escape(entry)}\s*\(", text, re.MULTILINE) is not None


def expand_targets(targets: Sequence[str], entry: str | None = None
                   ) -> tuple[tuple[ModelTarget, ...], tuple[Skipped, ...]]:
    """Files as given, directories as the model files in them (recursively, defining the factory), module:factory
    targets as given; each named after its file stem (or factory), disambiguated when two stems clash."""
    factory = (entry or "build_model").rsplit(":", 1)[-1]
    found: list[str] = []
    skipped: list[Skipped] = []
    for target in targets:
        path = Path(target)
        if path.is_dir():
            for candidate in sorted(path.rglob("*.py")):
                if any(part.startswith(".") or part == "__pycache__" for part in candidate.relative_to(path).parts):
                    continue
                if _looks_like_model(candidate, factory):
                    found.append(str(candidate))
                else:
                    skipped.append(Skipped(str(candidate), f"defines no {factory}()"))
        else:
            found.append(target)
    unique = list(dict.fromkeys(found))  # a file named twice is scanned once
    stems = [_stem(t) for t in unique]
    names = []
    for target, stem in zip(unique, stems, strict=False):
        # Two files with one stem, or a stem whose report would overwrite the portfolio's own files.
        clash = stems.count(stem) > 1 or stem == PORTFOLIO_NAME or f"{stem}.json" == STATE_FILE
        names.append(f"{stem}-{hashlib.sha1(target.encode()).hexdigest()[:6]}" if clash else stem)
    return tuple(ModelTarget(t, n) for t, n in zip(unique, names, strict=False)), tuple(skipped)


def _stem(target: str) -> str:
    """'examples/resnet_like.py' -> 'resnet_like'; 'torchvision.models:resnet50' -> 'resnet50'."""
    if target.endswith(".py") or Path(target).exists():
        stem = Path(target).stem
    else:
        stem = target.rsplit(":", 1)[-1] or target
    return re.sub(r"[^A-Za-z0-9_.-]", "_", stem) or "model"


# ------------------------------------------------------------------ worker


@dataclass(frozen=True)
class _WorkerSetup:
    """What a worker needs besides the scan options to behave like the parent (forkserver children do not inherit
    the parent's current directory, environment or sys.path as they are now)."""

    cwd: str
    environ: Mapping[str, str]
    sys_path: tuple[str, ...]
    memory_cap: int
    formats: tuple[str, ...]
    policy: Policy


def _cap_memory(cap: int) -> None:
    if cap > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = cap if hard == resource.RLIM_INFINITY else min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _out_of_memory(exc: BaseException | None) -> bool:
    """MemoryError, or torch's allocator failing, anywhere in the chain of causes (the loader wraps them)."""
    seen = 0
    while exc is not None and seen < 10:
        text = str(exc).lower()
        if isinstance(exc, MemoryError) or "can't allocate memory" in text or "not enough memory" in text:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _memory_message(exc: BaseException, cap: int) -> str:
    within = f" under the memory cap of {cap / 2**30:.1f} GiB" if cap else ""
    first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    return f"out of memory{within}: {first}"


def _work(options: ScanOptions, setup: _WorkerSetup, conn: mp_connection.Connection) -> None:
    """Worker body: scan one model, render its reports, send ('ok', {format: text}) or ('failed', cause)."""
    os.chdir(setup.cwd)
    os.environ.clear()
    os.environ.update(setup.environ)
    sys.path[:] = list(setup.sys_path)
    _cap_memory(setup.memory_cap)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crashing model leaves no core file behind
    message: tuple[str, Any]
    try:
        from .pipeline import assess
        from .report import render

        assessment = assess(options)
        breaches = evaluate(assessment, setup.policy)
        texts = {fmt: render(assessment, fmt, breaches=breaches) for fmt in ("json", *setup.formats)}
        message = ("ok", texts)
    except OpassessError as exc:
        message = ("failed", _memory_message(exc, setup.memory_cap) if _out_of_memory(exc) else str(exc))
    except BaseException as exc:  # noqa: BLE001 - the worker reports everything; the parent decides
        if _out_of_memory(exc):
            message = ("failed", _memory_message(exc, setup.memory_cap))
        else:
            first = str(exc).splitlines()[0][:300] if str(exc) else ""
            message = ("failed", f"internal error: {type(exc).__name__}: {first}".rstrip(": "))
    conn.send(message)
    conn.close()


def _context():
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    if "forkserver" in methods:
        context = multiprocessing.get_context("forkserver")
        # Workers fork from a server that has torch and opassess imported already (nothing run yet, so no threads
        # to lose in the fork): a worker starts in ~0.1 s instead of the ~2 s that importing torch takes.
        context.set_forkserver_preload(["torch", "opassess.pipeline", "opassess.report", "opassess.load",
                                        "opassess.trace"])
        return context
    return multiprocessing.get_context("spawn")


def _crash_cause(exitcode: int | None) -> str:
    if exitcode is None:
        return "worker ended without a result"
    if exitcode < 0:
        number = -exitcode
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        text = {signal.SIGABRT: "aborted", signal.SIGSEGV: "segmentation fault", signal.SIGBUS: "bus error",
                signal.SIGFPE: "floating-point exception", signal.SIGILL: "illegal instruction",
                signal.SIGKILL: "killed (out of memory, or from outside)"}.get(number, "killed by a signal")
        return f"worker crashed: {name} ({text})"
    return f"worker exited with status {exitcode} without a result"


@dataclass
class _Running:
    model: ModelTarget
    process: Any
    conn: mp_connection.Connection
    started: float
    deadline: float


# ------------------------------------------------------------------ state (resume)


def _fingerprint(options: PortfolioOptions, target: str) -> str:
    """What a finished result depends on: the scan options, the formats, the bytes of the model file and of the
    weights file (the same --weights path with other numbers gives other estimates), and the policy when a
    per-model format marks breaches (SARIF, JUnit); the portfolio's own breaches are re-read from JSON."""
    scan = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(replace(options.scan, target="")).items()
            if k != "extra"}
    marks_breaches = bool({"sarif", "junit"} & set(options.formats))
    text = json.dumps({"scan": scan, "formats": sorted(options.formats),
                       "policy": asdict(options.policy) if marks_breaches else None,
                       "file": _content_hash(Path(target)),
                       "weights": _content_hash(options.scan.weights) if options.scan.weights else None},
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _content_hash(path: Path) -> str:
    """sha256 of a file's bytes; '' when it is not a readable file (a module:factory target)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def _read_state(out_dir: Path) -> dict[str, Any]:
    path = out_dir / STATE_FILE
    if not path.exists():
        return {}
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read the state of the interrupted run: {exc}") from exc
    if not isinstance(state, dict) or state.get("state_version") != STATE_VERSION:
        raise ReportError(f"{path}: not a portfolio state file this opassess reads")
    return state.get("models", {})


def _write_state(out_dir: Path, models: Mapping[str, Any]) -> None:
    from .report.write import write_output

    write_output(json.dumps({"state_version": STATE_VERSION, "models": models}, indent=2, sort_keys=True) + "\n",
                 out_dir / STATE_FILE)


def _resumable(entry: Any, fingerprint: str, out_dir: Path) -> ModelResult | None:
    """A finished result from the state file, when it is 'ok', scanned the same way, and its JSON report reads."""
    if not isinstance(entry, dict) or entry.get("status") != "ok" or entry.get("fingerprint") != fingerprint:
        return None
    try:
        snapshot = read_snapshot(out_dir / f"{entry['name']}.json")
    except (OpassessError, KeyError):
        return None
    return ModelResult(target=entry["target"], name=entry["name"], status="ok", cause=None,
                       reports=tuple(entry.get("reports", ())), seconds=float(entry.get("seconds", 0.0)),
                       resumed=True, snapshot=snapshot)


# ------------------------------------------------------------------ scanning


def scan_portfolio(options: PortfolioOptions, on_event: Callable[[PortfolioEvent], None] | None = None,
                   weights: Any = None) -> Portfolio:
    """Scan every model of the portfolio in worker processes, write each one's reports as it finishes, and plan."""
    from .report import REPORTERS
    from .report.write import write_output
    from .score.weights_load import load_weights

    notify = on_event or (lambda _event: None)
    weights = weights if weights is not None else load_weights(options.scan.weights)  # fail before any scan
    unknown = [fmt for fmt in options.formats if fmt not in REPORTERS]
    if unknown:
        raise ReportError(f"unknown report format {unknown[0]!r}; choose one of {', '.join(sorted(REPORTERS))}")
    models, skipped = expand_targets(options.targets, options.scan.entry)
    if not models:
        raise OpassessError("no model to scan: " + (f"{len(skipped)} file(s) found, none defines "
                                                     f"{(options.scan.entry or 'build_model').rsplit(':', 1)[-1]}()"
                                                     if skipped else "no targets"))
    out_dir = options.out_dir
    if out_dir.exists() and not out_dir.is_dir():
        raise ReportError(f"{out_dir}: with several models, -o names a directory, and this is a file")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot create the output directory {out_dir}: {exc.strerror or exc}") from exc

    fingerprints = {m.target: _fingerprint(options, m.target) for m in models}
    state: dict[str, Any] = _read_state(out_dir) if options.resume else {}
    results: dict[str, ModelResult] = {}
    done = 0
    for model in models:
        previous = _resumable(state.get(model.target), fingerprints[model.target], out_dir) \
            if options.resume else None
        if previous is not None and previous.name == model.name:
            results[model.target] = previous
            done += 1
            notify(PortfolioEvent("resumed", model.name, done, len(models), previous))
    state = {target: entry for target, entry in state.items() if target in results}  # the rest is rescanned
    _write_state(out_dir, state)

    def finish(model: ModelTarget, result: ModelResult, texts: Mapping[str, str] | None) -> None:
        nonlocal done
        if texts is not None:
            written = []
            for fmt, text in texts.items():
                name = f"{model.name}{REPORTERS[fmt].extension}" if fmt != "json" else f"{model.name}.json"
                write_output(text, out_dir / name)
                written.append(name)
            try:
                snapshot = read_snapshot(json.loads(texts["json"]))
            except (OpassessError, ValueError) as exc:
                result = replace(result, status="failed", cause=f"unreadable JSON report: {exc}")
                snapshot = None
            result = replace(result, reports=tuple(written), snapshot=snapshot)
        results[model.target] = result
        state[model.target] = {"target": model.target, "name": model.name, "status": result.status,
                               "cause": result.cause, "reports": list(result.reports),
                               "seconds": round(result.seconds, 3), "fingerprint": fingerprints[model.target]}
        _write_state(out_dir, state)  # persisted before the next model can fail
        done += 1
        notify(PortfolioEvent("done", model.name, done, len(models), result))

    pending = [m for m in models if m.target not in results]
    if pending:
        _run_workers(pending, options, finish, notify, done, len(models))
    ordered = tuple(results[m.target] for m in models)
    return _assemble(ordered, skipped, options.policy, weights, out_dir)


def _run_workers(pending: list[ModelTarget], options: PortfolioOptions,
                 finish: Callable[[ModelTarget, ModelResult, Mapping[str, str] | None], None],
                 notify: Callable[[PortfolioEvent], None], done: int, total: int) -> None:
    context = _context()
    setup = _WorkerSetup(cwd=os.getcwd(), environ=dict(os.environ), sys_path=tuple(sys.path),
                         memory_cap=options.memory_cap(), formats=tuple(f for f in options.formats if f != "json"),
                         policy=options.policy)
    queue = list(pending)
    running: list[_Running] = []
    try:
        while queue or running:
            while queue and len(running) < max(1, options.jobs):
                model = queue.pop(0)
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(target=_work, name=f"opassess-{model.name}",
                                          args=(replace(options.scan, target=model.target), setup, sender),
                                          daemon=True)
                started = time.monotonic()
                process.start()
                sender.close()  # the parent keeps only the reading end: EOF when the worker dies
                running.append(_Running(model, process, receiver, started, started + options.timeout))
                notify(PortfolioEvent("start", model.name, done, total))
            now = time.monotonic()
            wait_for = min(max(0.0, min(r.deadline for r in running) - now), _POLL)
            mp_connection.wait([r.conn for r in running] + [r.process.sentinel for r in running], wait_for)
            for job in list(running):
                outcome = _collect(job, options.timeout)
                if outcome is None:
                    continue
                running.remove(job)
                status, payload = outcome
                seconds = time.monotonic() - job.started
                if status == "ok":
                    finish(job.model, ModelResult(job.model.target, job.model.name, "ok", None, (), seconds), payload)
                else:
                    finish(job.model, ModelResult(job.model.target, job.model.name, "failed", payload, (), seconds),
                           None)
                done += 1
    finally:
        for job in running:  # interrupted: leave no worker behind
            _stop(job.process)
            job.conn.close()


def _collect(job: _Running, timeout: float) -> tuple[str, Any] | None:
    """The worker's outcome once there is one: its message, its crash, or its timeout; None while it runs."""
    if job.conn.poll():
        try:
            status, payload = job.conn.recv()
        except (EOFError, OSError):  # died before (or while) sending
            job.process.join(_KILL_GRACE)
            job.conn.close()
            return "failed", _crash_cause(job.process.exitcode)
        job.process.join(_KILL_GRACE)
        if job.process.is_alive():
            _stop(job.process)
        job.conn.close()
        return status, payload
    if not job.process.is_alive():
        job.process.join()
        job.conn.close()
        return "failed", _crash_cause(job.process.exitcode)
    if time.monotonic() >= job.deadline:
        _stop(job.process)
        job.conn.close()
        return "failed", f"timed out after {timeout:g} s (worker killed)"
    return None


def _stop(process: Any) -> None:
    if process.is_alive():
        process.kill()  # SIGKILL: a worker stuck in C code does not answer SIGTERM
    process.join(_KILL_GRACE)


# ------------------------------------------------------------------ planning


def _scored(template: OpState, signatures: Sequence[SignatureState]) -> OpScore:
    """A scored operator rebuilt from a report with just `signatures`, carrying exactly what estimate.effort reads
    (category, composite, signature categories, call count, known); the other fields are left empty."""
    operator = Operator(op=template.op, kind=template.kind, count=sum(s.count for s in signatures), modules=(),
                        signatures=tuple(Signature(attrs={}, input_shapes=(), input_dtypes=(), count=s.count,
                                                   modules=(), sources=()) for s in signatures),
                        aten=(), sources=(), nodes=())
    classified = ClassifiedOp(operator=operator, category=template.category or "direct",
                              signature_categories=tuple(s.category or template.category or "direct"
                                                         for s in signatures),
                              reasons=(), replacement=None, cann_op=None, known=template.known is not False,
                              aten_support={})
    return OpScore(op=classified, functional=0.0, performance=0.0, ecosystem=0.0,
                   composite=template.composite or 0.0, subscores=())


@dataclass
class _Port:
    """An operator type (in one category) ported for the plan so far: the report entry that paid for it first and
    every signature covered since."""

    template: OpState
    signatures: dict[str, SignatureState]


def _marginal(snapshot: Snapshot, ported: Mapping[tuple[str, str | None], _Port], weights: Any
              ) -> tuple[Effort, list[str], list[str], list[str], dict[tuple[str, str | None], Effort]]:
    """What `snapshot` adds to the ports so far: its effort, its new / extended / shared operator types, and the
    cost per operator key."""
    from .score.estimate import effort

    total, new, extended, shared, costs = _ZERO, [], [], [], {}
    for op in snapshot.operators:
        if op.person_days is None:  # not estimated: nothing to share or pay
            continue
        key = (op.op, op.category)
        port = ported.get(key)
        if port is None:
            cost = op.person_days
            new.append(op.op)
        else:
            fresh = [s for s in op.signatures if s.key not in port.signatures]
            if not fresh:
                cost = _ZERO
                shared.append(op.op)
            else:
                # e.g. a param-converted op already ported with 1 signature, this model bringing a 2nd that needs
                # conversion: effort(2 signatures) - effort(1 signature) = per_extra_signature (0.5 shipped) plus
                # the extra occurrences' per_occurrence days, below the cap.
                covered = list(port.signatures.values())
                with_fresh, without = effort(_scored(port.template, covered + fresh), weights), \
                    effort(_scored(port.template, covered), weights)
                cost = Effort(with_fresh.low - without.low, with_fresh.likely - without.likely,
                              with_fresh.high - without.high)
                extended.append(op.op)
        costs[key] = cost
        total = total + cost
    return total, new, extended, shared, costs


def plan_portfolio(snapshots: Sequence[tuple[str, str, Snapshot]], weights: Any
                   ) -> tuple[tuple[ModelPlan, ...], tuple[OpDemand, ...], Effort, Effort]:
    """Order (name, target, snapshot) models by marginal effort, cheapest next, paying each operator once.

    Returns the plan, the custom-dev operators ranked by how many models each unblocks, the standalone total
    (every model alone) and the shared total (sum of marginals).
    Example: A = {Conv2d 1.5, mylib::gelu 12}, B = {Conv2d 1.5, Linear 1.5}, every signature the same: B first
    (3.0 < 13.5), then A adds only mylib::gelu (12.0): shared 15.0 against 16.5 standalone.
    """
    remaining = list(snapshots)
    ported: dict[tuple[str, str | None], _Port] = {}
    paid: dict[str, Effort] = {}
    plan: list[ModelPlan] = []
    cumulative = _ZERO
    while remaining:
        scored = []
        for index, (name, target, snapshot) in enumerate(remaining):
            scored.append((_marginal(snapshot, ported, weights), index))
        (marginal, new, extended, shared, costs), index = min(scored, key=lambda item: (item[0][0].likely,
                                                                                           item[1]))
        name, target, snapshot = remaining.pop(index)
        for op in snapshot.operators:
            if op.person_days is None:
                continue
            key = (op.op, op.category)
            port = ported.setdefault(key, _Port(template=op, signatures={}))
            for s in op.signatures:
                port.signatures.setdefault(s.key, s)
            if op.category == "custom-dev":
                paid[op.op] = paid.get(op.op, _ZERO) + costs.get(key, _ZERO)
        cumulative = cumulative + marginal
        plan.append(ModelPlan(
            name=name, target=target, standalone=_standalone(snapshot), marginal=marginal, cumulative=cumulative,
            new_ops=tuple(new), extended_ops=tuple(extended), shared_ops=tuple(shared),
            custom_dev=tuple(o.op for o in snapshot.operators if o.category == "custom-dev"),
            costs=tuple((op, cost) for (op, _), cost in costs.items() if cost != _ZERO)))
    demands = []
    for op in sorted({o for p in plan for o in p.custom_dev}):
        needing = tuple(p.name for p in plan if op in p.custom_dev)
        sole = tuple(p.name for p in plan if p.custom_dev == (op,))
        demands.append(OpDemand(op=op, models=needing, sole_blocker_of=sole, effort=paid.get(op, _ZERO)))
    demands.sort(key=lambda d: (-len(d.models), -len(d.sole_blocker_of), d.effort.likely, d.op))
    standalone = sum((p.standalone for p in plan), _ZERO)
    return tuple(plan), tuple(demands), standalone, cumulative


def _standalone(snapshot: Snapshot) -> Effort:
    return sum((o.person_days for o in snapshot.operators if o.person_days is not None), _ZERO)


def _assemble(results: Sequence[ModelResult], skipped: Sequence[Skipped], policy: Policy, weights: Any,
              out_dir: Path | None) -> Portfolio:
    ok = [r for r in results if r.status == "ok" and r.snapshot is not None]
    plan, demands, standalone, shared = plan_portfolio([(r.name, r.target, r.snapshot) for r in ok], weights)
    breaches = tuple((r.name, b) for r in ok for b in evaluate(r.snapshot, policy))
    return Portfolio(results=tuple(results), skipped=tuple(skipped), plan=plan, custom_dev=demands,
                     standalone_total=standalone, shared_total=shared, breaches=breaches, out_dir=out_dir)
