"""The words opassess's records, data files and reports share, each stated once: the migration categories,
the confidence levels, the capture steps, the cost bases and the operator kinds.

Capture method names come from the capture registry (`opassess.trace`), report formats and their file
extensions from the reporter registry (`opassess.report.registry`), products and torch_npu versions from
the knowledge base; the JSON schema's enums are tested against all of them.
"""
from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Category(StrEnum):
    """How hard an operator is to move to the NPU, from easiest to hardest.

    A `StrEnum`: `Category.DIRECT == "direct"`, so records, JSON and templates keep plain strings.
    """

    DIRECT = "direct"
    PARAM_CONVERTED = "param-converted"
    CUSTOM_DEV = "custom-dev"

    @property
    def rank(self) -> int:
        """0 for direct, 1 for param-converted, 2 for custom-dev: a higher rank is more work."""
        return _RANK[self]

    @classmethod
    def parse(cls, text: str) -> Category:
        """The category named `text`; ValueError naming the known ones otherwise."""
        try:
            return cls(text)
        except ValueError:
            raise ValueError(f"{text!r} is not one of {', '.join(CATEGORIES)}") from None

    @classmethod
    def worst(cls, categories: Iterable[str], default: Category | None = None) -> Category:
        """The hardest of `categories` (direct when there are none and no default is given)."""
        found = [cls(c) for c in categories]
        if not found:
            return default if default is not None else cls.DIRECT
        return max(found, key=_RANK.__getitem__)


_RANK = {category: index for index, category in enumerate(Category)}

# The plain words in rank order, for data files, CLI choices and JSON-schema enums.
CATEGORIES: tuple[str, ...] = tuple(category.value for category in Category)


def category_rank(text: str | None) -> int:
    """Rank of a category word as found in a report (-1 for none or an unknown word, e.g. from a newer version)."""
    try:
        return Category(text).rank if text else -1
    except ValueError:
        return -1


class CaptureStep(StrEnum):
    """What a capture ran: one forward pass (the default), or a whole training step (--train)."""

    FORWARD = "forward"
    TRAIN = "train"


FORWARD_STEP, TRAIN_STEP = CaptureStep.FORWARD, CaptureStep.TRAIN
CAPTURE_STEPS: tuple[str, ...] = tuple(step.value for step in CaptureStep)
NO_CAPTURE = "none"  # Capture.method of `opassess source`: a source scan alone, no model loaded or captured
# Operator kinds as the trace names them; "optimizer" only in a training step.
# "library": a call of a GPU-only kernel library or a Triton launch, recorded by a stand-in (opassess/standins).
OPERATOR_KINDS: tuple[str, ...] = ("module", "function", "method", "custom", "extension", "aten", "optimizer",
                                   "library")
# The kinds of a project's own ops: torch.library, autograd.Function, C++ extensions.
PROJECT_KINDS: tuple[str, ...] = ("custom", "extension")
# Graph-mode readiness (opassess.graphmode): "capture" finds the breaks in the dispatched calls (the default),
# "dynamo" also runs torch._dynamo on the model in the worker, "off" skips the analysis (--no-graph-mode).
GRAPH_MODES: tuple[str, ...] = ("capture", "dynamo", "off")
# The NPU graph back-ends, each stated once: torch.compile with torch_npu's inductor (the default); aclgraph capture
# through torchair's npugraph_ex (the npugraphs back-end shares its capture rules); torchair's GE graph (max-autotune).
GRAPH_BACKENDS: tuple[str, ...] = ("inductor", "npugraph_ex", "ge")
# The routes beyond eager training `scan --route` checks, and the ONNX exporters (--exporter, besides "auto").
ROUTES: tuple[str, ...] = ("onnx", "vllm-ascend")
EXPORTERS: tuple[str, ...] = ("dynamo", "torchscript")


class Confidence(StrEnum):
    """How far a verdict can be trusted, weakest first: `Confidence.weakest(...)` is the weakest of several."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"

    @classmethod
    def weakest(cls, confidences: Iterable[str], default: Confidence | None = None) -> Confidence:
        """The weakest of `confidences` (`default` when there are none; ValueError when there are none and no
        default, or for a word that is not a confidence)."""
        found = [cls(c) for c in confidences]
        if not found:
            if default is None:
                raise ValueError("no confidence to take the weakest of")
            return default
        return min(found, key=_CONFIDENCE_RANK.__getitem__)

    @classmethod
    def of(cls, text: str | None) -> Confidence | None:
        """The confidence a report names (None for none, or an unknown word, e.g. from a newer version)."""
        try:
            return cls(text) if text else None
        except ValueError:
            return None


_CONFIDENCE_RANK = {confidence: index for index, confidence in enumerate(Confidence)}
CONFIDENCES: tuple[str, ...] = tuple(confidence.value for confidence in Confidence)


class CostBasis(StrEnum):
    """How an operator's effort is costed (opassess/score/cost.py): a closed set, the schema's cost enum."""

    ZERO_COST = "zero-cost"  # puts no work on the device: views, metadata, nothing dispatched
    VALIDATION_BLOCK = "validation-block"  # direct, a kernel, no tripped limit: a share of the validation block
    PER_OPERATOR = "per-operator"  # its category's range
    SOURCE_FINDING = "source-finding"  # a library call the source scan found at the same line: costed there, once
    DECISION = "decision"  # covered by model-level decisions (score/decisions.py): their checks plus priced changes
    PRICED_CHANGE = "priced-change"  # its only limits are parameter changes priced by tier ([changes])


# --task for a Hugging Face model folder: the transformers Auto class each task builds (the config's `architectures`
# decide when it is not given).
HF_TASKS: dict[str, str] = {
    "causal-lm": "AutoModelForCausalLM",
    "seq-cls": "AutoModelForSequenceClassification",
    "masked-lm": "AutoModelForMaskedLM",
    "seq2seq-lm": "AutoModelForSeq2SeqLM",
    "image-classification": "AutoModelForImageClassification",
    "image-text-to-text": "AutoModelForImageTextToText",
    "speech-seq2seq": "AutoModelForSpeechSeq2Seq",
    "ctc": "AutoModelForCTC",
    "base": "AutoModel",
}
