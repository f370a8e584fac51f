"""A four-model portfolio in bfloat16 on Atlas A2 (issue 40): two small LLMs (Qwen3, Llama: tiny Hugging Face configs
built here, nothing downloaded), torchvision's ConvNeXt-Tiny and a DCNv2 head. Sharing saves: the second LLM pays
none of the operator types the first ported, nobody pays the environment bring-up twice, and no model adds more
than it costs alone (the porting order once gave one LLM 4.2 alone and 5.5 marginal, and the portfolio a -1.9-day
saving)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torchvision")

from opassess.ci.snapshot import read_snapshot  # noqa: E402
from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from opassess.portfolio import plan_portfolio  # noqa: E402
from opassess.portfolio.plan import bands  # noqa: E402
from opassess.score.weights.load import load_weights  # noqa: E402
from tests.integration.support import causal_lm_file  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = load_weights(None)
SMALL = {"vocab_size": 128, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
         "num_key_value_heads": 2, "max_position_embeddings": 64}


def test_four_models_in_bf16_save_by_sharing(tmp_path):
    convnext = tmp_path / "convnext.py"
    convnext.write_text("import torch, torchvision\n\ndef build_model():\n    return torchvision.models.convnext_tiny()"
                        "\n\ndef example_inputs():\n    return (torch.randn(1, 3, 64, 64),)\n")
    targets = {"qwen3": causal_lm_file(tmp_path, "Qwen3Config", {**SMALL, "num_hidden_layers": 1, "head_dim": 16}),
               "llama": causal_lm_file(tmp_path, "LlamaConfig", {**SMALL, "num_hidden_layers": 2}),
               "convnext": str(convnext), "dcn": str(ROOT / "tests" / "models" / "deform_conv.py")}
    models = [(name, path, read_snapshot(assess(ScanOptions(target=path, dtype="bfloat16"))))
              for name, path in targets.items()]
    plan, _, standalone, shared = plan_portfolio(models, WEIGHTS)
    shared_band, alone_band = bands(plan, WEIGHTS)
    assert shared_band[1] < alone_band[1] and shared.likely < standalone.likely  # a positive saving, P50 and likely
    for entry in plan:
        assert entry.marginal.likely <= entry.standalone.likely + 1e-9, entry.name
    order = {entry.name: entry for entry in plan}
    later = max((order["qwen3"], order["llama"]), key=plan.index)
    # the second LLM ports no operator type the first did not: it pays its own validation, accuracy and tuning
    assert later.new_ops == () and later.marginal.likely < later.standalone.likely
    # the environment bring-up (1.0 likely) is paid once: at least three of it saved
    assert standalone.likely - shared.likely >= 3 * 1.0 - 1e-9
