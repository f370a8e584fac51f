"""Native sources built once per dtype: a family of files whose names differ only by dtype words
(selective_scan_fwd_fp16.cu, _bf16.cu, _fp32.cu; selective_scan_bwd_fp32_real.cu, _fp32_complex.cu). The default
configuration runs one dtype with real weights: the family's other members are not reached."""
from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Any

# a word of a file name -> the dtype it builds for ("real" and "complex": the weights' kind)
DTYPE_WORDS = {"fp16": "float16", "half": "float16", "f16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16",
               "fp32": "float32", "f32": "float32", "float32": "float32", "float": "float32", "fp64": "float64",
               "f64": "float64", "double": "float64", "float16": "float16", "float64": "float64",
               "complex": "complex", "real": "real"}
DTYPE_FIELDS = ("dtype", "torch_dtype", "params_dtype")  # a config field naming the model's dtype
DEFAULT_DTYPE = "float32"


def config_dtype(fields: Mapping[str, Any]) -> str:
    """The dtype a config's defaults name (`dtype: str = "bfloat16"`), float32 when none does."""
    for name in DTYPE_FIELDS:
        value = fields.get(name)
        if isinstance(value, str):
            word = value.removeprefix("torch.").lower()
            if DTYPE_WORDS.get(word, "") not in ("", "real", "complex"):
                return DTYPE_WORDS[word]
    return DEFAULT_DTYPE


def _words(stem: str) -> list[str]:
    return [w for w in re.split(r"[_.\-]", stem) if w]


def other_dtypes(files: Iterable[str], dtype: str) -> list[str]:
    """The files built for another dtype than `dtype` (or for complex weights), where their family has a member for
    `dtype`; a family without one is kept whole (which one runs cannot be told)."""
    families: dict[tuple, list[tuple[str, set[str]]]] = defaultdict(list)
    for file in files:
        path = PurePosixPath(file)
        words = _words(path.stem)
        kinds = {DTYPE_WORDS[w.lower()] for w in words if w.lower() in DTYPE_WORDS}
        if kinds:
            rest = tuple(w for w in words if w.lower() not in DTYPE_WORDS)
            families[(path.parent.as_posix(), rest, path.suffix)].append((file, kinds))
    out: list[str] = []
    for members in families.values():
        keep = [file for file, kinds in members if kinds <= {dtype, "real"}]
        if len(members) > 1 and keep:
            out += [file for file, _ in members if file not in keep]
    return sorted(out)
