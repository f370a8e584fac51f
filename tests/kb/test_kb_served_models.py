"""tools/kb_served_models.py: vllm-ascend's supported-models page parsed into rows (names folded, hardware resolved
to products), and the shipped file reproduced from the cited commit when a clone is at hand."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import kb_served_models  # noqa: E402

MIRROR = Path("/work/.mirror")

PAGE = textwrap.dedent("""\
    # Supported Models

    ### Generative Models

    === "A2/A3"

        | Model | Support | Note | BF16 | Supported Hardware |
        | ----- | ------- | ---- | ---- | ------------------ |
        | Qwen3-Dense | ✅ | | ✅ | A2/A3 |
        | DeepSeek Distill (Qwen/Llama) | 🔵 | | | A2/A3 |

    === "Atlas 300I DUO"

        | Model | Support | Note | BF16 | Supported Hardware |
        |-------|---------|------|------|--------------------|
        | Qwen3-Dense | ✅ | | ❌ | Atlas 300I DUO |

    | Model | Support | Note | Supported Hardware |
    |-------|---------|------|--------------------|
    | Llama2/3/3.1 | 🔵 | | A2/A3/Ascend950 (Ascend950 experimental) |
    | Llama4 | ❌ | [1972](https://github.com/vllm-project/vllm-ascend/issues/1972) | |
    """)


def test_the_page_is_parsed_into_rows_with_their_names_products_and_lines():
    rows = kb_served_models.parse(PAGE)
    assert [(r["model"], r["names"], r["support"], r["products"], r["line"]) for r in rows] == [
        ("Qwen3-Dense", ["qwen3dense", "qwen3"], "supported", ["A2", "A3"], 9),
        ("DeepSeek Distill (Qwen/Llama)", ["deepseekdistill"], "experimental", ["A2", "A3"], 10),
        ("Qwen3-Dense", ["qwen3dense", "qwen3"], "supported", ["310P"], 16),
        ("Llama2/3/3.1", ["llama2", "llama3", "llama31"], "experimental", ["A2", "A3", "950"], 20),
        ("Llama4", ["llama4"], "unsupported", [], 21)]
    assert PAGE.splitlines()[8].strip().startswith("| Qwen3-Dense | ✅")


@pytest.mark.skipif(not (MIRROR / "vllm-project+vllm-ascend" / "repo").is_dir(), reason="no clone of vllm-ascend")
def test_the_shipped_file_is_the_regeneration_from_its_commit():
    assert kb_served_models.main(["--mirror", str(MIRROR), "--check"]) == 0
