"""Portfolio manifests: a TOML file naming each model with its own settings (target, entry, inputs, dtype, label).

```toml
[[model]]
target = "detector.py"          # a model file (relative to the manifest) or package.module:factory
name = "detector"               # optional: the stem of its report files (default: the file stem)
entry = "build_detector"        # optional, as --entry
input_shape = ["1,3,640,640"]   # optional, as --input-shape (one per positional input)
input_dtype = "float32"         # optional, as --input-dtype
dtype = "float16"               # optional, as --dtype: each model its own precision
label = "detector"              # optional, as --label
```

Read strictly (datafile.TomlTable): an unknown key is refused with the file and the key named. The settings
replace the command line's for that model only.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from ..datafile import TomlTable
from ..errors import ConfigError
from ..vocabulary import HF_TASKS

_DTYPES = ("float32", "float16", "bfloat16")


def is_manifest(target: str) -> bool:
    """A target naming a portfolio manifest: an existing .toml that is not a folder (a FIFO or device named so is a
    manifest too, for the reader to refuse in one line)."""
    return target.endswith(".toml") and Path(target).exists() and not Path(target).is_dir()


def _file_name(item: TomlTable) -> str | None:
    """The optional `name`: the stem of report files, so one path component and nothing a terminal acts on."""
    name = item.string("name", None)
    if name is None:
        return None
    if not name or name in (".", "..") or "/" in name or "\\" in name or any(
            ord(c) < 32 or ord(c) == 127 for c in name):
        raise item.error("name", f"{name!r} is not a file name (one path component: no '/', '..', absolute path or "
                                 f"control character)")
    if len(name.encode()) > 200:
        raise item.error("name", f"longer than 200 bytes ({len(name.encode())})")
    return name


def read_manifest(path: Path) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(target, name or None, scan-option overrides) per [[model]] of the manifest, in file order."""
    from ..load import parse_shape

    root = TomlTable.of_file(path, "portfolio manifest", ConfigError)
    models: list[tuple[str, str | None, dict[str, Any]]] = []
    for item in root.tables("model"):
        target = item.string("target")
        local = path.parent / target
        if target.endswith(".py") or local.exists():
            target = str(local)
        overrides: dict[str, Any] = {}
        for key, option in (("entry", "entry"), ("input_dtype", "input_dtype"), ("label", "label")):
            value = item.string(key, None)
            if value is not None:
                overrides[option] = value
        dtype = item.string("dtype", None)
        if dtype is not None:
            if dtype not in _DTYPES:
                raise item.error("dtype", f"expected one of {', '.join(_DTYPES)}, got {dtype!r}")
            overrides["dtype"] = None if dtype == "float32" else dtype
        for key in ("seq_len", "batch_size"):  # a Hugging Face model folder's inputs
            number = item.integer(key, None)
            if number is not None:
                if number < 1:
                    raise item.error(key, f"expected a positive integer, got {number}")
                overrides[key] = number
        task = item.string("task", None)
        if task is not None:
            if task not in HF_TASKS:
                raise item.error("task", f"expected one of {', '.join(HF_TASKS)}, got {task!r}")
            overrides["task"] = task
        shapes = item.strings("input_shape", None)
        if shapes is not None:
            overrides["input_shapes"] = tuple(parse_shape(s) for s in shapes)
        models.append((target, _file_name(item), overrides))
        item.finish()
    root.finish()
    if not models:
        raise ConfigError(f"{path}: no [[model]] in the portfolio manifest")
    return models
