"""Trace stage: run a loaded model once and record every operator call as an OpNode with its ATen evidence.

Capture methods are registered classes (registry.py), one module per strategy, tried in order by trace_model
(driver.py); the Capture records every attempt and why it failed:
  fx                  fx.py: symbolic tracing, then a node-by-node run: the graph as users wrote it.
  dispatch            dispatch.py: one eager forward under module hooks, a torch-function mode and a dispatch mode;
                      works for any model that runs.
  dispatch-compiling  dispatch.py: the same with torch.compiler.is_compiling() true (meta only).
  export              export.py: torch.export, the last resort; skipped on large models.
With --train the one capture is the training step (train/): the dispatch capture's forward with gradients and the
loss, then backward() with each ATen call filed under the operator that created its autograd node, and the
optimizer, clipping and GradScaler calls as operators of kind "optimizer".
The shared parts: operator naming (keys.py), values and attributes (values.py), the ATen recorder with FLOPs and
meta-device stand-ins (recorder.py), interception where torch has no hook (patches.py), source lines (sources.py).
Everything runs on the meta device unless the model cannot, in which case it is rebuilt on the CPU. GPU-only code
(a kernel library that is not installed, Triton launches, cuda devices) runs against stand-ins (opassess/standins,
installed again by the driver for each attempt); the dispatch capture records their calls as kind "library".
An FX Node never leaves this package.
"""
from __future__ import annotations

from .driver import trace_model
from .methods import METHODS, capture_order, check_methods

__all__ = ["METHODS", "capture_order", "check_methods", "trace_model"]
