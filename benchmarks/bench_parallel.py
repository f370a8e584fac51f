"""The job model against published throughput: Llama-2-7B pretraining (tp=1, pp=2, dp=4, micro-batch 1 x 4096,
global batch 256) and Llama-3-8B (tp=8 with sequence parallel, micro-batch 2 x 8192, global batch 64) on Atlas A2,
bf16 with AdamW, each captured as one training step on the meta device; prints the predicted tokens/s per device,
the step's parts and the memory per device. Needs transformers (the .venv-torch214 environment).

Run:  python benchmarks/bench_parallel.py
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
JOBS = (
    ("Llama-2-7B", "llama2_7b_hf.py", {"OPASSESS_LLAMA_HF_TOKENS": "4096", "OPASSESS_LLAMA_HF_BATCH": "1"},
     "tp=1,pp=2,dp=4", "256"),
    ("Llama-3-8B", "llama3_8b_hf.py", {"OPASSESS_LLAMA_HF_TOKENS": "8192", "OPASSESS_LLAMA_HF_BATCH": "2"},
     "tp=8,pp=1,dp=1,sp", "64"),
)


def main() -> int:
    for name, model, env, layout, batch in JOBS:
        with tempfile.TemporaryDirectory() as folder:
            out = Path(folder) / "report.json"
            subprocess.run([sys.executable, "-m", "opassess", "scan", str(ROOT / model), "--train", "--dtype",
                            "bfloat16", "--parallel", layout, "--global-batch", batch, "--gpu-baseline", "H100",
                            "--no-graph-mode", "-q", "-f", "json", "-o", str(out)],
                           check=True, env={**os.environ, **env})
            perf = json.loads(out.read_text(encoding="utf-8"))["performance"]
        job = perf["parallel"]
        print(f"{name} {layout} gbs {batch}: {job['tokens_per_s_per_device']:,.0f} tokens/s per device; step "
              f"{job['step_us'] / 1e6:.2f} s (compute {job['compute_us'] / 1e6:.2f}, exposed communication "
              f"{job['comm_us'] / 1e6:.2f}, bubble {job['bubble_us'] / 1e6:.2f}); memory per device "
              f"{job['memory']['per_device_gib']:.1f} GiB {job['memory']['breakdown']}; one device "
              f"{perf['memory']['per_device_gib']:.1f} GiB; H100 ratio {perf['gpu_baseline']['ratio']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
