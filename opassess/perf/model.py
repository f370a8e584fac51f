"""The time of one call on the device, as pure arithmetic over what the capture recorded and a device profile.

Roofline (the latency model of Huawei's msModeling TensorCast):
    compute_us = FLOPs / (peak[unit][dtype] x efficiency[unit])
    memory_us  = bytes moved / (HBM bandwidth x memory efficiency)
    (a cube matmul of a shape class the profile has measurements for takes that class's efficiencies instead:
    shape_class below, DeviceProfile.shapes)
    roofline   = max(compute_us, memory_us) + launches x launch_us[unit]
Worked example: a bf16 (4096 x 4096) @ (4096 x 4096) matmul on Atlas A2 (353.9 TFLOPS, eff 0.7): 1.374e11 FLOPs /
2.477e14 FLOP/s = 554.8 us; bytes 3 x 32 MiB = 1.006e8 / (1.6 x 1024^4 x 0.6 B/s) = 95.4 us; + 5 us launch = 559.8 us
(with its shape recorded it is a `large` call: the measured 0.846 makes it 1.374e11 / 2.994e14 = 459.0 + 5 = 464.0 us).

Penalties, each added over the roofline and so counted as time at risk (`Penalty.why` names the fact):
    cpu-fallback     no NPU kernel: inputs and outputs cross the host link, the CPU does the work, a host sync
    online-compile   an aclop-only kernel fed dynamic shapes compiles online (assumed cost per call)
    host-sync        .item() / .tolist() / bool(tensor) drain the device queue (assumed cost)
    transdata        a layout conversion between compute ops is a TransData copy (tensor read and written)
    unaligned-cube   a matmul whose inner axis is not a multiple of 256 (msprof advisor) runs slower (factor assumed)
    unaligned-attention  attention whose head dim or sequence is not a multiple of 128 (msprof advisor)
    fp32-cube        a float32 matmul on the cube where bf16 / HF32 applies: the time over the bf16 roofline
    unfused          a member of a chain a fused torch_npu op replaces: its whole time (the fused op keeps the rest)
"""
from __future__ import annotations

from dataclasses import dataclass

from .device import DeviceProfile, ShapeBounds
from .records import CallTime, Penalty

US = 1e6


@dataclass(frozen=True)
class CallWork:
    """What the time model needs of one call (perf/inputs.py builds these from the capture)."""

    node: str
    op: str
    unit: str  # the NPU unit that runs it: "cube" | "vector" | "aicpu" | "none" (a view or host op: no kernel)
    dtype: str | None  # the compute dtype (first floating input)
    flops: float
    bytes: float  # read + written
    launches: int = 1
    fallback: bool = False  # no NPU kernel: runs on the host (torch_npu's CPU fallback or the project's CPU code)
    pending: str | None = None  # with fallback: the port it waits for when the kernel exists (a binding to write)
    matmul: bool = False  # a cube matmul (not a convolution): HF32 is off by default for it
    inner_axes: tuple[int, ...] = ()  # cube: contracted sizes checked against the 256 alignment
    attention_axes: tuple[int, ...] = ()  # attention: head dim and sequence lengths checked against 128
    flags: frozenset[str] = frozenset()  # "host-sync", "online-compile", "transdata", "unfused"
    gemm: tuple[int, int, int] | None = None  # a matmul's (m, n, k): C[m,n] = A[m,k] B[k,n], batches folded into m


def shape_class(m: int, n: int, k: int, bounds: ShapeBounds) -> str:
    """The shape class of a matmul (time_model.toml [cube_shapes]): skinny when m or n is below the bound, else by
    the side s of the square matmul of equal work (s^3 = m n k). 16 x 4096 x 4096 is skinny; 4096^3 is large;
    16384 x 512 x 4096 (s = 3251) is medium."""
    if min(m, n) < bounds.skinny_below:
        return "skinny"
    side = (m * n * k) ** (1 / 3)
    if side >= bounds.large_from * (1 - 1e-9):
        return "large"
    return "medium" if side >= bounds.medium_from * (1 - 1e-9) else "small"


def efficiencies(work: CallWork, profile: DeviceProfile) -> tuple[float, float, str | None]:
    """(compute efficiency, memory efficiency, shape class) of `work` on `profile`: the measured class's where the
    profile has one for a cube matmul's shape, else the unit's flat efficiency and the profile's memory efficiency."""
    compute, memory = profile.efficiency[work.unit], profile.memory_efficiency
    if work.gemm is None or not work.matmul or not profile.shapes:
        return compute, memory, None
    klass = shape_class(*work.gemm, profile.shape_bounds)
    measured = profile.shapes.get(klass, {})
    return measured.get("cube", compute), measured.get("memory", memory), klass


def roofline(work: CallWork, profile: DeviceProfile, dtype: str | None = None) -> tuple[float, float, float]:
    """(compute_us, memory_us, launch_us) of `work` on the NPU (dtype overrides the call's own)."""
    if work.unit == "none":
        return 0.0, 0.0, 0.0
    unit = "vector" if work.unit == "aicpu" and "aicpu" not in profile.peaks else work.unit
    peak, _ = profile.peak(unit, dtype or work.dtype)
    compute_eff, memory_eff, _ = efficiencies(work, profile)
    compute = work.flops / (peak * compute_eff) * US if work.flops else 0.0
    memory = work.bytes / (profile.hbm_bandwidth * memory_eff) * US if work.bytes else 0.0
    return compute, memory, work.launches * profile.launch_us[work.unit]


def _bound(compute: float, memory: float, launch: float) -> str:
    if max(compute, memory, launch) <= 0:
        return "none"
    if launch > max(compute, memory):
        return "launch"
    return "compute" if compute >= memory else "memory"


def time_call(work: CallWork, profile: DeviceProfile) -> CallTime:
    """The call's time on the device: its roofline plus the penalties its flags and shapes justify."""
    compute, memory, launch = roofline(work, profile)
    base = max(compute, memory) + launch
    bound = _bound(compute, memory, launch)
    pen = profile.penalties
    penalties: list[Penalty] = []  # added over the roofline
    carved: list[Penalty] = []  # taken out of the roofline: time the call spends that a better route would not
    if work.fallback:
        host = profile.host
        transfer = work.bytes / host.link * US  # inputs to the host and outputs back: each byte crosses once
        cpu = max(work.flops / host.cpu_flops, work.bytes / host.cpu_bandwidth) * US
        total = transfer + cpu + host.sync_us
        why = f"{work.pending}, it runs on the CPU" if work.pending else "no NPU kernel"
        penalties.append(Penalty("cpu-fallback", max(0.0, total - base),
                                 f"{why}: {transfer:.1f} us over the host link, {cpu:.1f} us on the CPU, "
                                 f"{host.sync_us:g} us host sync (host figures assumed) instead of {base:.1f} us on "
                                 f"the NPU"))
        bound = "host"
    if "host-sync" in work.flags:
        penalties.append(Penalty("host-sync", profile.host.sync_us,
                                 "the value leaves the device: the host waits for the queue to drain (cost assumed)"))
        bound = "host"
    if "online-compile" in work.flags:
        penalties.append(Penalty("online-compile", pen.online_compile_us,
                                 "aclop-only kernel fed a dynamic shape: compiled online for each new shape "
                                 "(cost assumed)"))
    if "transdata" in work.flags:
        copy = pen.transdata_copies * (work.bytes / 2) / (profile.hbm_bandwidth * profile.memory_efficiency) * US
        penalties.append(Penalty("transdata", copy + profile.launch_us["vector"],
                                 "layout conversion between compute ops: a TransData copy on the NPU"))
        bound = "memory"
    if work.unit == "cube" and not work.fallback:
        align = pen.cube_inner_align
        if work.matmul and any(a % align for a in work.inner_axes):
            penalties.append(Penalty("unaligned-cube", (pen.unaligned_cube_factor - 1) * compute,
                                     f"inner axis {'/'.join(map(str, work.inner_axes))} not a multiple of {align} "
                                     f"(msprof advisor: unaffine; slowdown factor assumed)"))
        if any(a % pen.attention_align for a in work.attention_axes):
            penalties.append(Penalty("unaligned-attention", (pen.unaligned_attention_factor - 1) * compute,
                                     f"head dim / sequence {'/'.join(map(str, work.attention_axes))} not a multiple "
                                     f"of {pen.attention_align} (msprof advisor: unaffine; slowdown factor assumed)"))
        if work.matmul and work.dtype == "float32" and "bfloat16" in profile.peaks.get("cube", {}) \
                and profile.peaks["cube"].get("float32", 0) < profile.peaks["cube"]["bfloat16"]:
            low, low_mem, _ = roofline(work, profile, "bfloat16")
            gain = max(compute, memory) - max(low, low_mem * 0.5)
            if gain > 0:
                carved.append(Penalty("fp32-cube", gain,
                                      "float32 matmul on the cube: bf16 (or allow_hf32, whose peak the tables do not "
                                      "give here) recovers at most this"))
    us = base + sum(p.us for p in penalties)
    if "unfused" in work.flags and base > 0:  # the fused op that replaces the chain keeps its anchor's time
        carved = [Penalty("unfused", base, "part of a chain one fused torch_npu op replaces")]
    penalties = [p for p in penalties if p.us > 0]
    # Carved penalties are part of the call's own time (not added to it): the roofline is what is left without them
    base -= sum(p.us for p in carved)
    penalties += carved
    return CallTime(node=work.node, op=work.op, unit="cpu-fallback" if work.fallback else work.unit, bound=bound,
                    roofline_us=base, us=us, penalties=tuple(penalties), compute_us=compute, memory_us=memory)
