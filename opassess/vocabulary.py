"""The words opassess's records, data files and reports share, each stated once: the migration categories,
the confidence levels and the operator kinds.

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


# What a capture ran: one forward pass (the default), or a whole training step (--train).
FORWARD_STEP, TRAIN_STEP = "forward", "train"
CAPTURE_STEPS: tuple[str, ...] = (FORWARD_STEP, TRAIN_STEP)
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
# How far a verdict can be trusted, weakest first: min(..., key=CONFIDENCES.index) is the weakest of several.
CONFIDENCES: tuple[str, ...] = ("low", "medium", "high")
