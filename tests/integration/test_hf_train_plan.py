"""A small Qwen3 (tiny Hugging Face config built here, nothing downloaded): a bf16 training migration (--train --amp
bf16) costs at least 1.3x its bf16 inference port, with the training lines listed (issue 40: both came to 4.6)."""
from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from tests.integration.support import causal_lm_file  # noqa: E402

QWEN3 = {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 64, "head_dim": 16}


def test_qwen3_bf16_training_costs_more_than_its_inference_port(tmp_path):
    path = causal_lm_file(tmp_path, "Qwen3Config", QWEN3)
    inference = assess(ScanOptions(target=path, dtype="bfloat16")).estimate
    training = assess(ScanOptions(target=path, train=True, amp="bf16")).estimate
    assert training.p50 >= 1.3 * inference.p50, (training.p50, inference.p50)
    lines = {a.name for a in training.activities}
    assert {"loss_curve", "precision_strategy", "optimizer_checkpoint", "training_memory"} <= lines
    assert "accuracy" not in lines and "accuracy" in {a.name for a in inference.activities}
