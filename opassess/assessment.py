"""The hub record: one scan's result, what every reporter renders, the CI reads and a worker's parent builds.

It sits at the pipeline's layer (tests/test_layout.py LAYERS), above the stages whose records it holds, so each field
has its real type: the capture and the operators (records.py), the source scan (source/), the routes (routes/), the
graph-mode readiness (graphmode/) and the time model (perf/). Built by pipeline/assess.py (assess_capture)
and pipeline/sources.py (assess_sources); read by report/, ci/, isolation/ and the CLI.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .records import Capture, ClassifiedOp, Finding, InputFile, Inventory, ModelInfo

if TYPE_CHECKING:  # for the types only: importing these packages at run time costs a command's start-up 0.4 s
    from .classify.reach import Reach
    from .graphmode.records import GraphMode
    from .perf.records import Performance
    from .routes.records import OnnxRoute, ServingCheck
    from .score.records import Estimate
    from .source.records import SourceScan


@dataclass(frozen=True)
class Assessment:
    """The result of one scan: what every reporter renders."""

    tool_version: str
    model: ModelInfo
    capture: Capture
    inventory: Inventory
    target: str  # Ascend product assessed against ("Atlas A2")
    torch_version: str  # torch / torch_npu version assessed against ("2.13")
    kb_version: str
    classified: tuple[ClassifiedOp, ...]
    estimate: Estimate | None
    findings: tuple[Finding, ...]
    weights_source: str  # path of the weights.toml used
    seconds: Mapping[str, float]  # wall time per stage
    # (low, high) person-days per category from the weights used, for rule texts (SARIF); None when not known
    effort_ranges: Mapping[str, tuple[float, float]] | None = None
    source_scan: SourceScan | None = None  # when source files were scanned (root, files, skipped)
    onnx: OnnxRoute | None = None  # `scan --route onnx`
    serving: ServingCheck | None = None  # `scan --route vllm-ascend`
    graph_mode: GraphMode | None = None  # readiness per NPU graph back-end; None with --no-graph-mode
    performance: Performance | None = None  # the time model's step on the target (and --compare products)
    inputs: tuple[InputFile, ...] = ()  # what the verdict rests on, hashed before the model ran (isolation/inputs.py)
    kb_overlay: str | None = None  # the knowledge-base overlay folder used (OPASSESS_KB_DIR, the user's, --kb), if any
    # what the capture's run did not reach of the functions it entered (present-not-reached calls, costed apart)
    reach: Reach | None = None
    torch_running: str | None = None  # the torch release opassess ran with ("2.15.0"; None: not known)
    sandbox: str | None = None  # what confined the worker ('landlock-abi7+network-namespace', 'off'); None: none ran
