"""A BiLSTM sequence tagger (part-of-speech / named-entity style): embedding, 2-layer bidirectional LSTM, linear, log-softmax.

What it exercises: nn.Embedding with padding_idx, nn.Dropout, a multi-layer bidirectional batch-first nn.LSTM
(hidden 128 per direction, no projection, no inter-layer dropout), nn.Linear on the concatenated directions and
F.log_softmax over the tag dimension.

Sentences are padded to a fixed length and not packed: pack_padded_sequence needs the lengths as Python ints
(lengths.tolist()), which the meta device cannot give.

Operator counts, worked out by hand (one forward):
  - torch.nn.Embedding            1
  - torch.nn.Dropout              2   (after the embedding, after the LSTM)
  - torch.nn.LSTM                 1   (input 100, hidden 128, num_layers 2, bidirectional, batch_first)
  - operator.getitem              2   (`x, _ = self.lstm(x)` unpacks the (output, (h_n, c_n)) tuple: FX emits
                                       one getitem per unpacked name)
  - torch.nn.Linear               1   (256 -> 17)
  - F.log_softmax                 1   (dim=-1)
Shapes: input ids (4, 32) int64 -> embeddings (4, 32, 100) -> LSTM output (4, 32, 256) -> log-probs (4, 32, 17).
Parameters 1,135,153 = embedding 5000*100 = 500,000
  + LSTM layer 0, per direction 4*128*(100+128) + 2*4*128 = 117,760, both directions 235,520
  + LSTM layer 1, per direction 4*128*(256+128) + 2*4*128 = 197,632, both directions 395,264
  + Linear 256*17 + 17 = 4,369.

ATen evidence differs by device (measured, torch 2.13): aten::lstm is CompositeImplicitAutograd, so a dispatch
recorder never sees it. On the CPU one forward reaches aten::mkldnn_rnn_layer 4 times (2 layers * 2 directions);
on the meta device it unrolls into per-timestep cell math (256 addmm, 384 sigmoid_, 256 tanh/tanh_, ...:
2 layers * 2 directions * 32 steps).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

VOCAB_SIZE = 5000
EMBEDDING_DIM = 100
HIDDEN_SIZE = 128
NUM_LAYERS = 2
NUM_TAGS = 17  # the Universal Dependencies POS tag set
PAD_ID = 0
BATCH, SEQ_LEN = 4, 32


class BiLSTMTagger(nn.Module):
    """Scores every token of a padded batch of sentences with log-probabilities over the tag set."""

    def __init__(
        self,
        vocab_size: int = VOCAB_SIZE,
        embedding_dim: int = EMBEDDING_DIM,
        hidden_size: int = HIDDEN_SIZE,
        num_layers: int = NUM_LAYERS,
        num_tags: int = NUM_TAGS,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD_ID)
        self.embedding_dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(embedding_dim, hidden_size, num_layers=num_layers, bidirectional=True, batch_first=True)
        self.output_dropout = nn.Dropout(dropout)
        self.hidden2tag = nn.Linear(2 * hidden_size, num_tags)

    def forward(self, token_ids: torch.Tensor) -> torch.Tensor:
        x = self.embedding_dropout(self.embedding(token_ids))
        x, _ = self.lstm(x)
        tag_scores = self.hidden2tag(self.output_dropout(x))
        return F.log_softmax(tag_scores, dim=-1)


def build_model() -> nn.Module:
    """The tagger in eval mode (dropout off)."""
    return BiLSTMTagger().eval()


def example_inputs() -> tuple[torch.Tensor, ...]:
    """Four sentences of 32 token ids (id 0 is padding)."""
    return (torch.randint(1, VOCAB_SIZE, (BATCH, SEQ_LEN)),)
