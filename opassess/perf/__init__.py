"""The time model: how long each captured call and the whole step take on an Ascend product, before any run.

Public API (kept stable: `opassess calibrate --profile-data` writes overlays for `load_profile`):
- `load_profile(product, kb=None, overlay=None, variant=None) -> DeviceProfile`: the product's device figures
  (devices.json, generated from ascend_hw_figures.tsv) with an overlay TOML applied (format: perf/device.py).
- `time_call(CallWork, DeviceProfile) -> CallTime`: one call's roofline and penalties (perf/model.py).
- `estimate_performance(inventory, classified, findings, product, ...) -> Performance`: the step on the target and
  on each compared product, per operator and per unit (perf/step.py).
Every time is an estimate from modelled peaks and efficiencies (on Atlas A2 a cube matmul's efficiency by its
shape class is a median of published measurements), never a measurement of the model.
"""
from __future__ import annotations

from .device import DeviceProfile, NoDeviceProfile, apply_overlay, load_profile, product_note, variant_profile
from .model import CallWork, roofline, time_call
from .records import ESTIMATE, CallTime, OperatorTime, Penalty, Performance, StepTime
from .step import estimate_performance, operator_times, step_time

__all__ = ["ESTIMATE", "CallTime", "CallWork", "DeviceProfile", "NoDeviceProfile", "OperatorTime", "Penalty",
           "Performance", "StepTime", "apply_overlay", "estimate_performance", "load_profile", "operator_times",
           "product_note", "roofline", "step_time", "time_call", "variant_profile"]
