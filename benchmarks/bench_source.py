"""Benchmark: scan_sources over a generated ~50,000-line Python tree (target: under 10 s).

    python benchmarks/bench_source.py                  # 50,000 lines in 200 files
    python benchmarks/bench_source.py --lines 200000   # bigger tree

The tree is written to a temporary folder: training scripts with the constructs the scanner looks for
(torch.cuda calls, .cuda(), NCCL, AMP, apex, guarded flash_attn, a Triton kernel) padded with ordinary
model code. Prints the line count, the file count, the findings and the seconds scan_sources took.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from opassess.source import load_source_facts, scan_sources  # noqa: E402

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=50_000, help="lines of Python to generate")
    parser.add_argument("--files", type=int, default=200, help="number of files")
    args = parser.parse_args(argv)
    load_source_facts()  # loading the facts is not part of the scan's cost
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        lines = write_tree(folder, args.lines, args.files)
        start = time.perf_counter()
        scan = scan_sources(folder)
        seconds = time.perf_counter() - start
    print(f"{lines} lines in {len(scan.files)} files: {len(scan.findings)} findings, "
          f"{len(scan.skipped)} skipped, scan_sources {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
