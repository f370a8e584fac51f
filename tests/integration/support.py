"""What the Hugging Face tests share: a model file that builds a small causal LM from a transformers config class
(random weights, nothing downloaded)."""
from __future__ import annotations

import textwrap
from pathlib import Path


def causal_lm_file(folder: Path, config: str, settings: dict, attention: str = "sdpa") -> str:
    """Write folder/<config>.py building transformers.<config>(**settings) as AutoModelForCausalLM with the named
    attention implementation, fed 16 random token ids without a cache; return its path."""
    path = folder / f"{config.lower()}.py"
    path.write_text(textwrap.dedent(f"""
        import torch, transformers

        def build_model():
            config = transformers.{config}(**{settings!r})
            config._attn_implementation = "{attention}"
            return transformers.AutoModelForCausalLM.from_config(config)

        def example_inputs():
            return {{"input_ids": torch.randint(0, 128, (1, 16)), "use_cache": False}}
    """))
    return str(path)
