"""What a scan is asked to do and where its report goes: `ScanOptions`, one frozen record the commands fill from their
flags and every stage reads, and `OutputOptions`, the report's format, place and comparison; the rules between their
fields are checked once, where each is made."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .dtypes import FLOAT_DTYPES
from .errors import UsageError
from .vocabulary import EXPORTERS, GRAPH_BACKENDS, GRAPH_MODES, HF_TASKS, ROUTES

DEFAULT_PRODUCT = "Atlas A2"  # the Ascend product assessed against when --target is not given
DEVICES = ("meta", "cpu")  # where the model is built and run (--device)
AMP_DTYPES = ("bf16", "fp16")  # autocast dtypes of a training step (--amp)
IN_PROCESS_ENV = "OPASSESS_IN_PROCESS"  # =1: everything in this process, for a debugger (no worker, no fork)
PARALLEL_KEYS = ("tp", "pp", "dp", "ep", "cp", "zero")  # --parallel's numeric keys; `sp` is a flag


@dataclass(frozen=True)
class ParallelLayout:
    """A job's layout over devices (--parallel tp=8,pp=1,dp=4[,ep=N][,sp][,cp=N][,zero=N]): tensor, pipeline, data,
    expert and context parallel sizes, sequence parallel on or off, and the ZeRO stage (0: none; 1: optimizer states
    sharded over dp, as Megatron's distributed optimizer; 2: and gradients; 3: and weights). Devices = tp x pp x dp x
    cp (experts are sharded over ep inside the dp x cp ranks, as Megatron lays them out)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    sp: bool = False
    cp: int = 1
    zero: int = 0

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp * self.cp

    @property
    def dimensions(self) -> int:
        """How many of tp, pp, dp, ep and cp split the job over more than one device (tp=8,dp=4: 2)."""
        return sum(1 for size in (self.tp, self.pp, self.dp, self.ep, self.cp) if size > 1)

    def text(self) -> str:
        """'tp=8,pp=1,dp=1,sp': the layout as --parallel takes it (keys left at 1 dropped, tp, pp and dp kept)."""
        parts = [f"{k}={getattr(self, k)}" for k in PARALLEL_KEYS
                 if k in ("tp", "pp", "dp") or getattr(self, k) != (0 if k == "zero" else 1)]
        return ",".join(parts + (["sp"] if self.sp else []))

    @classmethod
    def parse(cls, text: str) -> ParallelLayout:
        """'tp=8,pp=2,dp=4,sp' -> ParallelLayout; a UsageError naming --parallel for anything else."""
        values: dict[str, int | bool] = {}
        for part in (p.strip() for p in text.split(",")):
            key, sep, value = part.partition("=")
            key = key.strip().lower()
            if key == "sp" and not sep:
                values["sp"] = True
                continue
            if key not in PARALLEL_KEYS or not sep:
                raise UsageError(f"{part!r}: expected tp=N, pp=N, dp=N, ep=N, cp=N, zero=N or sp", option="--parallel")
            if key in values:
                raise UsageError(f"{key} given twice", option="--parallel")
            if not value.strip().isdigit() or int(value) < (0 if key == "zero" else 1):
                raise UsageError(f"{part!r}: expected a whole number of at least {0 if key == 'zero' else 1}",
                                 option="--parallel")
            values[key] = int(value)
        layout = cls(**values)  # type: ignore[arg-type]
        if layout.zero > 3:
            raise UsageError("zero: expected 0, 1, 2 or 3", option="--parallel")
        if layout.sp and layout.tp == 1:
            raise UsageError("sp (sequence parallel) splits the sequence over the tensor-parallel group: it needs tp "
                             "above 1", option="--parallel")
        if layout.dp * layout.cp % layout.ep:
            raise UsageError(f"ep={layout.ep} must divide dp x cp ({layout.dp * layout.cp})", option="--parallel")
        return layout


@dataclass(frozen=True)
class ScanOptions:
    """Everything a scan needs to know; the CLI fills it from flags. The rules between fields (--amp needs --train,
    ...) are checked here, so every caller gets them, not only the command line: a `UsageError` naming the option,
    which the CLI reports as bad usage (exit 2)."""

    target: str
    entry: str | None = None
    input_shapes: tuple[tuple[int, ...], ...] = ()
    input_dtype: str = "float32"
    dtype: str | None = None
    device: str = "meta"
    methods: tuple[str, ...] | None = None  # None: by model size (trace.capture_order)
    product: str = DEFAULT_PRODUCT
    torch_npu: str | None = None  # None: the knowledge base's default version
    weights: Path | None = None  # None: the shipped weights.toml
    kb_dir: Path | None = None  # None: the shipped knowledge base (or OPASSESS_KB_DIR)
    label: str | None = None  # the model's name for baselines (--label); None: matched by entry and class
    language: str = "en"  # language of the human report formats (--lang); the JSON contract stays English
    train: bool = False  # capture one training step (forward, backward, optimizer) instead of a forward pass
    amp: str | None = None  # with train: autocast "bf16" or "fp16" (with a GradScaler)
    profile: str = "default"  # shipped weights profile; `weights` applies on top of it
    source: tuple[str, ...] = ()  # files and folders to source-scan besides the model (--source)
    project_scan: bool = True  # also source-scan the model file and the project files it imports
    drive: bool = True  # drive the branches random weights skip (detector thresholds at 0, every MoE expert routed)
    route: str | None = None  # "onnx" (export in the worker, judge the nodes) or "vllm-ascend" (serving check)
    opset: int = 17  # with route onnx: the ONNX opset to export at (11..18)
    exporter: str = "auto"  # with route onnx: "auto" (dynamo where it works, else TorchScript), "dynamo", "torchscript"
    quant: str = ""  # with route vllm-ascend: a quantisation scheme to check against the chip ("w8a8")
    # Graph-mode readiness (opassess.graphmode): "capture" (from the dispatched calls, the default), "dynamo" (the
    # worker also runs torch._dynamo on the model), "off" (--no-graph-mode)
    graph_mode: str = "capture"
    compare: tuple[str, ...] = ()  # products to time the step on besides the target (--compare)
    device_profile: Path | None = None  # an overlay TOML over the target's device profile (--device-profile)
    graph_backend: str = GRAPH_BACKENDS[0]  # the back-end the graph-break gate and the graph effort item are for
    parallel: ParallelLayout | None = None  # the job's layout (--parallel); None: one device
    global_batch: int | None = None  # samples per step over all replicas (--global-batch); None: one micro-batch
    # per data-parallel replica (the example inputs are one micro-batch)
    gpu_baseline: str | None = None  # an NVIDIA GPU to time the same step on (--gpu-baseline H100)
    match_gpus: int | None = None  # with gpu_baseline: the NPUs that match this many GPUs (--match-gpus)
    # A Hugging Face model folder or config.json as the target (opassess/huggingface.py): the task's Auto class (None:
    # the config's architecture), the example inputs' sequence length (None: the config's, at most 2048) and batch,
    # and whether the folder's own modelling code may run (in the worker)
    task: str | None = None
    seq_len: int | None = None
    batch_size: int = 1
    trust_remote_code: bool = False
    # The worker's sandbox (isolation/sandbox.py): "auto" (what the kernel offers), "require" (fail without one), "off"
    sandbox: str = "auto"

    def __post_init__(self) -> None:
        if self.sandbox not in ("auto", "require", "off"):
            raise UsageError("expected auto, require or off", option="--sandbox")
        if self.device not in DEVICES:
            raise UsageError(f"expected {' or '.join(DEVICES)}", option="--device")
        if self.amp is not None and self.amp not in AMP_DTYPES:
            raise UsageError(f"expected {' or '.join(AMP_DTYPES)}", option="--amp")
        if self.train and self.methods:
            raise UsageError("does not apply with --train (a training step is captured by one eager step under the "
                             "dispatch recorder)", option="--capture")
        if self.amp is not None and not self.train:
            raise UsageError("needs --train (autocast is assessed on a training step)", option="--amp")
        if self.dtype and self.input_shapes and self.input_dtype in FLOAT_DTYPES - {"float32", self.dtype}:
            # --dtype casts every floating input, so the tensors would run as --dtype while the report said otherwise
            raise UsageError(f"{self.input_dtype} contradicts --dtype {self.dtype}, which casts the floating inputs "
                             "built from --input-shape (drop one of them)", option="--input-dtype")
        if self.task is not None and self.task not in HF_TASKS:
            raise UsageError(f"{self.task!r}: expected one of {', '.join(HF_TASKS)}", option="--task")
        if self.seq_len is not None and self.seq_len < 1:
            raise UsageError("expected a positive number of tokens", option="--seq-len")
        if self.batch_size < 1:
            raise UsageError("expected a positive batch size", option="--batch-size")
        if self.route is not None and self.route not in ROUTES:
            raise UsageError(f"{self.route!r}: expected one of {', '.join(ROUTES)}", option="--route")
        if self.exporter not in ("auto", *EXPORTERS):
            raise UsageError(f"{self.exporter!r}: expected auto, {' or '.join(EXPORTERS)}", option="--exporter")
        if self.quant and self.route != "vllm-ascend":
            raise UsageError("needs --route vllm-ascend", option="--quant")
        if self.graph_mode not in GRAPH_MODES:
            raise UsageError(f"{self.graph_mode!r}: expected one of {', '.join(GRAPH_MODES)}", option="--graph-mode")
        if self.graph_backend not in GRAPH_BACKENDS:
            raise UsageError(f"{self.graph_backend!r}: expected one of {', '.join(GRAPH_BACKENDS)}",
                             option="--graph-backend")
        if self.global_batch is not None and self.parallel is None:
            raise UsageError("needs --parallel (the global batch is split over the data-parallel replicas)",
                             option="--global-batch")
        if self.match_gpus is not None and (self.gpu_baseline is None or self.match_gpus < 1):
            raise UsageError("needs --gpu-baseline and a whole number of at least 1", option="--match-gpus")
        if self.global_batch is not None and self.global_batch < 1:
            raise UsageError("expected a whole number of at least 1", option="--global-batch")
        if self.graph_mode == "off" and self.graph_backend != GRAPH_BACKENDS[0]:
            raise UsageError(f"{self.graph_backend!r} is a back-end of the graph-mode analysis, which is off (drop "
                             "--graph-backend or --no-graph-mode)", option="--graph-backend")


@dataclass(frozen=True)
class OutputOptions:
    """Where a scan's report goes and what it is compared with: the output flags `opassess scan` and `opassess source`
    share. The CI gates are a `ci.policy.Policy` beside it (the CLI builds both; ci/ sits above this module)."""

    fmt: str | None = None  # -f; None: from -o's suffix, else the terminal summary (several models: md per model)
    output: str | None = None  # -o: a file, or '-' for stdout; with several models the directory of the reports
    templates: Path | None = None  # report templates overriding the shipped ones (--templates)
    quiet: bool = False  # no progress and no "wrote ..." lines (-q)
    baseline: Path | None = None  # an earlier JSON report to compare with (--baseline)
    fail_on_new: bool = False  # gate only what changed since the baseline
    handoff: Path | None = None  # the folder of the custom-dev hand-offs (--handoff)
    patch: Path | None = None  # the unified diff of the safe rewrites of the project's files (--patch)

    def __post_init__(self) -> None:
        if self.fail_on_new and self.baseline is None:
            raise UsageError("needs --baseline (the report whatever is new is compared with)", option="--fail-on-new")
