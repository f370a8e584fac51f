"""wav2vec2 from a tiny transformers config, on raw audio."""
import torch
import transformers as T


def build_model():
    return T.Wav2Vec2Model(T.Wav2Vec2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                            intermediate_size=64, conv_dim=(16, 16), conv_stride=(5, 2),
                                            conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                            num_conv_pos_embedding_groups=2))


def example_inputs():
    return (torch.randn(1, 1600),)  # 0.1 s at 16 kHz

