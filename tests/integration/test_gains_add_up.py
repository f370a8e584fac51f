"""The findings' gains add up on every model the integration tests build (issue 40: 150 us of gains against 113 us at
risk on a small Qwen3): each call's time at risk is claimed by one finding, so their sum is at most the step's time
at risk, in float32, in bfloat16 and for a bfloat16 training step. The models: every builder of
tests/integration/models, every transformers config the integration tests write a causal LM from, and the models
they write inline (a driven Mixtral, detectors, a channels_last ResNet, ConvNeXt, Granite-MoE, model folders, the
Llama-2-7B and DeepSeek-V3 shapes at small depth). A test below fails when a new model or config is not listed."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torchvision")

from opassess.options import ScanOptions  # noqa: E402
from opassess.pipeline.assess import assess  # noqa: E402
from opassess.report.document import build_document  # noqa: E402
from opassess.report.sections.time import finding_gain_us, finding_gains  # noqa: E402
from tests.integration.support import causal_lm_file  # noqa: E402

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
BENCHMARKS = HERE.parents[1] / "benchmarks"

# every builder of tests/integration/models: (file, entry) -> the input shape a file without example_inputs needs
FILES: dict[tuple[str, str | None], tuple[int, ...] | None] = {
    ("vision.py", "resnet18"): (1, 3, 64, 64), ("vision.py", "vit"): (1, 3, 32, 32),
    ("detector_inputs.py", None): None, ("detection.py", None): None, ("dcn_roi.py", None): None,
    ("hf_tiny.py", "bert"): None, ("hf_tiny.py", "llama"): None, ("hf_tiny.py", "mixtral"): None,
    ("hf_tiny.py", "qwen2_moe"): None, ("hf_tiny.py", "qwen3_moe"): None, ("hf_tiny.py", "deepseek_v3"): None,
    ("hf_gpu_script.py", None): None, ("hf_speech.py", None): None, ("hf_whisper.py", None): None,
    ("timm_models.py", "vit"): None,
}
WRAPPED = {("vision.py", "detector"): ("detector_inputs.py", None)}  # scanned through the file giving its inputs

TINY = dict(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=64)
# every config the integration tests write a causal LM from (tests/integration/support.causal_lm_file)
CONFIGS: dict[str, tuple[dict, str]] = {
    "Qwen3Config": ({"head_dim": 16}, "sdpa"), "LlamaConfig": ({}, "sdpa"), "MistralConfig": ({}, "sdpa"),
    "Qwen2Config": ({}, "sdpa"), "Gemma2Config": ({"head_dim": 16}, "eager"), "Ernie4_5Config": ({}, "sdpa"),
    "MixtralConfig": ({"num_local_experts": 4, "num_experts_per_tok": 2}, "sdpa"),
    "GptOssConfig": ({"num_local_experts": 4, "num_experts_per_tok": 2, "head_dim": 16, "sliding_window": 8}, "eager"),
    "DeepseekV3Config": ({"n_routed_experts": 4, "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1,
                          "moe_intermediate_size": 32, "first_k_dense_replace": 1, "kv_lora_rank": 16,
                          "q_lora_rank": 32, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 16}, "sdpa"),
    "MambaConfig": ({"hidden_size": 32, "num_hidden_layers": 2, "state_size": 4, "expand": 2, "conv_kernel": 4,
                     "use_mambapy": False}, "eager"),
}

HF = "import torch, transformers\n\ndef example_inputs():\n    return {'input_ids': torch.randint(0, 128, (1, 16)), " \
     "'use_cache': False}\n\ndef build_model():\n"
DETECTOR = "import torch, torchvision\n\ndef example_inputs():\n    return ([torch.rand(3, 64, 64)],)\n\n" \
           "def build_model():\n    return torchvision.models.detection.{}(weights=None, weights_backbone=None, " \
           "min_size=64, max_size=64).eval()\n"
GRANITE = HF + "    config = transformers.GraniteMoeConfig(vocab_size=128, hidden_size=64, intermediate_size=128,\n" \
    "        num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,\n" \
    "        num_local_experts=4, num_experts_per_tok=2)\n    config._attn_implementation = 'sdpa'\n" \
    "    config._experts_implementation = 'EXPERTS'\n    return transformers.AutoModelForCausalLM.from_config(config)\n"


def _inline() -> dict[str, str]:
    """The models the integration tests write inline, as model-file sources."""
    from tests.integration.test_decisions_real import RESNET_CHANNELS_LAST
    from tests.integration.test_drive_real import MIXTRAL
    return {"mixtral_driven": MIXTRAL, "resnet18_channels_last": RESNET_CHANNELS_LAST,
            "fcos": DETECTOR.format("fcos_resnet50_fpn"), "retinanet": DETECTOR.format("retinanet_resnet50_fpn"),
            "convnext": "import torch, torchvision\n\ndef build_model():\n    return torchvision.models.convnext_tiny()"
                        "\n\ndef example_inputs():\n    return (torch.randn(1, 3, 64, 64),)\n",
            "granite_moe": GRANITE.replace("EXPERTS", "grouped_mm"),
            "granite_moe_eager": GRANITE.replace("EXPERTS", "eager")}


MODES = {"float32": (None, False), "bfloat16": ("bfloat16", False), "bfloat16-train": ("bfloat16", True)}
NO_TRAIN = {"detector_inputs.py", "detection.py", "fcos", "retinanet"}  # a detector trains only with targets


def assert_gains_add_up(options: ScanOptions) -> tuple[float, float, float]:
    """Scan; assert the findings' gains (the assessment's, and the document's rounded figures) sum to at most the
    step's time at risk. Returns (gains alone, gains claimed once, time at risk) in us."""
    assessment = assess(options)
    performance = assessment.performance
    assert performance is not None and performance.step is not None
    risk = performance.step.at_risk_us
    claimed = sum(g or 0.0 for g in finding_gains(performance, assessment.findings))
    assert claimed <= risk + 1e-6
    document = build_document(assessment)
    shown = [f["time"]["gain_us"] for f in document["findings"] if f["time"]]
    assert len(shown) == len(assessment.findings)
    # each figure is rounded to 0.1 us: at most 0.05 us off
    assert sum(shown) <= document["performance"]["at_risk_us"] + 0.05 * (len(shown) + 1)
    alone = sum(finding_gain_us(performance, f) or 0.0 for f in assessment.findings)
    return alone, claimed, risk


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("file, entry", sorted(FILES, key=str))
def test_every_model_file(file, entry, mode):
    dtype, train = MODES[mode]
    if train and file in NO_TRAIN:
        pytest.skip("a detector trains only with targets")
    shape = FILES[(file, entry)]
    assert_gains_add_up(ScanOptions(target=str(MODELS / file), entry=entry, input_shapes=(shape,) if shape else (),
                                    dtype=dtype, train=train))


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_every_causal_lm_config(tmp_path, config, mode):
    dtype, train = MODES[mode]
    extra, attention = CONFIGS[config]
    path = causal_lm_file(tmp_path, config, {**TINY, **extra}, attention)
    assert_gains_add_up(ScanOptions(target=path, dtype=dtype, train=train))


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("name", sorted(_inline()))
def test_every_inline_model(model_file, name, mode):
    dtype, train = MODES[mode]
    if train and name in NO_TRAIN:
        pytest.skip("a detector trains only with targets")
    path = model_file(_inline()[name], f"{name}.py")
    assert_gains_add_up(ScanOptions(target=str(path), device="cpu" if name == "mixtral_driven" else "meta",
                                    dtype=dtype, train=train))


@pytest.mark.parametrize("name", ["vlm", "vision"])
def test_model_folders(tmp_path, name):
    from tests.integration.test_hf_folder import _write
    folder, _ = _write(tmp_path, name)
    for dtype, train in MODES.values():
        assert_gains_add_up(ScanOptions(target=str(folder), seq_len=16, dtype=dtype, train=train))


@pytest.mark.parametrize("model, variable, layers", [("llama2_7b_hf.py", "OPASSESS_LLAMA_HF_LAYERS", 2),
                                                     ("deepseek_v3.py", "OPASSESS_DSV3_LAYERS", 4)])
def test_full_width_shapes_at_small_depth(monkeypatch, model, variable, layers):
    monkeypatch.setenv(variable, str(layers))
    for dtype, train in MODES.values():
        assert_gains_add_up(ScanOptions(target=str(BENCHMARKS / model), dtype=dtype, train=train))


def test_overlapping_findings_claim_each_call_once_and_a_share_of_compute_claims_none():
    # Llama's RMSNorm chains are also in its add+norm and rotary findings: alone the findings recover more than the
    # step has at risk, claimed once no more than it. The residual adds are in the Residual Add + RMSNorm fusion and
    # in the share-of-compute line of Tensor.add (18 us alone against the fusion's 16.1): the fusion, which fixes
    # them, recovers their 8 us; the share line, which fixes nothing, recovers nothing
    options = ScanOptions(target=str(MODELS / "hf_tiny.py"), entry="llama", dtype="bfloat16")
    alone, claimed, risk = assert_gains_add_up(options)
    assert alone > risk > claimed > 0
    assessment = assess(options)
    gains = dict(zip((f.title for f in assessment.findings), finding_gains(assessment.performance,
                                                                          assessment.findings), strict=True))
    assert gains["Residual Add + RMSNorm (4x): one npu_add_rms_norm call"] == pytest.approx(8.0, abs=0.1)
    assert all(gains[f.title] == 0.0 for f in assessment.findings if f.kind == "compute")


def test_every_model_and_config_of_the_integration_tests_is_listed():
    built = set()
    for path in MODELS.glob("*.py"):
        names = [n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)
                 and n.name != "example_inputs" and not n.name.startswith("_")]
        built |= {(path.name, None)} if "build_model" in names else {(path.name, name) for name in names}
    assert {WRAPPED.get(b, b) for b in built} == set(FILES)
    configs = {c for path in HERE.glob("test_*.py")
               for c in re.findall(r"\"([A-Z]\w*Config)\"", path.read_text()) if c != "AutoConfig"}
    assert configs <= set(CONFIGS), configs - set(CONFIGS)
