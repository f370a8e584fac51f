"""`opassess kb show device PRODUCT`: one device profile as text, every figure with where it came from."""
from __future__ import annotations

from ..kb.products import UnknownProductError
from ..kb.store import KnowledgeBase
from .device import NoDeviceProfile, device_table, load_profile, variant_profile
from .interconnect import load_interconnect
from .records import ESTIMATE


def _tflops(value: float) -> str:
    return f"{value / 1e12:g} TFLOPS"


def format_device(kb: KnowledgeBase, name: str) -> str:
    """The profile of a product (name or alias) or of a variant (ATLAS_800_A3_752T_128G_DEVICE)."""
    table = device_table(kb)
    if name in table["variants"]:
        profile = variant_profile(name, kb)
    else:
        try:
            product = kb.resolve_product(name)
        except UnknownProductError as exc:
            raise UnknownProductError(f"{exc} (or a device variant: {', '.join(sorted(table['variants']))})") \
                from None
        try:
            profile = load_profile(product, kb)
        except NoDeviceProfile as exc:
            return f"{product}: {exc}"
    entry = table["variants"][profile.variant]
    cite = profile.cite
    lines = [f"{profile.product}: device profile {profile.variant} ({profile.label})",
             f"  {ESTIMATE}"]
    for unit in ("cube", "vector"):
        peaks = profile.peaks.get(unit, {})
        for dtype, value in sorted(peaks.items(), key=lambda kv: -kv[1]):
            mode = entry.get("modes", {}).get(f"{unit}.{dtype}")
            lines.append(f"  peak {unit:<6} {dtype + (f' ({mode})' if mode else ''):<16} {_tflops(value):<16} "
                         f"[{cite.get(f'peak.{unit}.{dtype}', '')}]")
    lines += [
        f"  HBM            {profile.hbm_bytes / 1024 ** 3:g} GiB, {profile.hbm_bandwidth / 1e12:.3f} TB/s "
        f"(= {profile.hbm_bandwidth / 1024 ** 4:g} x 1024^4 B/s) [{cite.get('hbm_bandwidth', '')}]",
        f"  efficiency     compute {profile.efficiency['cube']:g} [{cite.get('efficiency.cube', '')}], memory "
        f"{profile.memory_efficiency:g} [{cite.get('memory_eff', '')}]",
        "  launch         " + ", ".join(f"{u} {profile.launch_us[u]:g} us" for u in ("cube", "vector", "communication"))
        + f" [{cite.get('launch.cube', '')}]",
        f"  host link      {profile.host.link / 1e9:g} GB/s, CPU {profile.host.cpu_flops / 1e9:g} GFLOP/s, "
        f"{profile.host.cpu_bandwidth / 1e9:g} GB/s, host sync {profile.host.sync_us:g} us [{cite['host']}]",
        f"  source         {entry['source']}",
    ]
    links = load_interconnect(profile.product, kb)
    if links is not None:
        for tier in links.tiers:
            lines.append(f"  link {tier.name:<9} {tier.bandwidth / 1e9:g} GB/s x {tier.efficiency:g}, "
                         f"{tier.latency_us:g} us a step, up to {tier.ranks} ranks"
                         f"{' (full mesh)' if tier.full_mesh else ''} [{tier.cite}]")
        lines.append(f"  comm launch    {links.launch_us:g} us (interconnect.json, from ascend_comm_figures.tsv)")
    lines += [f"  shape {klass:<8} " + ", ".join(f"{side} efficiency {e:g} [{cite.get(f'shapes.{klass}.{side}', '')}]"
                                              for side, e in sides.items())
              for klass, sides in profile.shapes.items()]
    lines += [f"  note           {note}" for note in profile.notes]
    others = [v for v in table["products"][profile.product]["variants"] if v != profile.variant]
    if others:
        lines.append(f"  other variants {', '.join(others)} (`kb show device NAME`)")
    return "\n".join(lines)
