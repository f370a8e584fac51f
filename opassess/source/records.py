"""The records of a source scan: raw sites found by the scanners, classified findings, the scan result."""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from ..records import Effort, Risk
from ..vocabulary import Category, Confidence

# Finding kinds (SourceFinding.kind), one word each for the GPU-specific construct found at a site.
KINDS = (
    "gpu-api",          # a torch.cuda / distributed / AMP / backends / profiler API the facts know
    "device-string",    # 'cuda' passed as a device (.to("cuda"), device="cuda", .cuda())
    "backend-string",   # 'nccl' passed as a process-group backend
    "string-compare",   # 'nccl' / 'cuda' compared with a backend or device name
    "precision-note",   # a cuDNN/TF32 flag nothing on the NPU reads; the note names the NPU analogue
    "no-op",            # another construct transfer_to_npu turns into a no-op (torch.jit.script)
    "library-call",     # a symbol of a third-party kernel library (flash_attn, apex, xformers ...)
    "library-import",   # an unguarded import of such a library
    "guarded-import",   # try: import <library> except ImportError: the fast path the NPU will not take
    "triton-kernel",    # an @triton.jit kernel, sized
    "triton-config",    # triton.Config / triton.autotune arguments triton-ascend does not tune
    "cpp-extension",    # torch.utils.cpp_extension.load(...) of CUDA sources, or CUDAExtension in setup.py
    "cuda-kernel",      # a __global__ kernel in a .cu/.cuh file, sized
    "native-binding",   # PYBIND11_MODULE / TORCH_LIBRARY in C++/CUDA sources
    "native-runtime",   # CUDA runtime / cuBLAS / cuDNN / NCCL calls in C++/CUDA sources
    "collective",       # a torch.distributed collective HCCL treats differently (gather, a float64 all_reduce, ...)
    "reduce-op",        # a ReduceOp HCCL lacks (BAND/BOR/BXOR) or emulates (AVG, PREMUL_SUM)
    "comm-hook",        # a DDP communication hook (HCCL: fp32 input only)
    "dist-api",         # another torch.distributed API the HCCL facts restrict (FSDP1 optim state, parallelize_module)
    "env-var",          # an NCCL_* environment variable name (nothing on the NPU reads it)
    "process-group",    # init_process_group / new_group options HCCL does not take as given (pg_options, timeout)
)


# Kinds that are distributed work (a process group, its collectives and options), and the APIs of the other kinds
# that are (DataParallel, DistributedDataParallel, torch.distributed): a distributed bring-up's sites
# Kinds that are notes, not work: no effort, never priced, counted or gated (a flag nothing on the NPU reads, a
# construct transfer_to_npu makes a no-op, a GradScaler bf16 autocast does not need)
NOTE_KINDS = ("precision-note", "no-op")
DISTRIBUTED_KINDS = ("backend-string", "collective", "reduce-op", "comm-hook", "dist-api", "env-var", "process-group")
DISTRIBUTED_APIS = ("torch.distributed.", "torch.nn.parallel.", "torch.nn.DataParallel", "torch.cuda.nccl")


def is_distributed(finding: SourceFinding) -> bool:
    """Whether a source finding is part of the code's distributed set-up."""
    return finding.kind in DISTRIBUTED_KINDS or finding.subject.startswith(DISTRIBUTED_APIS)


# Native kinds an extension's sources hold: priced with the extension that builds them (SourceFinding.built_by)
BUILT_KINDS = ("cuda-kernel", "native-binding", "native-runtime")


@dataclass(frozen=True)
class KernelSize:
    """How big a kernel or extension is, so effort can follow size: lines, kernel count, APIs used."""

    lines: int
    kernels: int = 1
    apis: tuple[str, ...] = ()


@dataclass(frozen=True)
class Site:
    """One GPU-specific construct a scanner found, before classification (python.py and native.py make these).

    `subject` is the qualified API, literal, library or kernel name; `detail` holds scanner observations as
    (key, value) pairs, e.g. ("kwargs", "window_size,causal") or ("flag", "atomic_add:int64").
    """

    file: str
    line: int
    code: str
    kind: str
    subject: str
    detail: tuple[tuple[str, str], ...] = ()
    size: KernelSize | None = None

    def get(self, key: str, default: str = "") -> str:
        """The first detail value stored under `key`."""
        return next((value for name, value in self.detail if name == key), default)

    def all(self, key: str) -> tuple[str, ...]:
        """Every detail value stored under `key`."""
        return tuple(value for name, value in self.detail if name == key)


@dataclass(frozen=True)
class SourceFinding:
    """One classified site: where it is, what it is, its migration category, route and the table row behind it.

    `file` is relative to the scanned root (POSIX separators); `code` is the stripped source line; `evidence`
    cites table rows as "<table>.tsv:<line>" (plus the upstream citation the row gives); `size` is set for
    Triton and CUDA kernels and extensions; `notes` carry specifics (dropped arguments, flagged APIs).
    """

    file: str
    line: int
    code: str
    kind: str
    category: Category
    subject: str
    npu_route: str
    evidence: tuple[str, ...]
    confidence: Confidence
    notes: tuple[str, ...] = ()
    size: KernelSize | None = None
    # "setup.py:248": the site of the extension that builds this file (a kernel, binding or runtime call in its
    # sources): priced there, once, as its kernels; "" otherwise
    built_by: str = ""
    # an extension the tree builds: "file:line" of each import of the module it builds (linked to it, no sites)
    links: tuple[str, ...] = ()

    @property
    def effort_free(self) -> bool:
        """True for notes that need no work (precision notes and no-ops)."""
        return self.kind in NOTE_KINDS


@dataclass(frozen=True)
class SkippedFile:
    """A file the scan could not read or parse, with the reason (never dropped silently)."""

    file: str
    reason: str


@dataclass(frozen=True)
class ConfigReach:
    """What a project's default configuration reaches, read from its source (`opassess source`, no model run): the
    config class, the classes and functions that take it (roots), the files whose module-level code runs (`loaded`)
    and each file's top-level definitions as (first line, last line, reached). A site is reached when its file is
    loaded and it lies outside every definition or in a reached one; `variants` are the native sources of a reached
    extension built for another dtype than `dtype` (not reached, not priced)."""

    config: str  # "mamba_ssm/models/config_mamba.py: MambaConfig"
    roots: tuple[str, ...]  # "mamba_ssm/models/mixer_seq_simple.py: MambaLMHeadModel"
    loaded: frozenset[str]
    defs: Mapping[str, tuple[tuple[int, int, bool], ...]]
    dtype: str = "float32"
    variants: tuple[str, ...] = ()

    def reaches(self, file: str, line: int) -> bool:
        """Whether the default configuration runs the code at file:line."""
        if file not in self.loaded:
            return False
        return next((reached for first, last, reached in self.defs.get(file, ()) if first <= line <= last), True)

    def inside(self, file: str, line: int) -> bool | None:
        """Whether file:line lies in a reached definition (a call the default configuration makes), False in an
        unreached one, None at module level (an import, run whenever the file is)."""
        if file not in self.loaded:
            return False
        return next((reached for first, last, reached in self.defs.get(file, ()) if first <= line <= last), None)


@dataclass(frozen=True)
class SourceScan:
    """The result of scan_sources: findings in (file, line, kind) order, the files read and the files skipped."""

    root: str
    findings: tuple[SourceFinding, ...]
    files: tuple[str, ...]
    skipped: tuple[SkippedFile, ...] = ()
    lines: int = 0
    reach: ConfigReach | None = None  # scan_sources(configured=True) on a project with a config class

    def category_counts(self) -> dict[str, int]:
        """Findings per category word, every category present (zero when none)."""
        counts = Counter(str(f.category) for f in self.findings)
        return {str(category): counts.get(str(category), 0) for category in Category}


@dataclass(frozen=True)
class SourceEstimate:
    """One source finding costed (score/source_cost.py) and placed on the risk grid.

    `operators` are the capture's operators of kind "library" whose source line is this finding's file:line: the
    same call seen twice, counted here once (their own effort is zero, cost basis "source-finding"). The other way
    round, `covered_by` names an ordinary captured operator that is this call: it is counted there."""

    finding: SourceFinding
    person_days: Effort
    risk: Risk
    basis: str  # how the effort was computed: "custom-dev site [1-2-5] + 1 kernel x [2-4-8] + ..."
    # The name baselines, gates and the risk grid know the site by, free of line numbers so that an edit above it
    # changes nothing: "train.py: flash_attn.flash_attn_func (library-call)", "... #2" for the second in the file
    key: str = ""
    operators: tuple[str, ...] = ()
    # The captured operator (not a library stand-in) that is this very call, e.g. F.scaled_dot_product_attention at
    # the same file:line: the operator carries the verdict and the effort, this site costs 0 and is not shown again
    covered_by: str | None = None
    # `scan MODEL --source DIR`: False for a site the model's capture does not reach (present in the source, not
    # reached by this model): costed in Estimate.present, not in the total; True otherwise
    reached: bool = True
