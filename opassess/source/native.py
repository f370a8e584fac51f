"""Light scan of C++/CUDA sources (.cu, .cuh, .cpp, .cc, .h, .hpp): kernels, bindings and GPU library calls.

A tokenizer-lite, not a compiler: comments and string/char literals are blanked first (line numbers kept),
then regexes find `__global__` functions (their body found by brace matching), `PYBIND11_MODULE`,
`TORCH_LIBRARY*`, and calls whose names start with a CUDA runtime / cuBLAS / cuDNN / NCCL / cuRAND /
cuSPARSE / cuFFT prefix, plus `<<<...>>>` launches. Limits: macros are not expanded (a kernel declared
through a macro is missed), `#if` branches are all read, templates and overloads count once per definition,
and a brace inside a raw string literal R"(...)" can shift a kernel's measured length.
"""
from __future__ import annotations

import re

from .records import KernelSize, Site

NATIVE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".hh")
# Call-name prefixes of the GPU libraries, with the library each one belongs to.
API_PREFIXES = (("cublasLt", "cuBLAS"), ("cublas", "cuBLAS"), ("cudnn", "cuDNN"), ("nccl", "NCCL"),
                ("curand", "cuRAND"), ("cusparse", "cuSPARSE"), ("cufft", "cuFFT"), ("cuda", "CUDA runtime"))
_API_CALL = re.compile(r"\b((?:cublasLt|cublas|cudnn|nccl|curand|cusparse|cufft|cuda)[A-Z]\w*)\s*\(")
_GLOBAL = re.compile(r"\b__global__\b")
_NAME_BEFORE_PAREN = re.compile(r"(\w+)\s*\($")
_BINDINGS = re.compile(r"\b(PYBIND11_MODULE|TORCH_LIBRARY(?:_IMPL|_FRAGMENT)?)\s*\(\s*(\w*)")
_LAUNCH = re.compile(r"\b(\w+)\s*<<<")
_BLANK = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank_comments_and_strings(text: str) -> str:
    """The text with comments and string/char literals replaced by spaces (newlines kept, so lines still match)."""
    return _BLANK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _body_end(text: str, start: int) -> int:
    """Offset just past the brace block that opens at or after `start` (end of text when unbalanced)."""
    open_at = text.find("{", start)
    semicolon = text.find(";", start)
    if open_at < 0 or (0 <= semicolon < open_at):
        return semicolon + 1 if semicolon >= 0 else len(text)  # a declaration, no body
    depth = 0
    for index in range(open_at, len(text)):
        char = text[index]
        depth += char == "{"
        depth -= char == "}"
        if depth == 0:
            return index + 1
    return len(text)


def library_of(call: str) -> str:
    """'cudaMemcpyAsync' -> 'CUDA runtime', 'cublasGemmEx' -> 'cuBLAS'."""
    return next(lib for prefix, lib in API_PREFIXES if call.startswith(prefix))


def scan_native(text: str, file: str) -> list[Site]:
    """Sites of one C++/CUDA file: each __global__ kernel (sized), each binding, and one site for its GPU API calls."""
    lines = text.splitlines()
    clean = blank_comments_and_strings(text)
    sites: list[Site] = []

    def code(line: int) -> str:
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""

    for match in _GLOBAL.finditer(clean):
        name, after = _kernel_name(clean, match.end())
        if name is None:
            continue
        end = _body_end(clean, after)
        if "{" not in clean[after:end]:
            continue  # a declaration without a body
        first, last = _line_of(clean, match.start()), _line_of(clean, end - 1)
        apis = tuple(sorted({m.group(1) for m in _API_CALL.finditer(clean[after:end])}))
        size = KernelSize(lines=last - first + 1, kernels=1, apis=apis)
        sites.append(Site(file, first, code(first), "cuda-kernel", name, (("name", name),), size))
    for match in _BINDINGS.finditer(clean):
        line = _line_of(clean, match.start())
        sites.append(Site(file, line, code(line), "native-binding", match.group(1),
                          (("module", match.group(2) or "?"),)))
    calls: dict[str, int] = {}
    first_line = 0
    for match in _API_CALL.finditer(clean):
        calls[match.group(1)] = calls.get(match.group(1), 0) + 1
        first_line = first_line or _line_of(clean, match.start())
    launches = list(dict.fromkeys(m.group(1) for m in _LAUNCH.finditer(clean)))
    if calls:
        libraries = sorted({library_of(c) for c in calls})
        detail = [("library", lib) for lib in libraries] + [("call", f"{c} x{n}") for c, n in sorted(calls.items())]
        detail += [("launch", k) for k in launches]
        size = KernelSize(lines=len(lines), kernels=0, apis=tuple(sorted(calls)))
        sites.append(Site(file, first_line, code(first_line), "native-runtime", ", ".join(libraries),
                          tuple(detail), size))
    return sites


def _kernel_name(clean: str, start: int) -> tuple[str | None, int]:
    """The function name after `__global__` (skipping __launch_bounds__(...)) and the offset after its '('."""
    index = start
    while True:
        paren = clean.find("(", index)
        if paren < 0:
            return None, start
        found = _NAME_BEFORE_PAREN.search(clean[index:paren + 1])
        if found is None:
            return None, start
        if found.group(1) != "__launch_bounds__":
            return found.group(1), paren + 1
        close = clean.find(")", paren)
        if close < 0:
            return None, start
        index = close + 1
