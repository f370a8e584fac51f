"""trace_model: try the capture methods in order, on the meta device first and then on the CPU, recording every
attempt and why it failed."""
from __future__ import annotations

import gc
import time
from collections.abc import Callable

from ..errors import InternalError, TraceError
from ..load import LoadedModel, describe_error, on_device
from ..machine import physical_memory
from ..messages import N_
from ..records import Capture, CaptureAttempt
from .blame import is_internal, is_meta_problem, meta_failure
from .drive import driven
from .methods import capture_methods
from .nodes import NodeFailure
from .reach import ReachRecord, record_reach
from .registrations import registrations
from .registry import Skipped, no_progress
from .train import TrainOptions
from .upcast import upcast_note, upcast_refused
from .witness import Witness, witnessing

# The CPU fallback allocates real weights: it is refused when they would take more than this share of the
# machine's memory (activations and the interpreter need the rest).
CPU_FALLBACK_MEMORY_SHARE = 0.5


def _check_fits_in_memory(loaded: LoadedModel, why: BaseException | None) -> None:
    """Refuse the CPU fallback for a model whose weights would not fit, instead of running the machine out of memory."""
    needed = sum(p.numel() * p.element_size() for p in loaded.module.parameters()) + \
        sum(b.numel() * b.element_size() for b in loaded.module.buffers())
    available = physical_memory()
    if not available:  # the platform does not say: let the allocation decide
        return
    if needed > CPU_FALLBACK_MEMORY_SHARE * available:
        raise TraceError(
            f"{loaded.info.source}: forward() of {loaded.info.class_name} does not run on the meta device "
            f"({_meta_reason(why)}), and the CPU fallback would need {needed / 2**30:.1f} GiB of real weights on a "
            f"machine with {available / 2**30:.1f} GiB: make forward() run on meta (no .item(), no data-dependent "
            "Python control flow) or scan a smaller configuration")


def trace_model(loaded: LoadedModel, methods: tuple[str, ...] | None = None,
                progress: Callable[[str], None] | None = None, train: TrainOptions | None = None,
                drive: bool = True) -> Capture:
    """Capture the model's operators by the first method in `methods` that works (meta device first, then CPU).

    methods=None picks the order by model size (capture_order). With `train`, the methods are the training step's
    (trace/train: forward, backward and optimizer step), the same ladder as the forward: plain, then with
    is_compiling() true (meta only), before the CPU. What differs between the steps is said by each method's
    attributes (eager, reported_as, step, note), not here. `drive`: the data-dependent branches a random-weight run
    skips are driven (trace/drive.py: detector thresholds at 0, every MoE expert routed)."""
    capturers = capture_methods(loaded.info.parameters, methods, train)
    attempts: list[CaptureAttempt] = []
    device_note = None
    current = loaded
    forward_error: BaseException | None = None
    internal_error: BaseException | None = None
    baseline = _dispatch_state()
    for device in (loaded.device, "cpu") if loaded.device != "cpu" else ("cpu",):
        if device != current.device:
            _check_fits_in_memory(loaded, forward_error)
            device_note = _device_note(loaded.device, forward_error)
            current = on_device(loaded, device)
        forward_error = None
        for capturer in capturers:
            method = capturer.name
            if progress:
                progress(f"capturing with {method} on {device}")
            _restore_dispatch_state(baseline, attempts)
            started = time.perf_counter()
            witness, reach, drove = Witness(), ReachRecord(), []
            try:
                upcast: dict[str, str] = {}
                refused: set[str] = set()
                with _standins(current, device), _upcast(device, upcast, refused), \
                        driven(current.module, drive) as drove, record_reach() as reach, \
                        witnessing(witness, current.module, method.startswith("dispatch")):
                    nodes, edges = capturer.capture(current, progress or no_progress)
            except Skipped as exc:
                attempts.append(CaptureAttempt(method, str(exc), 0.0))
                continue
            except (Exception, SystemExit) as exc:  # every failure is recorded; the next method gets its chance
                _check_forward(loaded, witness, reach)
                internal = isinstance(exc, Exception) and is_internal(exc)
                attempts.append(CaptureAttempt(f"{method}@{device}" if device != loaded.device else method,
                                               ("internal error: " if internal else "") + _first_line(exc),
                                               time.perf_counter() - started))
                if internal:  # opassess's own hook failed: the model is not to blame, another method may work
                    internal_error = internal_error or exc
                    continue
                # the plain eager forward's error explains best why a model does not run on this device
                if capturer.eager or (forward_error is None and
                                      (method.startswith("dispatch") or isinstance(exc, NodeFailure))):
                    forward_error = exc
                if capturer.eager and not is_meta_problem(exc):
                    break  # the eager forward itself fails: no other capture can succeed on this device
                continue
            _check_forward(loaded, witness, reach)
            nodes = [*nodes, *witness.unrecorded(nodes)]  # what the model called outside the recorder
            attempts.append(CaptureAttempt(f"{method}@{device}" if device != loaded.device else method, None,
                                           time.perf_counter() - started))
            types = {name: type(m).__name__ for name, m in current.module.named_modules()}
            return Capture(method=capturer.reported_as or method, device=device,
                           device_note="\n".join(n for n in (device_note, upcast_note(upcast)) if n) or None,
                           attempts=tuple(attempts),
                           nodes=tuple(nodes), edges=tuple(edges), module_types=types,
                           step=capturer.step, step_note=capturer.note,
                           stand_ins=current.standins.records() if current.standins is not None else (),
                           registrations=registrations(nodes), reach=reach.functions, driven=tuple(drove),
                           refused=tuple(sorted(refused)))
        if forward_error is None or not is_meta_problem(forward_error):
            break
    where = f"{loaded.info.source}: forward() of {loaded.info.class_name}"
    if internal_error is not None and (forward_error is None or is_meta_problem(forward_error)):
        text = (str(internal_error).strip().splitlines() or [""])[0]  # torch.fx appends its own traceback
        raise InternalError(f"{where} could not be captured: a capture hook of opassess raised "
                            f"{type(internal_error).__name__}: {text} (a bug in opassess, not in the model)"
                            ) from internal_error
    cause = forward_error or (attempts[-1].error if attempts else "no capture method")
    if isinstance(cause, BaseException):
        raise TraceError(f"{where} raised {_first_line(cause)}") from cause
    raise TraceError(f"{where} could not be captured: {cause}")


def _check_forward(loaded: LoadedModel, witness: Witness, reach: ReachRecord) -> None:
    """A forward that removed the capture's hooks or modes, or ran model code in a thread of its own, fails the
    capture with one line: what was recorded is not what the model runs."""
    where = f"{loaded.info.source}: forward() of {loaded.info.class_name}"
    if witness.tampered:
        raise TraceError(f"{where} removed opassess's capture hooks ({witness.tampered}): its operators cannot be "
                         "recorded; run the assessment on a forward that leaves torch's global hooks and modes alone")
    if reach.threads:
        name, what = next(iter(reach.threads.items()))
        raise TraceError(f"{where} ran model code in thread {name!r} ({what}): the capture records the forward's own "
                         "thread only, so that thread's operators are not seen; run them in the forward's thread to "
                         "assess them")


# Guards that put torch's dispatcher key sets back as they were before a failed attempt; kept alive for the
# process's life because a guard's destructor would restore the leaked sets it replaced.
_RESTORED: list = []


def _dispatch_state() -> tuple:
    import torch

    return torch._C._dispatch_tls_local_include_set(), torch._C._dispatch_tls_local_exclude_set()


def _restore_dispatch_state(baseline: tuple, attempts: list[CaptureAttempt]) -> None:
    """torch's thread-local dispatch key sets back to what they were before the first attempt. A failure can leave
    guards of torch's that are destroyed out of order when its traceback goes: torch.export on a torch.library op
    whose Python body reads a value ends in a RecursionError that leaves Python, Functionalize and 25 more keys
    excluded, and every later attempt then recorded no ATen op at all (nn.Linear direct with 0 FLOPs and no kernel
    evidence, captured 'successfully' on the CPU)."""
    import torch

    if attempts and attempts[-1].error is not None:
        gc.collect()  # the failed attempt's frames (and the guards they hold) go now, not during the next attempt
    if _dispatch_state() != baseline:
        guard = torch._C._ForceDispatchKeyGuard(*baseline)
        guard.__enter__()
        _RESTORED.append(guard)


def _standins(loaded: LoadedModel, device: str):
    """The load stage's stand-ins (GPU-only libraries, CUDA devices), installed again while the model runs."""
    import contextlib

    return loaded.standins.active(device) if loaded.standins is not None else contextlib.nullcontext()


def _upcast(device: str, ops: dict[str, str], everywhere: set[str]):
    """On the CPU: ops the CPU refuses in half precision run in float32 (trace/upcast.py), collected in `ops`; those
    the meta kernel refuses too in `everywhere`."""
    import contextlib

    return upcast_refused(ops, everywhere) if device == "cpu" else contextlib.nullcontext()


def _first_line(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    if isinstance(exc, NodeFailure):
        return str(exc).splitlines()[0]
    return describe_error(exc)


# Why the CPU was used. The worker sends it as English; the reports read it back as one of these message ids
# (messages.parsed) and say it in the reader's language, torch's error quoted as it is. A note of the CPU's
# half-precision stand-in (trace/upcast.py) follows on a line of its own.
DEVICE_NOTES = (
    N_("the model does not run on the %(device)s device (the meta kernel of %(op)s raised %(error)s; the CPU kernel "
       "is the judge); it was built and run on the CPU with real weights"),
    N_("the model does not run on the %(device)s device (%(error)s); it was built and run on the CPU with real "
       "weights"))


def _device_note(device: str, exc: BaseException | None) -> str:
    """'the model does not run on the meta device (...); it was built and run on the CPU with real weights'."""
    found = meta_failure(exc)
    if found is None:
        return DEVICE_NOTES[1] % {"device": device, "error": _first_line(exc)}
    return DEVICE_NOTES[0] % {"device": device, "op": found[0], "error": _first_line(found[1])}


def _meta_reason(exc: BaseException | None) -> str:
    """Why the model did not run on meta, naming the ATen op whose meta kernel refused it when one did."""
    found = meta_failure(exc)
    if found is None:
        return _first_line(exc)
    op, raised = found
    return f"the meta kernel of {op} raised {_first_line(raised)}; the CPU kernel is the judge"
