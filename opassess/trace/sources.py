"""Source lines: the user's 'file:line' behind an operator call, from live frames or a recorded stack trace."""
from __future__ import annotations

import functools
import sys
import traceback
from types import FrameType

from ..load import display_path, is_library_file, user_frame


def source_from_stack_trace(stack_trace: str | None) -> str | None:
    """The innermost user frame of a stack trace FX or torch.export recorded on a node, as 'file:line'."""
    if not stack_trace:
        return None
    frames = []
    for line in stack_trace.splitlines():
        line = line.strip()
        if line.startswith('File "'):
            filename, _, rest = line[6:].partition('", line ')
            lineno = rest.split(",")[0]
            if lineno.isdigit():
                frames.append(traceback.FrameSummary(filename, int(lineno), ""))
    return user_frame(frames)


def forward_stack_trace() -> str | None:
    """The live stack from the outermost `forward` call in, formatted as a traceback ('File "f", line n, in name'
    lines, without the source text), what FX's record_stack_traces keeps on a node; None outside any forward."""
    frames = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()
    first = next((i for i, f in enumerate(frames) if f.f_code.co_name == "forward"), None)
    if first is None:
        return None
    return "\n".join(f'File "{f.f_code.co_filename}", line {f.f_lineno}, in {f.f_code.co_name}'
                     for f in frames[first:])


def sources_from_frames() -> tuple[str | None, str | None]:
    """(source, project) for an operator call, from one walk of the live frames (run for every operator call).
    source: 'file:line' of the innermost caller outside torch and opassess. project: when that source lies in an
    installed package (site-packages / dist-packages), the innermost caller in the project itself (outside torch,
    opassess and installed packages), so a report can place the call in the project's code; else None."""
    # the caller (an opassess hook) is skipped below with the rest of torch and opassess
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _is_library_filename(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return None, None
    source = f"{display_path(frame.f_code.co_filename)}:{frame.f_lineno}"
    if not is_installed(source):
        return source, None
    frame = frame.f_back
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _is_library_filename(filename) and not is_installed(filename):
            return source, f"{display_path(filename)}:{frame.f_lineno}"
        frame = frame.f_back
    return source, None


def project_from_stack_trace(stack_trace: str | None) -> str | None:
    """The innermost project frame (outside installed packages too) of a recorded stack trace, as 'file:line'."""
    if not stack_trace:
        return None
    kept = [line for line in stack_trace.splitlines() if not is_installed(line)]
    return source_from_stack_trace("\n".join(kept))


def is_installed(path: str | None) -> bool:
    """True for a file inside an installed package (site-packages / dist-packages)."""
    return path is not None and ("site-packages" in path or "dist-packages" in path)


@functools.lru_cache(maxsize=4096)
def _is_library_filename(filename: str) -> bool:
    return is_library_file(filename)
