"""The memory 10,000 more kernel launches hold once read and joined, in bytes a launch (run in a fresh interpreter by
tests/profiler/test_profile.py: `python -m tests.profiler.held_memory FOLDER`, FOLDER holding report.json)."""
from __future__ import annotations

import json
import sys
import tracemalloc
from pathlib import Path

from opassess.profiler.facts import load_facts
from opassess.profiler.join import join
from opassess.profiler.read import read_profile


def held(folder: Path, operators: list, rows: int) -> int:
    path = folder / f"kernel_details_{rows}.csv"
    path.write_text("Step Id,Name,Type,Accelerator Core,Duration(us),Input Shapes,Input Data Types\n" + "".join(
        f'{i % 10 + 1},aclnnAddmm_MatMulCommon_MatMulV2,MatMulV2,AI_CORE,{i % 97}.5,"8,64;96,64;96",FLOAT;FLOAT\n'
        for i in range(rows)), encoding="utf-8")
    facts = load_facts()
    tracemalloc.start()
    try:
        data = read_profile(path, facts)
        matches = join(data.kernels, operators)
        used, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(matches) == rows and all(m.op is not None for m in matches)
    return used


def main(folder: Path) -> float:
    operators = json.loads((folder / "report.json").read_text(encoding="utf-8"))["operators"]
    held(folder, operators, 1000)  # first use: regular expressions, facts and caches
    return (held(folder, operators, 20000) - held(folder, operators, 10000)) / 10000


if __name__ == "__main__":
    print(main(Path(sys.argv[1])))
