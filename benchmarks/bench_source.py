"""Benchmark (issue 29): `opassess source` on a generated ~50,000-line Python tree against a plain `ast.parse` of the
same files, side by side in one run (target: at most 4x).

    python benchmarks/bench_source.py                  # 50,000 lines in 200 files, best of 3
    python benchmarks/bench_source.py --lines 200000   # bigger tree

The tree is written to a temporary folder: training scripts with the constructs the scanner looks for (torch.cuda
calls, .cuda(), NCCL, AMP, apex, guarded flash_attn, a Triton kernel) padded with ordinary model code, about one site
every four lines (a dense tree: real code has far fewer). Measured, alternately, each the best of --repeat runs:
- as a user runs them, each a fresh process: `python -c` parsing every file with `ast.parse` (one process), and
  `opassess source TREE` with the terminal summary and with the JSON report written (`-o report.json`);
- inside one process (the facts loaded first): `ast.parse` of every file, and `scan_sources` (scan and classify; on
  two cores a tree this big is scanned half in a forked child, source/split.py, whose CPU time is counted too).
A warm-up run of each comes first (not counted: bytecode written as an installed package has it, files cached).
Prints the load average (the machine may be shared) and each figure, wall and CPU seconds (the CPU time is what a
loaded machine disturbs least), with its ratio to its `ast.parse`.
"""
from __future__ import annotations

import argparse
import ast
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from opassess.source import load_source_facts, scan_sources  # noqa: E402

PARSE = ("import ast, pathlib, sys\n"
         "for path in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
         "    ast.parse(path.read_text(encoding='utf-8'), str(path))\n")
TARGET = 4.0

HEADER = '''\
import torch
import torch.distributed as dist
import triton
import triton.language as tl
from torch.cuda.amp import GradScaler, autocast
from apex.optimizers import FusedAdam
try:
    import flash_attn as fa
except ImportError:
    fa = None
torch.backends.cudnn.benchmark = True


@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x + 1, mask=offs < n)

'''

BLOCK = '''\

class Block{i}(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)
        self.norm = torch.nn.LayerNorm(dim)

    def forward(self, x):
        if x.device.type == "cuda":
            torch.cuda.synchronize()
        y = self.norm(self.proj(x))
        return torch.relu(y) + x


def train_step{i}(model, batch, opt, scaler):
    dist.init_process_group("nccl")
    model = model.cuda()
    with autocast():
        loss = model(batch.to("cuda")).sum()
    scaler.scale(loss).backward()
    opt.step()
    return loss.item()
'''


def write_tree(folder: Path, lines: int, files: int) -> int:
    """Write `files` modules totalling about `lines` lines; return the exact line count."""
    per_file = lines // files
    total = 0
    for index in range(files):
        parts, count = [HEADER], HEADER.count("\n")
        block = 0
        while count < per_file:
            text = BLOCK.format(i=block)
            parts.append(text)
            count += text.count("\n")
            block += 1
        path = folder / f"pkg{index % 10}" / f"module_{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts), encoding="utf-8")
        total += count
    return total


def _wall(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) a fresh process running `command` takes, as a user waits for it (interpreter start
    included); the CPU time is what a loaded machine disturbs least."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed package has its bytecode; the warm-up run writes it
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for (the source scan's forked child: source/split.py)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _in_process(folder: Path) -> tuple[tuple[float, float], tuple[float, float], object]:
    """((wall, CPU) of ast.parse of every file, (wall, CPU) of scan_sources of the folder, the scan), in this
    process (and the child it forks for a big tree)."""
    start, cpu = time.perf_counter(), _cpu()
    for path in sorted(folder.rglob("*.py")):  # as PARSE does
        ast.parse(path.read_text(encoding="utf-8"), str(path))
    parse = (time.perf_counter() - start, _cpu() - cpu)
    start, cpu = time.perf_counter(), _cpu()
    scan = scan_sources(folder)
    return parse, (time.perf_counter() - start, _cpu() - cpu), scan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000, help="lines of Python to generate")
    parser.add_argument("--files", type=int, default=200, help="number of files")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each measurement (the best is shown)")
    args = parser.parse_args(argv)
    load_source_facts()  # loading the facts is not part of the in-process scan's cost
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "tree"
        lines = write_tree(folder, args.lines, args.files)
        report = str(Path(tmp) / "report.json")
        commands = {"parse": [python, "-c", PARSE, str(folder)],
                    "terminal": [python, "-m", "opassess", "source", str(folder), "-q"],
                    "json": [python, "-m", "opassess", "source", str(folder), "-q", "-o", report]}
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name in [*commands, "parse-in", "scan-in"]}
        for command in commands.values():  # a warm-up, not counted: bytecode written, files in the page cache
            _wall(command)
        for _ in range(args.repeat):
            for name, command in commands.items():
                runs[name].append(_wall(command))
            parse, seconds, scan = _in_process(folder)
            runs["parse-in"].append(parse)
            runs["scan-in"].append(seconds)
    best = {name: (min(w for w, _ in values), min(c for _, c in values)) for name, values in runs.items()}
    print(f"{lines} lines in {len(scan.files)} files: {len(scan.findings)} findings, {len(scan.skipped)} skipped; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; best of {args.repeat}")
    print(f"{'':<44} {'wall s':>7} {'x parse':>8} {'CPU s':>7} {'x parse':>8}")
    rows = [("ast.parse of every file, one process", "parse", None),
            ("opassess source TREE (terminal summary)", "terminal", "parse"),
            ("opassess source TREE -o report.json", "json", "parse"),
            ("ast.parse of every file, in process", "parse-in", None),
            ("scan_sources(TREE), in process", "scan-in", "parse-in")]
    for label, name, base in rows:
        (wall, cpu), ratios = best[name], ("", "")
        if base:
            ratios = (f"{wall / best[base][0]:.2f}", f"{cpu / max(best[base][1], 1e-9):.2f}")
        print(f"{label:<44} {wall:7.2f} {ratios[0]:>8} {cpu:7.2f} {ratios[1]:>8}")
    print(f"target: opassess source <= {TARGET:.0f}x ast.parse, in wall time (the CPU column adds the forked child's)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
