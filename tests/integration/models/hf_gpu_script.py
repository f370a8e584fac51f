"""A Hugging Face model as a GPU training script builds it: flash_attn imported unconditionally (not installed
here), the model moved with .cuda() and the inputs made on "cuda"."""
import flash_attn  # noqa: F401
import torch
from flash_attn import flash_attn_func  # noqa: F401
from hf_tiny import TOKENS, llama


def build_model():
    return llama().cuda()


def example_inputs():
    return {"input_ids": torch.randint(0, 128, (1, TOKENS), device="cuda"), "use_cache": False}
