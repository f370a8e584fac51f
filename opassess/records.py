"""Plain immutable records passed between the pipeline stages (load, trace, inventory, classify, score, estimate)."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .messages import N_, Message, Text  # noqa: F401 - N_ re-exported for the stages that build reasons
from .reasons import EXCLUSION_CODES
from .vocabulary import (  # noqa: F401 - re-exported: the vocabulary is stated once
    CATEGORIES,
    TRAIN_STEP,
    CaptureStep,
    Category,
    Confidence,
    CostBasis,
)

# Shapes are tuples of ints (a scalar is ()); a non-tensor argument has shape None.
Shape = tuple[int, ...] | None

# ---------------------------------------------------------------- trace stage


@dataclass(frozen=True)
class AtenCall:
    """One ATen operator dispatched while a graph node ran, with what it saw."""

    op: str  # "aten::convolution" or "mylib::fused_gelu" (namespace::name, no overload)
    overload: str  # "default", "Tensor", "Scalar", ...
    input_shapes: tuple[Shape, ...]
    input_dtypes: tuple[str | None, ...]  # "float32", None for non-tensors
    output_shapes: tuple[Shape, ...]
    output_dtypes: tuple[str | None, ...]

    @property
    def qualified(self) -> str:
        """'aten::add.Tensor' (the name the NPU kernel tables use, with overload)."""
        return self.op if self.overload in ("", "default") else f"{self.op}.{self.overload}"


@dataclass(frozen=True)
class OpNode:
    """One operator call in the model as the user wrote it (a leaf module, a function, a method, a custom op)."""

    name: str  # unique node name inside the capture ("conv1", "add_3")
    key: str  # operator key: "torch.nn.Conv2d", "torch.nn.functional.gelu", "Tensor.view", "operator.add", "ns::op"
    # "module" | "function" | "method" | "custom" | "extension" (a compiled C++ extension's function) | "aten"
    # | "optimizer" (a training step's optimizer step, gradient clipping or GradScaler call; --train only)
    # | "library" (a call of a GPU-only kernel library or a Triton launch the capture stood in for)
    kind: str
    module_path: str  # dotted path of the owning module ("" for the root); the module itself for kind="module"
    attrs: Mapping[str, Any]  # JSON-able attribute values: Conv2d stride, F.gelu approximate, ...
    input_shapes: tuple[Shape, ...]
    input_dtypes: tuple[str | None, ...]
    output_shapes: tuple[Shape, ...]
    output_dtypes: tuple[str | None, ...]
    aten: tuple[AtenCall, ...]  # ATen ops this node dispatched, in order
    source: str | None  # "examples/resnet_like.py:42" where Python gives one
    flops: int = 0  # filled by the trace when a formula is known (0 = unknown/none)
    bytes_moved: int = 0
    # ATen ops named by the user-level call before any decomposition ("aten::scaled_dot_product_attention",
    # "aten::lstm"): torch_npu registers kernels for some composite ops and takes them whole, so these come
    # first as evidence; `aten` holds what the meta/CPU backend dispatched after decomposition.
    entry: tuple[str, ...] = ()
    # ATen ops the backward pass dispatched for the autograd nodes this call created (--train only, else empty)
    backward: tuple[AtenCall, ...] = ()
    backward_flops: int = 0  # the FLOPs of `backward` by their formulas (--train only)
    # When `source` lies in an installed library (site-packages): the innermost frame in the project itself, if any
    project_source: str | None = None

    @property
    def entry_names(self) -> tuple[str, ...]:
        """The entry ops without the overload that ran ('aten::add.Tensor' -> 'aten::add'): the names the finding
        patterns use."""
        return tuple(dict.fromkeys(e.partition(".")[0] for e in self.entry))


@dataclass(frozen=True)
class CaptureAttempt:
    """One capture method tried, and why it failed (error is None when it succeeded)."""

    method: str  # "fx" | "dispatch" | "dispatch-compiling" | "export"
    error: str | None
    seconds: float


@dataclass(frozen=True)
class StandIn:
    """A library or device call the capture stood in for, because this machine has no GPU (opassess/standins)."""

    library: str  # "flash_attn", "triton", "torch.cuda"
    symbols: tuple[str, ...]  # what the model called: "flash_attn.flash_attn_func", "triton:add_kernel", ".cuda()"
    why: str  # one sentence: not installed, or installed but needing a GPU
    # the project's own extension, not built here: the setup.py line that builds it ("rope/setup.py:6"); else None
    built_by: str | None = None


@dataclass(frozen=True)
class DynamoBreak:
    """One graph break torch._dynamo reported: its reason and the user's line it happened at."""

    reason: str
    source: str | None  # "model.py:19"


@dataclass(frozen=True)
class DynamoRun:
    """What torch._dynamo reported when the worker ran it on the model's forward (--graph-mode dynamo)."""

    graphs: int  # graphs it built
    ops: int  # ops in them
    breaks: tuple[DynamoBreak, ...]
    seconds: float
    error: str | None = None  # why the run did not finish, when it did not (the breaks are then incomplete)


@dataclass(frozen=True)
class Registration:
    """The composite kernels torch registers for a non-ATen op the model ran (a library's torch.library op), as the
    worker that imported the library sees them: the parent that classifies never imports it."""

    op: str  # "transformers::grouped_mm_fallback"
    kinds: tuple[str, ...]  # ("CompositeExplicitAutograd",); () when it has kernels for some devices only
    # the ATen ops its CPU reference implementation (a torch.library.custom_op's Python body) dispatched when the
    # worker ran it once on zeros of a captured signature; () when not run (no such body, too large, it failed)
    reference: tuple[str, ...] = ()


@dataclass(frozen=True)
class FunctionReach:
    """One Python function the captured forward entered (the model's code or a library's, never torch's own): which
    of its lines ran and which did not (trace/reach.py). Lines are the function's own, not those of nested defs."""

    file: str  # the absolute path of its file, as the code object names it
    name: str  # its qualified name ("FCOSHead.postprocess_detections", "_batched_nms_coordinate_trick")
    first_line: int  # its def line (the first decorator's)
    ran: tuple[int, ...]
    missed: tuple[int, ...]


@dataclass(frozen=True)
class Capture:
    """Everything the trace stage learned about one forward pass."""

    method: str  # the method whose nodes are reported
    device: str  # "meta" | "cpu"
    device_note: str | None  # why the CPU was used, when it was
    attempts: tuple[CaptureAttempt, ...]
    nodes: tuple[OpNode, ...]
    edges: tuple[tuple[str, str], ...] = ()  # (producer node name, consumer node name), when the capture has a graph
    module_types: Mapping[str, str] = field(default_factory=dict)  # module path -> class name, for roll-ups
    step: CaptureStep = CaptureStep.FORWARD  # one forward pass (eval mode) | train (forward, backward, optimizer)
    step_note: str | None = None  # what the training step ran: its loss, optimizer, clipping, autocast
    stand_ins: tuple[StandIn, ...] = ()  # GPU-only libraries and calls the capture stood in for
    dynamo: DynamoRun | None = None  # torch._dynamo's report on the forward (--graph-mode dynamo), else None
    registrations: tuple[Registration, ...] = ()  # the composite keys of the non-ATen ops seen (forward, backward)
    # the functions the recorded run entered, with their lines run and not run; None when no record was kept (another
    # tracer, a debugger or coverage, held sys.settrace)
    reach: tuple[FunctionReach, ...] | None = None
    driven: tuple[str, ...] = ()  # the branches the capture drove (trace/drive.py): "FCOS.score_thresh 0.05 -> 0"
    # ATen ops PyTorch refuses in the model's half dtype on every device: the CPU and the meta kernel both raised
    refused: tuple[str, ...] = ()

    @property
    def training(self) -> bool:
        """Whether the capture is a training step (--train): forward, backward and the optimizer step."""
        return self.step == TRAIN_STEP


@dataclass(frozen=True)
class ModelInfo:
    """What was loaded: where from, how big, how it was run."""

    source: str  # "examples/resnet_like.py" or "pkg.mod:factory"
    entry: str  # factory function name
    class_name: str
    parameters: int
    dtype: str  # dtype assessed ("float32", "float16", "bfloat16")
    inputs: tuple[str, ...]  # human-readable description of each example input
    label: str | None = None  # a name the user gave the model (--label), which baselines match on


# ------------------------------------------------------------ inventory stage


@dataclass(frozen=True)
class Signature:
    """A distinct attribute/shape/dtype combination of one operator, with how often it occurs."""

    attrs: Mapping[str, Any]
    input_shapes: tuple[Shape, ...]
    input_dtypes: tuple[str | None, ...]
    count: int
    modules: tuple[str, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class Operator:
    """All occurrences of one operator key in the model."""

    key: str  # operator key: "torch.nn.Conv2d", "Tensor.view", "mylib::fused" (OpNode.key)
    kind: str
    count: int
    modules: tuple[str, ...]
    signatures: tuple[Signature, ...]
    aten: tuple[str, ...]  # distinct qualified ATen ops ("aten::convolution", "aten::add.Tensor")
    sources: tuple[str, ...]
    nodes: tuple[OpNode, ...]
    flops: int = 0
    bytes_moved: int = 0
    entry: tuple[str, ...] = ()  # distinct OpNode.entry ops
    backward_aten: tuple[str, ...] = ()  # distinct qualified ATen ops of the nodes' backward (--train)
    backward_flops: int = 0  # the FLOPs of the nodes' backward ATen calls (--train; 0 = none or not counted)
    project_sources: tuple[str, ...] = ()  # distinct OpNode.project_source: project frames behind library calls


@dataclass(frozen=True)
class Inventory:
    model: ModelInfo
    capture: Capture
    operators: tuple[Operator, ...]


# ------------------------------------------------------------- classify stage


@dataclass(frozen=True)
class Reason:
    """One fact that decided (or informed) a category."""

    code: str  # "kernel", "no-kernel", "api-supported", "api-unsupported", "dtype", "param-limit",
    #            "replacement", "custom-op", "not-in-kb", "decomposes", "view-op", "cpu-only-decomposition", ...
    message: str  # one sentence, English, for the report
    evidence: str  # where the fact comes from: "npu_aten_ops: convolution [v2.1..newest]", "rules.toml: lstm"
    signature: int | None = None  # index into Operator.signatures when the reason concerns one signature
    # The message as a catalog message id and its values (identifiers, versions), so the human formats say it in the
    # reader's language: message == template % dict(params). Empty for a reason not yet built so (read as written).
    template: str = ""
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, code: str, template: str, params: Mapping[str, Any], evidence: str,
           signature: int | None = None) -> Reason:
        """A reason whose message is `template` (a message id, marked N_) filled with `params` (a Text)."""
        message = Text(template, params)
        return cls(code, message, evidence, signature, template, message.params)


@dataclass(frozen=True)
class ClassifiedOp:
    operator: Operator
    category: Category  # the worst over its signatures
    signature_categories: tuple[str, ...]  # one per Operator.signatures
    reasons: tuple[Reason, ...]
    replacement: str | None  # torch_npu API to use, when one exists
    cann_op: str | None  # CANN operator name, when known
    known: bool  # False when the knowledge base has no fact about it at all
    aten_support: Mapping[str, bool]  # qualified ATen op -> has an NPU kernel for the target
    confidence: Confidence = Confidence.MEDIUM  # how well the evidence pins the verdict down
    replacement_deprecated: bool = False  # the facts mark the replacement deprecated (npu_nms_v4)
    replacement_successor: str | None = None  # what the facts say to use instead; None: no successor
    backward_support: Mapping[str, bool] = field(default_factory=dict)  # the same for Operator.backward_aten

    @property
    def exclusions(self) -> tuple[Reason, ...]:
        """The reasons that say what was checked and ruled out (view ops, composites taken whole, ...)."""
        return tuple(r for r in self.reasons if r.code in EXCLUSION_CODES)


# ---------------------------------------------------------------- score stage


@dataclass(frozen=True)
class SubScore:
    """One sub-criterion's difficulty (0 = no work, 1 = hardest) and the measured signal that gave it."""

    dimension: str  # "functional" | "performance" | "ecosystem"
    criterion: str  # "shape_match", "dtype_support", "special_attrs", "fusion", "memory_layout", "pipeline", ...
    value: float
    weight: float  # weight inside its dimension
    signal: str  # "input dtype float64 not in [bf16, fp16, fp32]"


@dataclass(frozen=True)
class OpScore:
    classified: ClassifiedOp
    functional: float  # each dimension 0..1 (weighted mean of its sub-scores)
    performance: float
    ecosystem: float
    composite: float  # weighted by the top-level dimension weights
    subscores: tuple[SubScore, ...]


# ------------------------------------------------------------- estimate stage


@dataclass(frozen=True)
class Effort:
    """A three-point person-day range; supports + so totals are sum()."""

    low: float
    likely: float
    high: float

    def __add__(self, other: Effort) -> Effort:
        return Effort(self.low + other.low, self.likely + other.likely, self.high + other.high)

    def __radd__(self, other: Any) -> Effort:
        if other == 0:  # sum() starts from 0
            return self
        return NotImplemented


@dataclass(frozen=True)
class Risk:
    likelihood: int  # 1..5
    impact: int  # 1..5
    stars: int  # 1..5
    signals: tuple[str, ...]  # what raised likelihood and impact


@dataclass(frozen=True)
class Finding:
    """A performance-work pattern found in the graph."""

    kind: str  # one of patterns.toml [kinds] (findings.patterns.FindingKind: its criterion and fused flag)
    title: str
    nodes: tuple[str, ...]  # OpNode names involved
    ops: tuple[str, ...]  # operator keys involved
    source: str | None
    npu_api: str | None  # torch_npu API to use
    effect: str  # how it moves the performance score
    # Measured numbers behind the title: "occurrences", "conversions", "downstream", "flops", "flops_share", ...
    metrics: Mapping[str, float] = field(default_factory=dict)
    # The title as a catalog message (title == message.text()), so the human formats say it in the reader's language
    message: Message | None = None
    # The replacement written out with what the capture saw (opassess/advice): `torch_npu.npu_fusion_attention(q, k,
    # v, head_num=8, ...)[0]`; None when the finding names no call
    call: str | None = None
    # what goes with the call: adapter lines ("first: ..."), documented constraints it fails ("fails: ..."), notes
    call_notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class InputFile:
    """One file the verdict rests on (knowledge base, overlay, weights, device profile, template, baseline, manifest),
    read and hashed by the `opassess` process before any model code ran."""

    path: str
    sha256: str
