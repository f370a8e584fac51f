"""`--patch FILE.diff`: the rewrites of a source scan's sites that are safe and mechanical, as one unified diff.

Only files of the scanned project are touched (the scan never enters site-packages, a virtual environment or a
build folder), and only where the rewrite cannot change what the code means on the NPU:
- a 'cuda' device string becomes 'npu' ('cuda:1' -> 'npu:1'), `.cuda()` becomes `.npu()`;
- `torch.cuda.amp` becomes `torch.npu.amp` (a GradScaler in a file that autocasts to bfloat16 is left: with bf16
  no scaler is needed, so it is advice, not a rename);
- a 'nccl' backend string becomes 'hccl'; an NCCL environment variable's name becomes the one torch_npu reads where
  data/hccl_env.toml has it ('NCCL_ASYNC_ERROR_HANDLING' -> 'TORCH_HCCL_ASYNC_ERROR_HANDLING');
- a flash-attn call becomes the npu_fusion_attention call opassess/advice renders from its arguments, its adapter
  lines inserted above it, when that call fails no documented constraint and carries every argument over; the
  flash_attn import goes when every call it served was rewritten;
- an apex fused optimizer becomes its torch_npu.optim counterpart (FusedAdam -> NpuFusedAdam, ...);
- a `topk(..., sorted=False)` operator of a model scan (its param-limit on the NPU, which returns topk sorted) becomes
  sorted=True where order.py proves that nothing reads the order of its result.
Every rewritten file gets `import torch_npu` (it registers the 'npu' device), and each change is preceded by a
comment naming the finding it resolves. Anything else stays advice in the report.
"""
from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...advice import FLASH_CALLS, Constraints, flash_call
from ...advice.flash import INTERFACE
from ...kb.hccl_env import hccl_variables
from ..classify import preferred_library
from ..facts import SourceFacts
from .order import order_unused

TOPK_OPS = ("torch.topk", "Tensor.topk")
TOPK_SORTED = "topk-sorted"  # the kind of a patch candidate taken from a model scan's operator

# apex fused optimizer -> its torch_npu.optim counterpart (third_party_kernel_libs.tsv, apex fused optimizers)
APEX = {"FusedAdam": "NpuFusedAdam", "FusedSGD": "NpuFusedSGD", "FusedLAMB": "NpuFusedLamb"}
_DEVICE = re.compile(r"""(['"])cuda(:\d+)?\1""")
_NCCL = re.compile(r"""(['"])nccl\1""")


@dataclass
class _File:
    """The edits of one file: replacements by line (old text -> new text), lines inserted above a line, comments."""

    lines: list[str]
    replace: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    above: dict[int, list[str]] = field(default_factory=dict)
    drop: set[int] = field(default_factory=set)
    needs_npu: bool = False
    needs_torch: bool = False  # an adapter line names torch (the flash-attn mask)

    def edit(self, line: int, old: str, new: str, comment: str, npu: bool = True) -> bool:
        """Replace `old` on the line, the comment above it; `npu`: the new text needs torch_npu imported."""
        text = self.lines[line - 1]
        if old not in text:
            return False
        self.replace.setdefault(line, []).append((old, new))
        self.above.setdefault(line, []).append(f"# opassess: {comment}")
        self.needs_npu = self.needs_npu or npu
        return True


def _indent(text: str) -> str:
    text = text.rstrip("\n")
    return text[:len(text) - len(text.lstrip())]


def _segment(lines: list[str], node: ast.AST) -> str | None:
    """A node's source text when it sits on one line."""
    if node.lineno != node.end_lineno:  # type: ignore[attr-defined]
        return None
    return lines[node.lineno - 1].encode()[node.col_offset:node.end_col_offset].decode()  # type: ignore[attr-defined]


def _calls_on(tree: ast.AST, line: int) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == line]


def _cite(finding: Mapping[str, Any]) -> str:
    evidence = finding.get("evidence") or ()
    if finding.get("kind") == TOPK_SORTED:
        return f" ({evidence[0]})" if evidence else ""
    return f" ({evidence[0].split(' ')[0]})" if evidence else ""


def _flash(file: _File, tree: ast.AST, finding: Mapping[str, Any], facts: SourceFacts) -> bool:
    subject = finding["subject"]
    name = subject.rsplit(".", 1)[-1]
    lib = preferred_library(facts.library_rows(subject))
    for node in _calls_on(tree, finding["line"]):
        func = ast.unparse(node.func)
        if func != name and not func.endswith("." + name):
            continue
        text = _segment(file.lines, node)
        call = flash_call(subject, [ast.unparse(a) for a in node.args],
                          {k.arg: ast.unparse(k.value) for k in node.keywords if k.arg},
                          Constraints(lib.cite, lib.constraints) if lib else None)
        if text is None or call.failures or any("not carried over" in n or "run time" in n for n in call.notes):
            return False
        line = finding["line"]
        if not file.edit(line, text, call.text(), f"{subject} -> {call.api}{_cite(finding)}"):
            return False
        file.above[line] += list(call.adapters)
        file.needs_torch = file.needs_torch or any(re.search(r"(?<![\w.])torch\.", a) for a in call.adapters)
        return True
    return False


def _apex(file: _File, finding: Mapping[str, Any]) -> bool:
    name = finding["subject"].rsplit(".", 1)[-1]
    if name not in APEX:
        return False
    text = file.lines[finding["line"] - 1]
    old = next((m.group(0) for m in re.finditer(rf"[\w.]*\b{name}(?=\s*\()", text)), None)
    return old is not None and file.edit(finding["line"], old, f"torch_npu.optim.{APEX[name]}",
                                         f"{finding['subject']} -> torch_npu.optim.{APEX[name]}{_cite(finding)}")


def _scope(tree: ast.AST, node: ast.Call) -> ast.AST:
    """The innermost function holding `node`, else the module."""
    best = tree
    for candidate in ast.walk(tree):
        if isinstance(candidate, ast.FunctionDef | ast.AsyncFunctionDef) and candidate.lineno <= node.lineno \
                and (candidate.end_lineno or 0) >= (node.end_lineno or 0) \
                and any(n is node for n in ast.walk(candidate)):
            best = candidate  # ast.walk goes outside in: the last one holding it is the innermost
    return best


def _topk(file: _File, tree: ast.AST, finding: Mapping[str, Any]) -> bool:
    """sorted=False -> sorted=True on the topk call at the finding's line, when order.py proves its order unused."""
    line = finding["line"]
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)
                and isinstance(node.func, ast.Attribute | ast.Name) and ast.unparse(node.func).endswith("topk")):
            continue
        keyword = next((k for k in node.keywords if k.arg == "sorted" and isinstance(k.value, ast.Constant)
                        and k.value.value is False), None)
        if keyword is None:
            continue
        uses = order_unused(_scope(tree, node), node, finding.get("rank"))
        text = _segment(file.lines, keyword)
        if uses is None or text is None:
            continue
        why = f"its order is not used ({', '.join(uses)})" if uses else "its result is not used"
        return file.edit(keyword.lineno, text, "sorted=True",
                         f"{finding['subject']}: sorted=False -> sorted=True, the NPU's only mode; {why}"
                         f"{_cite(finding)}", npu=False)  # torch's own argument: no torch_npu name
    return False


def _rewrite(file: _File, tree: ast.AST, finding: Mapping[str, Any], facts: SourceFacts, bf16: bool) -> bool:
    """Apply the one safe rewrite this finding has, if any; True when it was applied."""
    kind, subject, line = finding["kind"], finding["subject"], finding["line"]
    text = file.lines[line - 1]
    if kind == "device-string" and subject == "tensor.cuda" and ".cuda(" in text:
        return file.edit(line, ".cuda(", ".npu(", f"{subject}: .cuda() -> .npu(){_cite(finding)}")
    if kind == "device-string" and (match := _DEVICE.search(text)):
        new = match.group(0).replace("cuda", "npu")
        return file.edit(line, match.group(0), new, f"{subject}: {match.group(0)} -> {new}{_cite(finding)}")
    if kind == "backend-string" and (match := _NCCL.search(text)):
        new = match.group(0).replace("nccl", "hccl")
        return file.edit(line, match.group(0), new, f"{subject}: {match.group(0)} -> {new}{_cite(finding)}")
    if kind == "env-var" and (counterpart := hccl_variables().get(subject)) is not None \
            and (match := re.search(rf"""(['"]){re.escape(subject)}\1""", text)):
        new = match.group(0).replace(subject, counterpart.hccl)
        return file.edit(line, match.group(0), new, f"{subject} -> {counterpart.hccl}, the variable torch_npu "
                                                    f"reads ({counterpart.cite.split(':')[0]}:"
                                                    f"{counterpart.cite.split(':')[1]})", npu=False)
    if subject.startswith("torch.cuda.amp") and "torch.cuda.amp" in text \
            and not (bf16 and "GradScaler" in text):
        return file.edit(line, "torch.cuda.amp", "torch.npu.amp", f"{subject}: torch.cuda.amp -> torch.npu.amp"
                                                                   f"{_cite(finding)}")
    if kind == "library-call" and subject in FLASH_CALLS:
        return _flash(file, tree, finding, facts)
    if kind == "library-call" and subject.startswith("apex.optimizers."):
        return _apex(file, finding)
    if kind == TOPK_SORTED:
        return _topk(file, tree, finding)
    return False


def _imports(file: _File, tree: ast.Module, done: Sequence[Mapping[str, Any]]) -> None:
    """A flash-attn / apex-optimizer import whose names the rewritten file no longer uses goes; `import torch_npu`
    (and `import torch` where an adapter line needs it and the file lacks it) comes in after the last top-level
    import."""
    if done:
        rest = "".join(_patched(file))
        for node in tree.body:
            if not (isinstance(node, ast.ImportFrom) and node.module in ("flash_attn", INTERFACE, "apex.optimizers")
                    and node.lineno == node.end_lineno):
                continue
            line = file.lines[node.lineno - 1]
            others = rest.replace(line, "", 1)
            if all(not re.search(rf"(?<![\w.]){re.escape(a.asname or a.name)}\b", others) for a in node.names):
                file.drop.add(node.lineno)
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    anchor = (imports[-1].end_lineno or imports[-1].lineno) + 1 if imports else 1
    if file.needs_npu and not _binds(tree, "torch_npu"):
        file.above.setdefault(anchor, []).insert(0, "import torch_npu  # noqa: F401  # opassess: registers the "
                                                    "'npu' device (torch.npu, .npu(), torch_npu.optim)")
    if file.needs_torch and not _binds(tree, "torch"):  # before torch_npu
        file.above.setdefault(anchor, []).insert(0, "import torch  # opassess: the adapter lines of the rewritten "
                                                    "calls use it")


def _binds(tree: ast.Module, module: str) -> bool:
    """A top-level `import MODULE` (not `as` another name) binds the name."""
    return any(isinstance(n, ast.Import) and any(a.name == module and a.asname is None for a in n.names)
               for n in tree.body)


def _patched(file: _File) -> list[str]:
    out = []
    for number, text in enumerate(file.lines + [""], start=1):
        for extra in file.above.get(number, ()):
            out.append(_indent(text if number in file.replace else "") + extra + "\n")
        if number > len(file.lines) or number in file.drop:
            continue
        for old, new in file.replace.get(number, ()):
            text = text.replace(old, new, 1)
        out.append(text)
    return out


def topk_findings(operators: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A model scan's topk operators whose sorted=False the NPU does not take (a param-limit reason on a signature
    with sorted=False), one patch candidate per source line: {file, line, kind, subject, rank, evidence} (rank: the
    captured input's, None when the line ran on several)."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for op in operators:
        if op.get("op") not in TOPK_OPS:
            continue
        for number, signature in enumerate(op.get("signatures") or ()):
            limits = [r for r in op.get("reasons") or () if r.get("code") == "param-limit"
                      and r.get("signature") in (None, number)]
            if (signature.get("attrs") or {}).get("sorted") is not False or not limits:
                continue
            shapes = signature.get("input_shapes") or ()
            rank = len(shapes[0]) if shapes and isinstance(shapes[0], list) else None
            for source in signature.get("sources") or ():
                path, _, line = source.rpartition(":")
                if path and line.isdigit():
                    entry = found.setdefault((path, int(line)), {
                        "file": path, "line": int(line), "kind": TOPK_SORTED, "subject": op["op"], "rank": rank,
                        "evidence": [" @".join(limits[0]["evidence"].split(" @")[:2]).split(" [")[0]]})
                    if entry["rank"] != rank:  # the line ran on inputs of two ranks: dimensions stay as written
                        entry["rank"] = None
    return list(found.values())


def project_patch(findings: Iterable[Mapping[str, Any]], root: Path, facts: SourceFacts,
                  operators: Iterable[Mapping[str, Any]] = ()) -> tuple[str, int, int]:
    """The unified diff of the safe rewrites of these source findings (document entries: file, line, kind,
    subject, evidence) and of a model scan's topk operators (`operators`: the document's) in the files under
    `root`; with the count of findings rewritten and left as advice."""
    by_file: dict[str, list[Mapping[str, Any]]] = {}
    for finding in [*findings, *topk_findings(operators)]:
        if finding["file"].endswith(".py") and not finding.get("built_by"):
            by_file.setdefault(finding["file"], []).append(finding)
    chunks, done_count, left = [], 0, 0
    for rel in sorted(by_file):
        path = root / rel
        if not path.is_file() or Path(rel).is_absolute() or ".." in Path(rel).parts:
            left += len(by_file[rel])
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            left += len(by_file[rel])
            continue
        file = _File(text.splitlines(keepends=True))
        if file.lines and not file.lines[-1].endswith("\n"):
            file.lines[-1] += "\n"
        bf16 = "bfloat16" in text
        done: list[Mapping[str, Any]] = []
        kept: list[Mapping[str, Any]] = []
        for finding in sorted(by_file[rel], key=lambda f: f["line"]):
            (done if _rewrite(file, tree, finding, facts, bf16) else kept).append(finding)
        if not done:
            left += len(kept)
            continue
        _imports(file, tree, done)
        done += [f for f in kept if f["line"] in file.drop]  # an import that went with its rewritten calls
        kept = [f for f in kept if f["line"] not in file.drop]
        done_count, left = done_count + len(done), left + len(kept)
        chunks.append("".join(difflib.unified_diff(file.lines, _patched(file), f"a/{rel}", f"b/{rel}")))
    return "".join(chunks), done_count, left
