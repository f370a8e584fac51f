"""Isolation: model code runs only in worker processes; the process that writes reports never runs it.

The process tree of one model (a single scan or one model of a portfolio):

    opassess          parses options, waits, writes every report, applies the gates; runs no model code
      keeper          a small process per model: forks the worker, waits for it, says how it ended
        worker        its own session and process group; loads, traces and assesses the model; fd 1 and 2 are a
                      pipe the parent copies to its stderr, so nothing the model (or its subprocesses) prints
                      reaches the report on stdout
          (children)  whatever the model starts: in the worker's process group unless they leave it

`process.py` is that machinery (start, watch, deadline), `reap.py` kills a worker's whole session and makes sure
nothing outlives the `opassess` process (even one killed with SIGKILL), `signals.py` turns SIGTERM / SIGHUP into an
exception so every worker group is killed and every temporary file removed before the run exits, `scan.py` runs one
model's assessment this way for `opassess scan FILE`.
"""
from __future__ import annotations

from .process import Job, Outcome, WorkerFailed
from .reap import stop_helpers
from .signals import Terminated, terminating_on_signals

__all__ = ["Job", "Outcome", "Terminated", "WorkerFailed", "stop_helpers", "terminating_on_signals"]
