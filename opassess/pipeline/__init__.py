"""The spine: load -> capture -> classify/score -> assess, split where the isolation boundary splits a scan.

- `capture.py`, the worker's side: load the model file and trace it (`capture_stage`: ModelInfo, Capture and the
  stages' seconds; isolation/wire.py carries them to the parent). The only half that runs model code.
- `assess.py`, the parent's side: `preflight` checks the configuration before any model code runs; `assess_capture`
  takes a capture through inventory, classify, reach, graph mode, source scan, findings, time model, score and
  estimate to the Assessment (assessment.py); `assess` runs both halves in this process (the library's
  `opassess.assess`).
- `sources.py`: `opassess source`, the source scan alone as an Assessment (`assess_sources`), and the files a
  model's run reaches.

This module holds what both halves share and imports nothing of opassess, so a worker that imports the capture side
does not load the assessing side. Each stage is timed with `timed(seconds, stage)`: the report's `seconds`.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[[str], None]


def noop(_: str) -> None:
    """A Progress that says nothing."""
    return None


@contextmanager
def timed(seconds: dict[str, float], stage: str) -> Iterator[None]:
    """Time the `with` body as `stage`: seconds[stage] = its wall time (a report's `seconds`, stage by stage)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        seconds[stage] = time.perf_counter() - started


def installed_torch() -> str | None:
    """The torch release installed here ('2.15.0'), read from its metadata (a source scan never imports torch)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torch").split("+")[0]
    except PackageNotFoundError:
        return None
