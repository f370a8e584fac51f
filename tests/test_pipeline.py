"""The spine split along the isolation boundary (opassess/pipeline/): the capture side a worker imports loads none
of the assessing side's stages, the assessing side runs both halves in one process, and the library's names are
the pipeline's functions (not the modules of the same name)."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.support import ROOT

ASSESSING = ("opassess.classify", "opassess.findings", "opassess.score", "opassess.perf", "opassess.routes",
             "opassess.source", "opassess.report", "opassess.pipeline.assess", "opassess.pipeline.sources")


def _loaded_by(module: str) -> list[str]:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('opassess')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout.replace("'", '"'))


def test_the_capture_side_loads_none_of_the_assessing_side():
    loaded = _loaded_by("opassess.pipeline.capture")
    assert "opassess.trace.driver" in loaded and "opassess.load" in loaded  # what a worker runs
    assert [m for m in loaded if m.startswith(ASSESSING)] == []


def test_the_spine_head_imports_nothing_of_opassess():
    assert _loaded_by("opassess.pipeline") == ["opassess", "opassess.pipeline"]


def test_the_assessing_side_holds_the_stages_it_runs():
    loaded = set(_loaded_by("opassess.pipeline.assess"))
    assert {"opassess.classify", "opassess.findings", "opassess.score.estimate", "opassess.perf",
            "opassess.pipeline.capture"} <= loaded


def test_the_library_names_are_the_functions_not_their_modules():
    import opassess
    from opassess.pipeline.assess import assess
    from opassess.pipeline.sources import assess_sources

    assert opassess.assess is assess and callable(opassess.assess)
    assert opassess.assess_sources is assess_sources and callable(opassess.assess_sources)


def test_a_single_scan_in_a_worker_returns_the_assessment_it_built(tmp_path):
    """start_assessment hands back what it started as one record (no attributes set on the job from outside);
    finish_assessment returns the Assessment, which the caller turns into a view (cli/scan builds it on both
    branches): the same operators and the worker's own stage times, framed by what the run cost around them."""
    import dataclasses
    import textwrap

    import pytest

    from opassess.assessment import Assessment
    from opassess.isolation.process import Job
    from opassess.isolation.scan import Started, finish_assessment, start_assessment
    from opassess.options import ScanOptions
    from opassess.pipeline.assess import assess
    from tests.support import TINY

    model = tmp_path / "tiny.py"
    model.write_text(textwrap.dedent(TINY), encoding="utf-8")
    options = ScanOptions(target=str(model))
    started = start_assessment(options, timeout=300, debug=False)
    assert isinstance(started, Started) and isinstance(started.job, Job) and started.pinned.kb is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        started.job = None  # type: ignore[misc]
    assessment = finish_assessment(started, options)
    assert isinstance(assessment, Assessment) and assessment.sandbox is not None
    here = assess(options)
    assert [c.operator.key for c in assessment.classified] == [c.operator.key for c in here.classified]
    assert list(assessment.seconds)[:4] == ["start", "worker", "load", "trace"]
    assert list(assessment.seconds)[-1] == "estimate" and "transfer" in assessment.seconds
