"""Whisper's encoder from a tiny transformers config, on log-mel frames."""
import torch
import transformers as T
from transformers.models.whisper.modeling_whisper import WhisperEncoder


def build_model():
    config = T.WhisperConfig(d_model=32, encoder_layers=2, encoder_attention_heads=2, encoder_ffn_dim=64,
                             decoder_layers=1, decoder_attention_heads=2, decoder_ffn_dim=64, num_mel_bins=16,
                             max_source_positions=50, vocab_size=128, pad_token_id=0, bos_token_id=1,
                             eos_token_id=2, decoder_start_token_id=1)
    return WhisperEncoder(config)


def example_inputs():
    return (torch.randn(1, 16, 100),)  # 16 mel bins x 100 frames (twice max_source_positions)
