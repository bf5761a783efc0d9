"""The GPT-style decoder of the training test (tests/test_training.py) and of the training-step
benchmark (bench/train_step.py): token and position embeddings, blocks of LayerNorm -> causal
SDPA -> MLP with GELU, output weights tied to the token embedding."""
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (part.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for part in self.qkv(self.ln1(x)).split(d, 2))
        y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab=64, context=16, width=32, heads=4, layers=2):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.Sequential(*(Block(width, heads) for _ in range(layers)))
        self.ln = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied

    def forward(self, idx):
        x = self.tokens(idx) + self.positions(torch.arange(idx.shape[1], device=idx.device))
        return self.head(self.ln(self.blocks(x)))
