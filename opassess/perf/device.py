"""Device profiles: what the time model knows of one Ascend product (peaks per unit and dtype, HBM bandwidth,
efficiencies, launch costs, host link), read from the knowledge base and optionally overridden by an overlay file.

Sources: opassess/data/kb/devices.json (tools/kb_devices.py, from ascend_hw_figures.tsv: modelled values of Huawei's
msModeling TensorCast, every value citing its table line and column) and opassess/data/time_model.toml (the
assumptions no table gives: host link, CPU fallback throughput, penalty factors).

Overlay (`--device-profile FILE.toml`, docs/cost-and-time.md; written by hand or by `opassess calibrate
--profile-data`): every key optional,
read strictly (an unknown key is one error naming the file and the key).

    product = "Atlas A2"            # the product it calibrates; a scan of another product refuses it
    variant = "ATLAS_800_A2_313T_64G"  # start from this variant of the product instead of its default
    source = "msprof run of 2026-11-30, 8 steps"   # shown in reports next to every time
    [memory]
    efficiency = 0.55               # share of the HBM bandwidth reached
    bandwidth_gb_per_s = 1600.0     # HBM bandwidth in 1e9 B/s (note: the table's own figures are x 1024^4)
    [cube]                          # also [vector] and [aicpu]
    efficiency = 0.62               # share of the peak reached
    launch_us = 6.0                 # fixed cost per kernel launch
    peak_tflops = { bfloat16 = 353.9 }   # peak per dtype in 1e12 FLOP/s
    [shapes.large]                  # also skinny, small, medium: a cube matmul class's efficiencies (model.shape_class)
    cube = 0.85                     # share of the cube peak a call of the class reaches
    memory = 0.6                    # share of the HBM bandwidth it reaches
    [host]
    link_gb_per_s = 25.0            # host <-> device copies (1e9 B/s)
    cpu_gflops = 100.0
    cpu_gb_per_s = 20.0
    sync_us = 50.0
    dispatch_us = 20.0              # host time to dispatch one kernel in eager mode
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import NotRequired, TypedDict

from ..datafile import TomlTable
from ..errors import ConfigError, KnowledgeBaseError
from ..kb.store import KnowledgeBase, generated_table
from ..resources import data_path

DEVICES = "devices.json"
SHAPES = "cube_shapes.json"  # measured efficiencies per matmul shape class (tools/kb_gemm.py)
SHAPE_CLASSES = ("skinny", "small", "medium", "large")
ASSUMPTIONS = "time_model.toml"
COMPUTE_UNITS = ("cube", "vector", "aicpu")  # units with an efficiency in a profile
GIGA, TERA = 1e9, 1e12


class NoDeviceProfile(KnowledgeBaseError):
    """The tables give no figures for the product: no time model (reported as data, not raised to the user)."""


@dataclass(frozen=True)
class HostLink:
    """How a CPU fallback costs: the host link and the CPU's own throughput (assumptions, time_model.toml)."""

    link: float  # B/s, each direction
    cpu_flops: float  # FLOP/s
    cpu_bandwidth: float  # B/s
    sync_us: float
    dispatch_us: float = 20.0  # host time to dispatch one kernel in eager mode (time_model.toml [host])


@dataclass(frozen=True)
class Penalties:
    """Penalty assumptions of time_model.toml [penalties]."""

    online_compile_us: float
    unaligned_cube_factor: float
    unaligned_attention_factor: float
    cube_inner_align: int
    attention_align: int
    transdata_copies: float


@dataclass(frozen=True)
class ShapeBounds:
    """time_model.toml [cube_shapes]: where a cube matmul's shape classes begin (model.shape_class)."""

    skinny_below: int = 128
    medium_from: int = 2048
    large_from: int = 4096


@dataclass(frozen=True)
class DeviceProfile:
    """One product's device figures as the time model uses them; `cite` says where each came from."""

    product: str  # "Atlas A2"
    variant: str  # "ATLAS_800_A2_376T_64G"
    label: str  # "Atlas A2 (800 A2)"
    peaks: Mapping[str, Mapping[str, float]]  # unit ("cube", "vector") -> dtype -> FLOP/s (dense)
    hbm_bandwidth: float  # B/s
    hbm_bytes: float
    efficiency: Mapping[str, float]  # unit -> share of peak reached ("cube", "vector", "aicpu")
    memory_efficiency: float  # share of hbm_bandwidth reached
    launch_us: Mapping[str, float]  # unit -> fixed cost per launch ("cube", "vector", "aicpu", "communication")
    host: HostLink
    penalties: Penalties
    cite: Mapping[str, str]  # "peak.cube.bfloat16" -> "ascend_hw_figures.tsv:4:peak"; assumptions -> the toml key
    notes: tuple[str, ...] = ()  # derived values, assumptions, the product note
    overlay: str | None = None  # the overlay file applied, with its `source` text
    # a calibration's "cube.flops" -> per-call (min, max) it was fitted on ([fitted] in the overlay): a scan's calls
    # outside them are an extrapolation
    fitted_sizes: Mapping[str, tuple[float, float]] = field(default_factory=lambda: MappingProxyType({}))
    # a cube matmul's shape class -> {"cube": efficiency, "memory": efficiency} measured for it (cube_shapes.json, or
    # the overlay's [shapes.X]); a class absent keeps the flat efficiencies
    shapes: Mapping[str, Mapping[str, float]] = field(default_factory=lambda: MappingProxyType({}))
    shape_bounds: ShapeBounds = ShapeBounds()

    @property
    def published_shapes(self) -> bool:
        """Whether a shape class's efficiency comes from the published measurements (cube_shapes.json), not only from
        an overlay's [shapes.X]."""
        return any(k.startswith("shapes.") and v.startswith(SHAPES) for k, v in self.cite.items())

    def peak(self, unit: str, dtype: str | None) -> tuple[float, str]:
        """(FLOP/s, dtype used) of `unit` for `dtype`; a dtype the table does not list uses the unit's float32 peak
        (int64 and friends run as 32-bit work at best), else its lowest listed peak."""
        table = self.peaks.get(unit) or {}
        if dtype is not None and dtype in table:
            return table[dtype], dtype
        if "float32" in table:
            return table["float32"], "float32"
        if not table:
            raise KnowledgeBaseError(f"{self.variant}: no peak for unit {unit!r}")
        name = min(table, key=table.__getitem__)
        return table[name], name


class DeviceProduct(TypedDict):
    """devices.json `products`: one product of products.toml, with the variants the tables give figures for."""

    note: str | None  # why there is no profile, or how the default was chosen
    variant: str | None  # the default variant; None: no published figures
    variants: list[str]


class DeviceVariant(TypedDict):
    """devices.json `variants`: one device's figures (tools/kb_devices.py writes them from the fact tables)."""

    product: str
    label: str
    source: str  # where the figures come from (repository, file, commit)
    peaks: dict[str, dict[str, float]]  # unit -> dtype -> FLOP/s
    hbm_bandwidth: float  # B/s
    hbm_bytes: float
    compute_eff: float
    memory_eff: float
    launch_us: dict[str, float]  # unit -> us per launch
    cite: dict[str, str]  # figure -> "table:row:column"
    modes: NotRequired[dict[str, str]]  # "cube.float32" -> "HF32": the mode a peak is measured in
    assumptions: NotRequired[list[str]]
    derived: NotRequired[str | None]


class DeviceTable(TypedDict):
    """devices.json (generated; a knowledge-base folder may carry its own)."""

    products: dict[str, DeviceProduct]
    variants: dict[str, DeviceVariant]


def device_table(kb: KnowledgeBase | None = None) -> DeviceTable:
    """devices.json of the knowledge base in use (its folder's, else the shipped one)."""
    return generated_table(kb, DEVICES, "device-profile table")


def shape_table(kb: KnowledgeBase | None = None) -> dict:
    """cube_shapes.json of the knowledge base in use (its folder's, else the shipped one)."""
    return generated_table(kb, SHAPES, "shape-class efficiency table")


def _measured_shapes(name: str, kb: KnowledgeBase | None) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """(class -> side -> efficiency, citations) the measurements give variant `name`."""
    classes = shape_table(kb)["variants"].get(name, {})
    shapes = {k: {side: float(v["efficiency"]) for side, v in sides.items()} for k, sides in classes.items()}
    cite = {f"shapes.{k}.{side}": f"{SHAPES}: median of gemm_measurements.tsv lines "
            f"{', '.join(str(line) for line in v['lines'])}"
            for k, sides in classes.items() for side, v in sides.items()}
    return shapes, cite


@dataclass(frozen=True)
class MemoryAssumptions:
    """time_model.toml [memory] and [parallel]: what memory per device counts beyond the capture (perf/memory.py),
    how data-parallel gradients are bucketed (perf/parallel.py)."""

    optimizer_states: Mapping[str, int]  # optimizer class name -> states kept per parameter
    default_states: int
    state_bytes: float
    master_bytes: float
    replicated_activation_share: float  # of a tensor-parallel layer's activations, kept whole without sp
    bucket_params: float  # [parallel]: parameters per data-parallel gradient bucket


@cache
def _read_assumptions(path: Path) -> tuple[HostLink, Penalties, MemoryAssumptions, ShapeBounds]:
    root = TomlTable.of_file(path, "time-model assumptions", ConfigError)
    host = root.table("host")
    link = HostLink(host.number("link_gb_per_s") * GIGA, host.number("cpu_gflops") * GIGA,
                    host.number("cpu_gb_per_s") * GIGA, host.number("sync_us"), host.number("dispatch_us"))
    host.finish()
    shapes = root.table("cube_shapes")
    bounds = ShapeBounds(shapes.integer("skinny_below"), shapes.integer("medium_from"), shapes.integer("large_from"))
    shapes.finish()
    pen = root.table("penalties")
    penalties = Penalties(pen.number("online_compile_us"), pen.number("unaligned_cube_factor"),
                          pen.number("unaligned_attention_factor"), pen.integer("cube_inner_align"),
                          pen.integer("attention_align"), pen.number("transdata_copies"))
    pen.finish()
    mem = root.table("memory")
    par = root.table("parallel")
    memory = MemoryAssumptions(
        MappingProxyType({k: int(v) for k, v in mem.number_table("optimizer_states").items()}),
        mem.integer("default_states"), mem.number("state_bytes"), mem.number("master_bytes"),
        mem.number("replicated_activation_share", maximum=1.0), par.number("bucket_params"))
    mem.finish()
    par.finish()
    root.finish()
    if link.link <= 0 or link.cpu_flops <= 0 or link.cpu_bandwidth <= 0:
        raise ConfigError(f"{path}: host: link and CPU throughput must be above 0")
    return link, penalties, memory, bounds


def shape_bounds() -> ShapeBounds:
    """The shipped shape-class boundaries (time_model.toml [cube_shapes])."""
    return _read_assumptions(data_path(ASSUMPTIONS))[3]


def assumptions() -> tuple[HostLink, Penalties]:
    """The shipped time-model assumptions (time_model.toml)."""
    host, penalties, _memory, _bounds = _read_assumptions(data_path(ASSUMPTIONS))
    return host, penalties


def memory_assumptions() -> MemoryAssumptions:
    """The shipped memory assumptions (time_model.toml [memory])."""
    return _read_assumptions(data_path(ASSUMPTIONS))[2]


def _variant(table: DeviceTable, name: str, product: str, kb: KnowledgeBase | None = None) -> DeviceProfile:
    entry = table["variants"].get(name)
    if entry is None:
        raise KnowledgeBaseError(f"{DEVICES}: no device variant {name!r}")
    if entry["product"] != product:
        raise KnowledgeBaseError(f"device variant {name} is a {entry['product']} profile, not {product}")
    host, penalties = assumptions()
    eff = float(entry["compute_eff"])
    cite = dict(entry["cite"])
    for unit in COMPUTE_UNITS:
        cite.setdefault(f"efficiency.{unit}", entry["cite"]["compute_eff"])
    cite["launch.aicpu"] = "assumption: AI CPU launch taken as the vector launch (no table gives it)"
    cite["host"] = f"{ASSUMPTIONS} [host] (assumption: no table gives a host link)"
    notes = [*entry.get("assumptions", ())]
    if entry.get("derived"):
        notes.append(f"derived: {entry['derived']}")
    known = table["products"].get(product)
    note = known.get("note") if known is not None else None
    if note:
        notes.append(note)
    launch = {**entry["launch_us"], "aicpu": entry["launch_us"]["vector"]}
    shapes, shape_cite = _measured_shapes(name, kb)
    cite.update(shape_cite)
    return DeviceProfile(
        product=product, variant=name, label=entry["label"],
        peaks=MappingProxyType({u: MappingProxyType(dict(p)) for u, p in entry["peaks"].items()}),
        hbm_bandwidth=float(entry["hbm_bandwidth"]), hbm_bytes=float(entry["hbm_bytes"]),
        efficiency=MappingProxyType({u: eff for u in COMPUTE_UNITS}), memory_efficiency=float(entry["memory_eff"]),
        launch_us=MappingProxyType(launch), host=host, penalties=penalties, cite=MappingProxyType(cite),
        notes=tuple(notes), shapes=MappingProxyType({k: MappingProxyType(v) for k, v in shapes.items()}),
        shape_bounds=shape_bounds())


def product_note(product: str, kb: KnowledgeBase | None = None) -> str | None:
    """The device table's note on `product` (why there is no profile, or how the profile was chosen)."""
    known = device_table(kb)["products"].get(product)
    return known.get("note") if known is not None else None


def load_profile(product: str, kb: KnowledgeBase | None = None, overlay: Path | None = None,
                 variant: str | None = None) -> DeviceProfile:
    """The device profile of `product` (a name of products.toml): its default variant, or `variant`, with the
    overlay file applied. NoDeviceProfile when the tables give no figures for the product."""
    table = device_table(kb)
    entry = table["products"].get(product)
    if entry is None:
        raise KnowledgeBaseError(f"{DEVICES}: unknown product {product!r}")
    over = _read_overlay(overlay) if overlay is not None else None
    name = variant or (over.string("variant", None) if over is not None else None) or entry["variant"]
    if name is None:
        raise NoDeviceProfile(entry["note"])
    profile = _variant(table, name, product, kb)
    return apply_overlay(profile, over, overlay) if over is not None and overlay is not None else profile


def variant_profile(name: str, kb: KnowledgeBase | None = None) -> DeviceProfile:
    """A profile by its variant name (ATLAS_800_A3_752T_128G_DEVICE), for `kb show device`."""
    table = device_table(kb)
    entry = table["variants"].get(name)
    if entry is None:
        raise KnowledgeBaseError(f"no device variant {name!r} (known: {', '.join(sorted(table['variants']))})")
    return _variant(table, name, entry["product"], kb)


def _read_overlay(path: Path) -> TomlTable:
    return TomlTable.of_file(Path(path), "device-profile overlay", ConfigError)


def apply_overlay(profile: DeviceProfile, root: TomlTable, path: Path | str) -> DeviceProfile:
    """`profile` with the overlay's values in place of the table's (each cited to the overlay file)."""
    product = root.string("product", None)
    if product is not None and product != profile.product:
        raise ConfigError(f"{path}: product: the overlay calibrates {product!r}, the scan targets {profile.product!r}")
    root.string("variant", None)  # read by load_profile
    source = root.string("source", "")
    cite, where = dict(profile.cite), f"overlay {path}"
    peaks = {u: dict(p) for u, p in profile.peaks.items()}
    efficiency, launch = dict(profile.efficiency), dict(profile.launch_us)
    for unit in COMPUTE_UNITS:
        table = root.table(unit, {})
        if "efficiency" in table:
            efficiency[unit] = table.number("efficiency", maximum=1.0)
            cite[f"efficiency.{unit}"] = where
        if "launch_us" in table:
            launch[unit] = table.number("launch_us")
            cite[f"launch.{unit}"] = where
        if "peak_tflops" in table:
            for dtype, value in table.number_table("peak_tflops").items():
                peaks.setdefault(unit, {})[dtype] = value * TERA
                cite[f"peak.{unit}.{dtype}"] = where
        table.finish()
    # a flat efficiency the overlay calibrates replaces the table's measured shape classes on that side (the team's
    # own measurement outranks the published ones); [shapes.X] then sets a class of its own
    calibrated = {side for side, table in (("cube", root.table("cube", {})), ("memory", root.table("memory", {})))
                  if "efficiency" in table}
    shapes = {k: {side: e for side, e in v.items() if side not in calibrated} for k, v in profile.shapes.items()}
    shapes = {k: v for k, v in shapes.items() if v}
    shape_tables = root.table("shapes", {})
    for klass in shape_tables.keys():
        if klass not in SHAPE_CLASSES:
            raise ConfigError(f"{path}: shapes.{klass}: unknown shape class (known: {', '.join(SHAPE_CLASSES)})")
        table = shape_tables.table(klass)
        for side in ("cube", "memory"):
            if side in table:
                shapes.setdefault(klass, {})[side] = table.number(side, maximum=1.0)
                cite[f"shapes.{klass}.{side}"] = where
        table.finish()
    shape_tables.finish()
    memory = root.table("memory", {})
    mem_eff = memory.number("efficiency", profile.memory_efficiency, maximum=1.0)
    bandwidth = memory.number("bandwidth_gb_per_s", None)
    if "efficiency" in memory:
        cite["memory_eff"] = where
    if bandwidth is not None:
        cite["hbm_bandwidth"] = where
    memory.finish()
    host_table = root.table("host", {})
    old = profile.host
    host = HostLink(host_table.number("link_gb_per_s", old.link / GIGA) * GIGA,
                    host_table.number("cpu_gflops", old.cpu_flops / GIGA) * GIGA,
                    host_table.number("cpu_gb_per_s", old.cpu_bandwidth / GIGA) * GIGA,
                    host_table.number("sync_us", old.sync_us),
                    host_table.number("dispatch_us", old.dispatch_us))
    if host_table.keys():
        cite["host"] = where
    host_table.finish()
    fitted_table = root.table("fitted", {})
    sizes = {}
    for key in fitted_table.keys():
        bounds = fitted_table.numbers(key)
        if len(bounds) != 2:
            raise ConfigError(f"{path}: fitted.{key}: expected [min, max] per call")
        sizes[key.replace("_", ".", 1)] = (float(bounds[0]), float(bounds[1]))
    fitted_table.finish()
    root.finish()
    if bandwidth is not None and bandwidth <= 0 or host.link <= 0 or host.cpu_flops <= 0 or host.cpu_bandwidth <= 0:
        raise ConfigError(f"{path}: bandwidths and throughputs must be above 0")
    if any(v <= 0 for v in [*efficiency.values(), mem_eff, *(e for v in shapes.values() for e in v.values())]):
        raise ConfigError(f"{path}: efficiencies must be above 0")
    return replace(profile, peaks=MappingProxyType({u: MappingProxyType(p) for u, p in peaks.items()}),
                   hbm_bandwidth=bandwidth * GIGA if bandwidth is not None else profile.hbm_bandwidth,
                   efficiency=MappingProxyType(efficiency), memory_efficiency=mem_eff,
                   launch_us=MappingProxyType(launch), host=host, cite=MappingProxyType(cite),
                   overlay=f"{path}" + (f" ({source})" if source else ""), fitted_sizes=MappingProxyType(sizes),
                   shapes=MappingProxyType({k: MappingProxyType(v) for k, v in shapes.items()}))
