"""A Hugging Face model folder (config.json, no weights) scanned as it is (issue 42): built from its config through
transformers' classes on meta, with inputs made from the config; the report matches a hand-written model file that
builds the same model with the same inputs. Configs are written here from tiny transformers configs (nothing
downloaded)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

transformers = pytest.importorskip("transformers")

from opassess.errors import ModelLoadError  # noqa: E402
from opassess.huggingface import with_config_defaults  # noqa: E402
from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402

pytestmark = pytest.mark.slow

TEXT = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)
VISION = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, image_size=32,
              patch_size=8)


def _configs():
    """name -> (config, the inputs a hand-written model file would pass)."""
    llava = transformers.LlavaConfig(
        vision_config=transformers.CLIPVisionConfig(**VISION, projection_dim=32),
        text_config=transformers.LlamaConfig(**dict(TEXT, vocab_size=160)), image_token_id=150, image_seq_length=16)
    return {
        "dense": (transformers.Qwen3Config(**TEXT, head_dim=16, architectures=["Qwen3ForCausalLM"]),
                  "{'input_ids': torch.randint(0, 128, (1, 16)), 'use_cache': False}"),
        "moe": (transformers.Qwen3MoeConfig(**TEXT, head_dim=16, num_experts=4, num_experts_per_tok=2,
                                            moe_intermediate_size=32, architectures=["Qwen3MoeForCausalLM"]),
                "{'input_ids': torch.randint(0, 128, (1, 16)), 'use_cache': False}"),
        "vlm": (llava.__class__(**dict(llava.to_dict(), architectures=["LlavaForConditionalGeneration"])),
                "{'input_ids': torch.cat([torch.full((1, 16), 150), torch.randint(0, 150, (1, 16))], dim=1), "
                "'pixel_values': torch.randn(1, 3, 32, 32), 'use_cache': False}"),
        "vision": (transformers.ViTConfig(**VISION, architectures=["ViTForImageClassification"]),
                   "{'pixel_values': torch.randn(1, 3, 32, 32)}"),
    }


def _write(tmp_path, name: str):
    config, inputs = _configs()[name]
    folder = tmp_path / name
    config.save_pretrained(folder)
    architecture = config.architectures[0]
    hand = tmp_path / f"{name}_by_hand.py"
    hand.write_text(textwrap.dedent(f"""
        import torch, transformers

        def build_model():
            config = transformers.AutoConfig.from_pretrained({str(folder)!r})
            return transformers.{architecture}._from_config(config)

        def example_inputs():
            return {inputs}
    """))
    return folder, hand


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "opassess", *args], capture_output=True, text=True, timeout=600)


def _verdicts(assessment):
    return sorted((c.operator.key, c.category, len(c.operator.nodes)) for c in assessment.classified)


@pytest.mark.parametrize("name", ["dense", "moe", "vlm", "vision"])
def test_a_model_folder_and_its_config_scan_as_the_hand_written_file(tmp_path, name):
    folder, hand = _write(tmp_path, name)
    by_hand = assess(ScanOptions(target=str(hand)))
    as_folder = assess(ScanOptions(target=str(folder), seq_len=16))
    as_file = assess(ScanOptions(target=str(folder / "config.json"), seq_len=16))
    assert _verdicts(as_folder) == _verdicts(by_hand) == _verdicts(as_file)
    assert as_folder.estimate.p50 == pytest.approx(by_hand.estimate.p50)
    # the architecture and parameter count the report names are the config's
    assert as_folder.model.class_name == _configs()[name][0].architectures[0] == by_hand.model.class_name
    assert as_folder.model.parameters == by_hand.model.parameters > 0
    assert as_folder.model.entry == "config.json"
    assert as_folder.model.source.endswith(name)


def test_the_published_dtype_is_assessed_unless_one_is_given(tmp_path):
    folder, _ = _write(tmp_path, "dense")
    config = json.loads((folder / "config.json").read_text())
    config["dtype"] = "bfloat16"
    (folder / "config.json").write_text(json.dumps(config))
    assert with_config_defaults(ScanOptions(target=str(folder))).dtype == "bfloat16"
    assert with_config_defaults(ScanOptions(target=str(folder), dtype="float16")).dtype == "float16"
    assessment = assess(with_config_defaults(ScanOptions(target=str(folder), seq_len=8)))
    assert assessment.model.dtype == "bfloat16"
    assert assessment.model.inputs == ("input_ids=int64[1,8]", "use_cache=False")


def test_training_a_folder(tmp_path):
    folder, _ = _write(tmp_path, "dense")
    assessment = assess(ScanOptions(target=str(folder), seq_len=8, train=True))
    keys = {c.operator.key for c in assessment.classified}
    assert any("backward" in k or "AdamW" in k or "_foreach" in k for k in keys), sorted(keys)[:20]


def test_bad_folders_fail_with_one_line(tmp_path):
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    (unknown / "config.json").write_text(json.dumps({"model_type": "no-such-architecture-2031", "hidden_size": 8}))
    with pytest.raises(ModelLoadError, match="model type 'no-such-architecture-2031' is unknown to the installed "
                                             "transformers"):
        assess(ScanOptions(target=str(unknown)))
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "config.json").write_text(json.dumps({"model_type": "my-remote-model",
                                                    "auto_map": {"AutoConfig": "configuration_x.XConfig"}}))
    with pytest.raises(ModelLoadError, match="pass --trust-remote-code"):
        assess(ScanOptions(target=str(remote)))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="not a JSON config"):
        assess(ScanOptions(target=str(broken)))
    with pytest.raises(ModelLoadError, match="does not apply to a Qwen3Config"):
        folder, _ = _write(tmp_path, "dense")
        assess(ScanOptions(target=str(folder), task="image-classification"))


def test_the_command_line_scans_a_folder_alone_and_a_folder_of_folders_as_a_portfolio(tmp_path):
    models = tmp_path / "models"
    models.mkdir()
    _write(models, "dense")
    _write(models, "vision")
    for extra in models.glob("*_by_hand.py"):
        extra.unlink()
    (models / "dense" / "modeling_extra.py").write_text("def build_model():\n    raise SystemExit(9)\n")
    one = run_cli("scan", str(models / "dense"), "--seq-len", "8", "-f", "json", "-o", str(tmp_path / "one.json"))
    assert one.returncode == 0, one.stderr
    report = json.loads((tmp_path / "one.json").read_text())
    assert report["model"]["class"] == "Qwen3ForCausalLM"
    several = run_cli("scan", str(models), "--seq-len", "8", "-o", str(tmp_path / "out"))
    assert several.returncode == 0, several.stderr
    portfolio = json.loads((tmp_path / "out" / "portfolio.json").read_text())
    names = sorted(m["name"] for m in portfolio["models"])
    assert names == ["dense", "vision"]  # the modelling code inside a model folder is no model file
