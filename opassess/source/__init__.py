"""Source-level assessment: the GPU code around a model (CUDA APIs, kernel libraries, Triton and CUDA kernels).

Library API (nothing is imported or run from the scanned project):

    from opassess.source import scan_sources
    scan = scan_sources(["train.py", "csrc/"], root=".")
    for finding in scan.findings:        # SourceFinding records, in (file, line) order
        finding.category, finding.kind, finding.npu_route, finding.evidence, finding.size
    scan.skipped                         # SkippedFile(file, reason) for what could not be read or parsed
    scan.category_counts()               # {"direct": n, "param-converted": n, "custom-dev": n}

Facts: `load_source_facts()` (opassess/data/kb/source_facts.json, built by tools/kb_source.py).
"""
from __future__ import annotations

from .facts import SourceFacts, load_source_facts
from .records import KINDS, KernelSize, SkippedFile, SourceFinding, SourceScan
from .scan import SourceScanError, scan_sources

__all__ = ["KINDS", "KernelSize", "SkippedFile", "SourceFacts", "SourceFinding", "SourceScan", "SourceScanError",
           "load_source_facts", "scan_sources"]
