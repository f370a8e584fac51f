"""vllm-ascend's supported-models page as data (data/vllm_ascend_models.json, from tools/kb_served_models.py): the
rows that name a model architecture, per product."""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from opassess.datafile import read_generated
from opassess.resources import data_path

TOOL = "tools/kb_served_models.py"
# the Hugging Face head a class name ends with, left out to compare it with the page's model names
_HEAD = re.compile(r"(For[A-Z]\w*|LMHeadModel|Model)$")


def fold(name: str) -> str:
    """The page's name folding (tools/kb_served_models.py): 'Qwen3-Dense' -> 'qwen3dense'."""
    return re.sub(r"[\s._\-]+", "", name).lower()


def architecture_key(class_name: str) -> str:
    """'Qwen3ForCausalLM' -> 'qwen3'; 'DeepseekV3ForCausalLM' -> 'deepseekv3'; 'BertModel' -> 'bert'."""
    return fold(_HEAD.sub("", class_name) or class_name)


@dataclass(frozen=True)
class ServedModel:
    """One row of the page."""

    model: str
    names: tuple[str, ...]
    support: str  # supported / experimental / unsupported / untested (the page's legend)
    hardware: str
    products: tuple[str, ...]  # products.toml kernel columns
    line: int


@dataclass(frozen=True)
class ServedModels:
    rows: tuple[ServedModel, ...]
    repo: str
    path: str
    commit: str
    url: str

    def cite(self, line: int | None = None) -> str:
        return f"{self.repo}@{self.commit[:12]}:{self.path}" + (f":L{line}" if line else "")

    def named(self, class_name: str) -> tuple[ServedModel, ...]:
        """The rows that name this architecture (its class name without the head, folded), in page order."""
        key = architecture_key(class_name)
        return tuple(r for r in self.rows if key in r.names)

    @classmethod
    def of(cls, data: Any, path: Path) -> ServedModels:
        rows = tuple(ServedModel(r["model"], tuple(r["names"]), r["support"], r["hardware"], tuple(r["products"]),
                                 int(r["line"])) for r in data["rows"])
        return cls(rows, data["repo"], data["path"], data["commit"], data["url"])


@lru_cache(maxsize=1)
def load_served_models(path: Path | None = None) -> ServedModels:
    return read_generated(path or data_path("vllm_ascend_models.json"), "served-models table", TOOL,
                          ServedModels.of)
