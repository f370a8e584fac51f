"""The job's lines of the time section: memory per device (one device, and under --parallel), the layout's step and
throughput, its collectives; what does not fit is said first (`lead`), the rest after the step (`lines`)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .performance import GpuBaselinePart, MemoryPart, ParallelPart, PerformancePart
from .time import SEPARATOR, TimeSection, us_text

Gettext = Callable[[str], str]


def _gib(value: float | None) -> str:
    """12.55 -> '12.6 GiB'; 0.0625 -> '64.0 MiB'."""
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:,.1f} GiB"
    return f"{value * 1024:,.1f} MiB" if value * 1024 >= 1 else f"{value * 1024 ** 2:,.1f} KiB"


def _parts(memory: MemoryPart, _: Gettext) -> str:
    return _(SEPARATOR).join(f"{part} {_gib(gib)}" for part, gib in memory.breakdown.items())


def memory_line(memory: MemoryPart, where: str, _: Gettext) -> str:
    """'Does not fit one device: 100.4 GiB against 64.0 GiB of HBM (weights 12.6, ...)' and its fitting forms."""
    values = {"where": where, "need": _gib(memory.per_device_gib), "hbm": _gib(memory.hbm_gib),
              "parts": _parts(memory, _)}
    if memory.fits is False:
        return _("Does not fit %(where)s: %(need)s per device against %(hbm)s of HBM (%(parts)s)") % values
    if memory.fits is None:
        return _("Memory %(where)s: %(need)s per device (%(parts)s); no HBM figure for this product") % values
    return _("Memory %(where)s: %(need)s per device of %(hbm)s of HBM (%(parts)s)") % values


def _bytes(value: float) -> str:
    return f"{value / 1024 ** 2:,.1f} MiB" if value >= 1024 ** 2 else f"{value / 1024:,.1f} KiB"


def parallel_lines(job: ParallelPart, _: Gettext) -> list[str]:
    """The layout's step, throughput and collectives (the memory line apart: `job_lines` places it)."""
    layout = ",".join([f"tp={job.tp}", f"pp={job.pp}", f"dp={job.dp}"]
                      + [f"{name}={size}" for name, size in (("ep", job.ep), ("cp", job.cp)) if size != 1]
                      + ([f"zero={job.zero}"] if job.zero else [])
                      + (["sp"] if job.sp else []))
    head = _("Layout %(layout)s on %(devices)d devices, %(mb)d micro-batches per replica (global batch "
             "%(gbs)d)") % {"layout": layout, "devices": job.devices, "mb": job.micro_batches,
                            "gbs": job.global_batch or 0}
    if job.step_us is None:
        return [head]
    lines = [head + ": " + _("step %(step)s (compute %(compute)s, exposed communication %(comm)s, bubble "
                             "%(bubble)s)") % {"step": us_text(job.step_us), "compute": us_text(job.compute_us),
                                               "comm": us_text(job.comm_us), "bubble": us_text(job.bubble_us)}]
    if job.tokens_per_s_per_device is not None:
        rate = f"{job.tokens_per_s_per_device:,.0f}"
        lines.append(_("Throughput: %(rate)s tokens/s per device") % {"rate": rate})
    elif job.samples_per_s_per_device is not None:
        rate = f"{job.samples_per_s_per_device:,.2f}"
        lines.append(_("Throughput: %(rate)s samples/s per device") % {"rate": rate})
    for c in job.collectives:
        lines.append(_("%(kind)s over %(group)d (%(tier)s): %(calls)d x %(size)s, %(us)s (exposed %(exposed)s)") % {
            "kind": c.kind, "group": c.group, "tier": c.tier, "calls": c.calls, "size": _bytes(c.bytes),
            "us": us_text(c.us), "exposed": us_text(c.exposed_us)})
    return lines + list(job.notes)


def job_lines(perf: PerformancePart, _: Gettext) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(lines said before the step: what does not fit; lines after it: memory that fits, the layout's step)."""
    lead: list[str] = []
    after: list[str] = []
    step, eager = perf.step_us, perf.eager_step_us
    if step is not None and eager is not None and eager > step + 0.05:
        after.append(_("Eager mode is host-bound: dispatching the kernels takes %(host)s of host time against the "
                       "device's work, so the step takes %(eager)s; capturing it as a graph would save up to "
                       "%(saved)s (dispatch cost assumed)") % {"host": us_text(perf.host_us),
                                                               "eager": us_text(eager), "saved": us_text(eager - step)})
    memory = perf.memory
    if memory:
        (lead if memory.fits is False else after).append(memory_line(memory, _("on one device"), _))
    job = perf.parallel
    if job:
        where = _("under the layout")
        (lead if job.memory.fits is False else after).append(memory_line(job.memory, where, _))
        after += parallel_lines(job, _)
    pair = perf.two_dies
    if pair:
        after.append(_("One device is two dies: the step split over them (tp=2 over %(tier)s) takes %(step)s per "
                       "device, %(comm)s of it communication") % {"tier": pair.tier or "-",
                                                                  "step": us_text(pair.step_us),
                                                                  "comm": us_text(pair.comm_us)})
    base = perf.gpu_baseline
    if base:
        after.append(gpu_line(base, _))
    return tuple(lead), tuple(after)


def gpu_line(base: GpuBaselinePart, _: Gettext) -> str:
    """'On H100 SXM5 (datasheet figures, the same method): 119.2 us; the NPU takes 2.50x as long; 20 NPUs match 8
    GPUs'."""
    text = _("On %(gpu)s (datasheet figures, the same method): %(step)s; the NPU takes %(ratio).2fx as long") % {
        "gpu": base.label, "step": us_text(base.step_us), "ratio": base.ratio}
    if base.matching_npus:
        text += _("; %(npus)d NPUs match %(gpus)d GPUs") % {"npus": base.matching_npus, "gpus": base.match_gpus}
    return text


def with_job(section: TimeSection | None, perf: PerformancePart | None, _: Gettext) -> TimeSection | None:
    """The time section with the job's lines (memory per device, the layout)."""
    if section is None or perf is None:
        return section
    lead, after = job_lines(perf, _)
    return replace(section, lead=lead, job=after)
