"""The reason codes: every `Reason.code` the classifier can give, each registered once with what it means.

As mypy's `ErrorCode` and ruff's rule codes: one object per code, known in one registry (`REASONS`), a second
registration of a code refused. The classifier writes the plain code into its `Reason` records (records and JSON keep
a string); the data files that name codes (weights.toml's `reason_codes`, `limit_reasons`, `ai_cpu_reason_codes` and
its `[signals.*.reasons]` tables) are checked against this registry when they are read; the JSON schema's enums, the
exclusion trail (`ClassifiedOp.exclusions`), `opassess explain CODE` and docs/reasons.md all come from it.

It sits beside the records (not inside classify/) because the records, the scoring and the reports read it too.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .vocabulary import Category


@dataclass(frozen=True)
class ReasonCode:
    """One reason code: its summary, the hardest category a reason of this code can decide (None: it only
    informs), and whether it belongs to the exclusion trail (what was checked and ruled out)."""

    code: str
    summary: str
    decides: Category | None = None
    exclusion: bool = False

    def __str__(self) -> str:
        return self.code


REASONS: dict[str, ReasonCode] = {}


def reason_code(code: str, summary: str, *, decides: Category | None = None, exclusion: bool = False) -> ReasonCode:
    """Register `code` once and return its record; a second registration of the same code is a ValueError."""
    if code in REASONS:
        raise ValueError(f"reason code {code!r} is registered twice")
    if not code or code != code.strip().lower() or " " in code:
        raise ValueError(f"reason code {code!r}: expected lower-case words joined by '-'")
    REASONS[code] = record = ReasonCode(code, summary, decides, exclusion)
    return record


def unknown_codes(codes: Iterable[str]) -> list[str]:
    """The entries of `codes` (an iterable of names) that are not registered reason codes, in order."""
    return [code for code in codes if code not in REASONS]


def format_reason(record: ReasonCode) -> str:
    """`opassess explain CODE` for a reason code: its summary, what it can decide, whether it is an exclusion."""
    decides = (f"can make an operator {record.decides.value}" if record.decides is not None
               else "informs; decides no category")
    trail = "; listed in the exclusion trail (checked and ruled out)" if record.exclusion else ""
    return f"{record.code} (opassess reason code): {record.summary}\n  {decides}{trail}"


_DIRECT, _PARAM, _CUSTOM = Category.DIRECT, Category.PARAM_CONVERTED, Category.CUSTOM_DEV

# ----------------------------------------------------------------- ATen kernels (classify/operators.py)
KERNEL = reason_code("kernel", "an ATen op the operator dispatched has an NPU kernel for the torch version")
VIEW_OP = reason_code("view-op", "an ATen op that runs on every backend (a view or CompositeExplicitAutograd "
                      "kernel): nothing to port", exclusion=True)
DECOMPOSES = reason_code("decomposes", "no NPU kernel of its own, but its composite kernel (as the dispatcher "
                         "runs it) calls only ops that have one: direct, with extra kernel launches", decides=_DIRECT,
                         exclusion=True)
NO_KERNEL = reason_code("no-kernel", "an ATen op with no NPU kernel for the torch version and no decomposition: it "
                        "would fall back to the CPU (unless the API page documents the operator as supported)",
                        decides=_CUSTOM)
BINDING = reason_code("binding", "an ATen op torch_npu does not register whose CANN aclnn kernel is documented for the "
                      "product: an op-plugin registration to write (a binding, not a new kernel)", decides=_PARAM)
HOST_OP = reason_code("host-op", "the operator dispatched no ATen op (Python-level indexing or metadata): nothing "
                      "runs on the device", decides=_DIRECT, exclusion=True)
HOST_FACTORY = reason_code("host-factory", "a factory given Python data (torch.tensor([...])): filled on the host and "
                          "copied to the device, no device kernel computes it, so an API page's product mark does not "
                          "decide; the ATen ops it dispatched do", exclusion=True)
REPLACEMENT = reason_code("replacement", "a torch_npu replacement: required (another signature), optional (a fused "
                          "kernel) or for when the model cannot stay within a limit", decides=_PARAM, exclusion=True)

# ----------------------------------------------------------------- API pages and kernel docs (kb/evidence.py)
API_SUPPORTED = reason_code("api-supported", "the torch_npu API page documents the operator as supported on the "
                            "target product")
API_UNSUPPORTED = reason_code("api-unsupported", "the torch_npu API page marks the operator unsupported on the "
                              "target product, and the kernel docs do not list the product", decides=_CUSTOM)
API_UNDOCUMENTED = reason_code("api-undocumented", "the API page has no support mark for the product: the "
                               "operator is judged by its ATen kernels")
KERNEL_UNSUPPORTED = reason_code("kernel-unsupported", "the kernel docs mark the kernel not supported on the "
                                 "product and it has no aclop fallback", decides=_CUSTOM)
KERNEL_PRODUCT = reason_code("kernel-product", "the kernel docs and the API page disagree about the product (or "
                             "the kernel falls back to the aclop path): the kernel facts decide, the confidence is "
                             "lowered", exclusion=True)

# ----------------------------------------------------------------- limits of one signature
DTYPE = reason_code("dtype", "an input dtype the NPU kernel (or the API) does not accept on the product: a cast "
                    "and an accuracy check", decides=_PARAM)
DTYPE_CAST = reason_code("dtype-cast", "the NPU computes or returns another dtype than the model expects (float64 "
                         "as float32, int64 as int32): it works, the results must be checked", decides=_PARAM)
KERNEL_PARAM = reason_code("kernel-param", "the API page calls a parameter unsupported but the aclnn API of the kernel "
                           "that ran takes it: the kernel facts decide, the confidence is lowered", exclusion=True)
KERNEL_DTYPE = reason_code("kernel-dtype", "the kernel docs accept a dtype the API page does not list: the kernel "
                           "facts decide", exclusion=True)
HOST_COPY = reason_code("host-copy", "a dtype the API page leaves out of its list, for an operator whose only kernel "
                        "is torch_npu's own device-to-host copy (Tensor.item): no CANN kernel limits it, so it runs; "
                        "not verified, confidence low", exclusion=True)
OPTIONS_ONLY = reason_code("options-only", "the operator borrows only dtype and device from its input, so a dtype "
                           "limit on that input does not apply", exclusion=True)
PARAM_LIMIT = reason_code("param-limit", "a parameter value outside a documented limit (or an argument a library "
                          "route drops)", decides=_PARAM)
SHAPE_LIMIT = reason_code("shape-limit", "an input rank outside the documented limit", decides=_PARAM)
CPU_FALLBACK = reason_code("cpu-fallback", "the API runs on the CPU: always (custom-dev) or for some inputs (a "
                           "performance risk)", decides=_CUSTOM)

# ----------------------------------------------------------------- what is judged (classify/scope.py)
COMPOSITE = reason_code("composite", "torch_npu runs this composite whole (rules.toml: composite); the "
                        "decomposition traced here is not judged", exclusion=True)
TAKEN_WHOLE = reason_code("taken-whole", "the op the model called has an NPU kernel and torch_npu runs it whole; "
                          "its CPU/meta decomposition is not judged", exclusion=True)
CPU_ONLY_DECOMPOSITION = reason_code("cpu-only-decomposition", "an ATen op seen only in the CPU decomposition of an "
                                     "op the NPU runs whole: not judged", exclusion=True)
FUSED_STEP = reason_code("fused-step", "an optimizer step the NPU can also run as one fused kernel, and the setting "
                         "that asks for it")
NATURE = reason_code("nature", "an operator family whose parameters map onto a CANN operator's attributes; this "
                     "model's values are within the documented limits")
NOT_IN_KB = reason_code("not-in-kb", "nothing in the knowledge base speaks for the operator: custom-dev, confidence "
                        "low", decides=_CUSTOM)
BACKWARD = reason_code("backward", "with --train: the ATen ops the operator's backward dispatched all run on the NPU "
                       "(or inside a composite taken whole)")
BACKWARD_NO_KERNEL = reason_code("backward-no-kernel", "with --train: the operator's backward dispatches an ATen op "
                                 "with no NPU kernel (param-converted when a replacement brings its own backward)",
                                 decides=_CUSTOM)

# ----------------------------------------------------------------- a project's own ops (classify/project.py)
EXTENSION = reason_code("extension", "a function of a compiled C++ extension: rebuilt against torch_npu, its device "
                        "kernels rewritten in Ascend C", decides=_CUSTOM)
CUSTOM_OP = reason_code("custom-op", "a project-defined operator (torch.library op, autograd.Function) whose kernels "
                        "do not run on the NPU", decides=_CUSTOM)
REGISTER_COMPOSITE = reason_code("register-composite", "a project-defined operator with kernels for other devices only "
                                 "whose reference implementation runs only ops the NPU runs: register that composite "
                                 "for the NPU (PrivateUse1); a fused kernel is the performance option, priced apart",
                                 decides=_PARAM)
AUTOGRAD_FUNCTION = reason_code("autograd-function", "a custom autograd.Function whose forward dispatches only ops "
                                "with NPU kernels; its hand-written backward is judged when traced, else to verify",
                                decides=_PARAM)

# ----------------------------------------------------------------- collectives (classify/collective.py)
HCCL = reason_code("hccl", "a torch.distributed collective the model called, judged against the HCCL facts "
                   "(hccl_distributed_support.tsv): the collective and the tensor dtypes HCCL takes on the target",
                   decides=_PARAM)

# ----------------------------------------------------------------- stand-ins and source sites (classify/library.py)
STAND_IN = reason_code("stand-in", "a GPU-only library call, a Triton launch or a function of the project's own "
                       "extension that is not built here, recorded by a stand-in, not run: its arguments were seen, "
                       "not what the kernel does")
TRITON_KERNEL = reason_code("triton-kernel", "a Triton kernel: it needs triton-ascend and a check of its body; "
                            "counted as a kernel to port", decides=_CUSTOM)
LIBRARY_ROUTE = reason_code("library-route", "the third-party kernel table's route for a library call (an NPU build "
                            "of the library, a torch_npu API, or none)", decides=_CUSTOM)
SOURCE_SITE = reason_code("source-site", "the source scan found the same call: the site's verdict decides and its "
                          "effort is counted there, once", decides=_CUSTOM)

# ---------------------------------------------------------- results from the user's hardware (classify/verified.py)
VERIFIED_PASSED = reason_code("verified-passed", "the verification harness ran this signature on the user's NPU and it "
                              "matched the CPU (the overlay's verified.json): direct, high confidence (through the "
                              "replacement the report recommends: its category kept, high confidence)",
                              decides=_DIRECT)
VERIFIED_FAILED = reason_code("verified-failed", "the verification harness failed this signature on the user's NPU "
                              "(the overlay's verified.json, the failure quoted): custom-dev", decides=_CUSTOM)
VERIFIED_ORIGINAL = reason_code("verified-original", "the verification harness ran the operator itself on the user's "
                                "NPU where the report recommends a replacement, and it failed: expected of an "
                                "operator without an NPU kernel, it decides nothing (the replacement's result does)")

# Reason codes of the exclusion trail: what was checked and ruled out (ClassifiedOp.exclusions).
EXCLUSION_CODES = frozenset(code for code, record in REASONS.items() if record.exclusion)
