"""tools/kb_gpus.py: the GPU figures generated from gpu_figures.tsv (dense peaks, units, citations, unverified rows
said so), and a rebuild reproducing the shipped file."""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_gpus  # noqa: E402

FACTS = Path(os.environ.get("OPASSESS_GPU_FACTS", ROOT.parent / "shared" / "reference" / "gpu"))
SHIPPED = ROOT / "opassess" / "data" / "kb" / "gpus.json"


@pytest.fixture(scope="module")
def shipped():
    return json.loads(SHIPPED.read_text(encoding="utf-8"))["gpus"]


def test_dense_peaks_and_memory_are_converted_once_and_cited(shipped):
    h100 = shipped["H100"]
    assert h100["form_factor"] == "SXM5" and h100["peaks"]["cube"]["bfloat16"] == 989.5e12
    assert h100["peaks"]["cube"]["float32"] == 67e12  # non-tensor: torch's float32 matmul does not use TF32
    assert (h100["hbm_bytes"], h100["hbm_bandwidth"], h100["nvlink_bandwidth"]) == (80e9, 3.35e12, 900e9)
    assert shipped["A100"]["form_factor"] == "SXM4 80GB" and shipped["A100"]["hbm_bandwidth"] == 2.039e12
    assert shipped["B200"]["hbm_bytes"] == 192e9  # the HGX memory row belongs to HGX (1,000 W)
    assert "unverified" in shipped["H20"]["label"] and "bfloat16" not in shipped["H20"]["peaks"]["cube"]
    for gpu in shipped.values():
        assert all(re.fullmatch(r"gpu_figures\.tsv:\d+:value", c) for c in gpu["cite"].values())


@pytest.mark.skipif(not FACTS.is_dir(), reason="../shared/reference/gpu is not beside the checkout")
def test_rebuild_from_facts_reproduces_the_shipped_file(tmp_path):
    assert kb_gpus.main(["--facts", str(FACTS), "--out", str(tmp_path)]) == 0
    rebuilt = json.loads((tmp_path / "gpus.json").read_text(encoding="utf-8"))
    assert rebuilt == json.loads(SHIPPED.read_text(encoding="utf-8")), "rerun tools/kb_gpus.py"
