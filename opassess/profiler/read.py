"""Read a profiler export into Kernel records: torch_npu's kernel_details.csv, msprof's op_summary_*.csv, or a
PROF_* / *_ascend_pt folder holding them.

Both header variants are accepted (op_summary's `Op Name`, `Task Type`, `Task Duration(us)`, `Block Num`; the
torch_npu renames `Name`, `Accelerator Core`, `Duration(us)`, `Block Dim`): the spellings per role come from the
knowledge base. At the default level (Level0) shapes, types and placement read `N/A`: they become None. Every file is
read through the strict capped reader (datafile.read_text): a FIFO, a device, a file over the size limit or one
that is not UTF-8 is one ProfileError naming it, as is a CSV the csv module refuses (NUL bytes, a field too big).
"""
from __future__ import annotations

import csv
import io
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from ..datafile import check_regular, read_text
from ..errors import OpassessError
from ..kb.kernels import normalize_dtype
from .facts import ProfilerFacts

CSV_LIMIT = 256 * 1024 * 1024  # bytes per CSV file
FIELD_LIMIT = 1 << 20  # characters per CSV cell
WALK_LIMIT = 20000  # directory entries looked at when a folder is given
WALK_DEPTH = 6
MAX_DURATION_US = 1e12  # one kernel launch longer than this (11.6 days) is no measurement
NOT_AVAILABLE = ("N/A", "NA", "", "-")
KERNEL_FILE = "kernel_details.csv"
NO_PMU: Mapping[str, float] = MappingProxyType({})  # shared by every launch without PMU columns
OP_SUMMARY = re.compile(r"op_summary(_\d+)*\.csv$")


class ProfileError(OpassessError):
    """A profiler export that cannot be read or is not one (one line naming the file)."""


Shape = tuple[int, ...] | None


@dataclass(frozen=True, slots=True)  # slots: an export of a few hundred MB holds millions of launches
class Kernel:
    """One kernel launch of the export."""

    name: str
    type: str | None
    placement: str | None
    duration_us: float
    step: str | None = None
    device: str | None = None  # Device_id: a multi-device export holds each device's kernels
    input_shapes: tuple[Shape, ...] | None = None  # None: N/A (Level0) or the column is absent
    input_dtypes: tuple[str | None, ...] | None = None
    op_state: str | None = None
    pmu: Mapping[str, float] = field(default_factory=dict)
    source: str = ""  # file:line


@dataclass(frozen=True)
class ProfileData:
    """The kernels of one export, the files read and what their headers offered."""

    path: str
    files: tuple[str, ...]
    variants: tuple[str, ...]  # per file: 'kernel_details' or 'op_summary'
    kernels: tuple[Kernel, ...]
    columns: frozenset[str]  # every column of every file
    level0: bool  # shapes and placement read N/A everywhere (the default profiler level)


def find_files(path: Path) -> list[Path]:
    """The export files under `path` (a file, or a folder walked without following links, bounded): the torch_npu
    kernel_details.csv files when there are any (they hold op_summary's rows, so reading both would count every
    kernel twice), else msprof's op_summary_*.csv."""
    if not path.exists() and not path.is_symlink():
        raise ProfileError(f"{path}: no such file or folder")
    if not path.is_dir():
        check_regular(path, "profiler export", ProfileError)
        return [path]
    kernels, summaries, seen = [], [], 0
    for root, dirs, files in os.walk(path, followlinks=False):
        depth = len(Path(root).relative_to(path).parts)
        seen += len(dirs) + len(files)
        if seen > WALK_LIMIT:
            raise ProfileError(f"{path}: more than {WALK_LIMIT} entries: give the PROF_* or *_ascend_pt folder itself")
        if depth >= WALK_DEPTH:
            dirs[:] = []
        dirs.sort()
        for name in sorted(files):
            if name == KERNEL_FILE:
                kernels.append(Path(root) / name)
            elif OP_SUMMARY.match(name):
                summaries.append(Path(root) / name)
    found = kernels or summaries
    if not found:
        raise ProfileError(f"{path}: no {KERNEL_FILE} or op_summary_*.csv inside (a torch_npu *_ascend_pt or an "
                           f"msprof PROF_* folder holds them)")
    return found


@lru_cache(maxsize=4096)  # the same few shape strings repeat on every step: one parsed tuple each
def parse_shapes(text: str | None) -> tuple[Shape, ...] | None:
    """'"1,3,224,224;64,3,7,7"' -> ((1, 3, 224, 224), (64, 3, 7, 7)); an empty part (a scalar) -> (); N/A -> None."""
    if text is None:
        return None
    shapes: list[Shape] = []
    for part in text.strip().strip('"').split(";"):
        part = part.strip()
        try:
            shapes.append(tuple(int(d) for d in part.split(",")) if part else ())
        except ValueError:
            shapes.append(None)
    return tuple(shapes)


@lru_cache(maxsize=4096)
def parse_dtypes(text: str | None) -> tuple[str | None, ...] | None:
    """'FLOAT16;INT64;DT_BF16' -> ('float16', 'int64', 'bfloat16')."""
    if text is None:
        return None
    return tuple(normalize_dtype(part.strip().lower().removeprefix("dt_")) if part.strip() else None
                 for part in text.strip().strip('"').split(";"))


def _cell(row: list[str], index: int | None) -> str | None:
    if index is None or index >= len(row):
        return None
    value = row[index].strip()
    return None if value in NOT_AVAILABLE else sys.intern(value)  # names, types, steps repeat on every step


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    text = read_text(path, "profiler export", ProfileError, limit=CSV_LIMIT)
    if "\x00" in text:
        raise ProfileError(f"{path}: not a CSV profiler export: it holds NUL bytes (a binary file)")
    old = csv.field_size_limit(FIELD_LIMIT)
    try:
        yield from enumerate(csv.reader(io.StringIO(text, newline="")), 1)
    except csv.Error as exc:
        raise ProfileError(f"{path}: not a CSV profiler export: {exc}") from exc
    finally:
        csv.field_size_limit(old)


def read_file(path: Path, facts: ProfilerFacts) -> tuple[str, list[str], list[Kernel]]:
    """The variant, header and kernels of one CSV export."""
    rows = _rows(path)
    try:
        _, header = next(rows)
    except StopIteration:
        raise ProfileError(f"{path}: empty file, not a profiler export") from None
    header = [column.strip() for column in header]
    index: dict[str, int] = {}
    for position, column in enumerate(header):
        role = facts.role_of(column)
        if role is not None and role not in index:
            index[role] = position
    for needed in ("name", "duration_us"):
        if needed not in index:
            raise ProfileError(f"{path}: not a profiler export: no {' or '.join(repr(s) for s in facts.roles[needed])} "
                               f"column in its header")
    variant = "kernel_details" if header[index["name"]] != facts.roles["name"][0] else "op_summary"
    pmu_columns = {position: column for position, column in enumerate(header) if column in facts.pmu}
    kernels = []
    for number, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        name = _cell(row, index["name"])
        duration = _number(_cell(row, index["duration_us"]))
        if name is None or duration is None or duration < 0:
            raise ProfileError(f"{path}:{number}: a kernel row without a name or a duration (read {row[:3]!r})")
        if duration > MAX_DURATION_US:  # summed, such values reach inf, and a JSON report cannot hold it
            raise ProfileError(f"{path}:{number}: a kernel duration of {duration:g} us is not a measurement (over "
                               f"{MAX_DURATION_US:g} us, 11.6 days)")
        pmu = {column: value for position, column in pmu_columns.items()
               if (value := _number(_cell(row, position))) is not None} or NO_PMU
        kernels.append(Kernel(
            name=name, type=_cell(row, index.get("type")), placement=_cell(row, index.get("placement")),
            duration_us=duration, step=_cell(row, index.get("step")), device=_cell(row, index.get("device")),
            input_shapes=parse_shapes(_cell(row, index.get("input_shapes"))),
            input_dtypes=parse_dtypes(_cell(row, index.get("input_dtypes"))),
            op_state=_cell(row, index.get("op_state")), pmu=pmu, source=f"{path.name}:{number}",
        ))
    return variant, header, kernels


def read_profile(path: Path, facts: ProfilerFacts) -> ProfileData:
    """Every kernel of the export at `path`."""
    files = find_files(path)
    variants, kernels, columns = [], [], set()
    for file in files:
        variant, header, found = read_file(file, facts)
        variants.append(variant)
        kernels += found
        columns.update(header)
    if not kernels:
        raise ProfileError(f"{path}: no kernel row, only a header: the profiler recorded no step (profile at least one "
                           f"step that runs the model)")
    level0 = bool(kernels) and all(k.placement is None and k.input_shapes is None for k in kernels)
    return ProfileData(str(path), tuple(str(f) for f in files), tuple(variants), tuple(kernels), frozenset(columns),
                       level0)
