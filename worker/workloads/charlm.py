"""A small causal transformer language model over the Python standard library's own source.

Every Python install ships this text, so the workload needs no download and is identical on
every machine running the same Python minor version.
"""

from __future__ import annotations

import math
import sysconfig
from pathlib import Path

import torch
from torch import nn

from worker.workloads.base import Workload, cross_entropy

CONTEXT = 32
VOCAB = 128  # ASCII; any other byte maps to 0
CORPUS_BYTES = 400_000
SOURCES = ("functools.py", "collections/__init__.py", "argparse.py", "typing.py", "dataclasses.py")


def _corpus() -> torch.Tensor:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    text = b"".join((stdlib / name).read_bytes() for name in SOURCES if (stdlib / name).exists())
    tokens = torch.frombuffer(bytearray(text[:CORPUS_BYTES]), dtype=torch.uint8).long()
    return torch.where(tokens < VOCAB, tokens, torch.zeros_like(tokens))


class CharTransformer(nn.Module):
    """Pre-norm causal transformer: (B, T) token ids -> (B, T, VOCAB) logits."""

    def __init__(self, width: int = 64, layers: int = 2, heads: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.position = nn.Parameter(torch.randn(CONTEXT, width) / math.sqrt(width))
        layer = nn.TransformerEncoderLayer(
            width, heads, 4 * width, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(CONTEXT))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = self.embed(tokens) + self.position[: tokens.shape[1]]  # (B, T, C)
        hidden = self.blocks(hidden, mask=self.mask, is_causal=True)
        return self.head(hidden)


def charlm(seed: int = 0) -> Workload:
    """Windows of 32 characters; next-character loss. Default target: train_loss 2.2 nats/char."""
    tokens = _corpus()
    starts = torch.arange(0, len(tokens) - CONTEXT - 1, CONTEXT // 2)
    windows = torch.stack([tokens[s : s + CONTEXT + 1] for s in starts.tolist()])
    order = torch.randperm(len(windows), generator=torch.Generator().manual_seed(seed))
    n_eval = 512
    held, kept = windows[order[:n_eval]], windows[order[n_eval:]]
    return Workload(
        "charlm", CharTransformer, cross_entropy,
        kept[:, :-1], kept[:, 1:], held[:, :-1], held[:, 1:], default_target=2.2,
    )
