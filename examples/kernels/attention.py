"""A tiled attention forward (online softmax) from OpenCL C (attention.cl), used in a small
transformer that torch.compile compiles in one graph.

    python examples/kernels/attention.py

`attention(q, k, v, causal)` matches `torch.nn.functional.scaled_dot_product_attention` for
[batch, heads, seq, head_dim] inputs without a mask or dropout. Forward only (inference).
"""

import math
import pathlib

import torch

import drawbridge

from rmsnorm import rms_norm

SOURCE = pathlib.Path(__file__).with_name("attention.cl")
MAX_D = 128
BLOCK = 32


def _check(q, k, v):
    torch._check(q.dim() == 4 and k.dim() == 4 and v.shape == k.shape and q.shape[:2] == k.shape[:2]
                 and q.shape[3] == k.shape[3],
                 lambda: "attention: expected q [B, H, Sq, D] and k, v [B, H, Sk, D]")
    torch._check(q.shape[3] <= MAX_D, lambda: f"attention: head_dim above {MAX_D}")


def _outputs(q, k, v, scale, causal):
    _check(q, k, v)
    return torch.empty_like(q)


def _args(q, k, v, scale, causal, out):
    seq_q, seq_k, head_dim = q.shape[2], k.shape[2], q.shape[3]
    tile = BLOCK * head_dim * q.element_size()
    return (out, q, k, v, seq_q, seq_k, head_dim, scale, int(causal), tile, tile)


forward = drawbridge.kernel(
    "drawbridge_examples::attention(Tensor q, Tensor k, Tensor v, float scale, bool causal) -> Tensor",
    SOURCE,
    name="attention_forward",
    outputs=_outputs,
    args=_args,
    grid=lambda q, k, v, scale, causal: ((q.shape[2] + BLOCK - 1) // BLOCK * BLOCK, q.shape[0] * q.shape[1]),
    local=(BLOCK, 1),
    dtypes=(torch.float32, torch.float64),
    defines={"MAX_D": MAX_D},
)


def attention(q, k, v, causal: bool = False):
    return forward(q.contiguous(), k.contiguous(), v.contiguous(), 1.0 / math.sqrt(q.shape[-1]), causal)


class Block(torch.nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.Parameter(torch.ones(dim))
        self.norm2 = torch.nn.Parameter(torch.ones(dim))
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(rms_norm(x, self.norm1)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        x = x + self.proj(attention(q, k, v, causal=True).transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(rms_norm(x, self.norm2))


class TinyTransformer(torch.nn.Module):
    """A decoder-only language model whose norms and attention are the custom kernels."""

    def __init__(self, vocab: int = 256, dim: int = 64, heads: int = 4, layers: int = 2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, dim)
        self.blocks = torch.nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.norm = torch.nn.Parameter(torch.ones(dim))
        self.head = torch.nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(rms_norm(x, self.norm))


if __name__ == "__main__":
    q, k, v = (torch.randn(2, 4, 100, 64) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    got = attention(q.to("ocl"), k.to("ocl"), v.to("ocl"), causal=True).cpu()
    print("attention max |diff|:", (got - expected).abs().max().item())

    torch.manual_seed(0)
    model = TinyTransformer().to("ocl").eval()
    tokens = torch.randint(0, 256, (2, 48), device="ocl")
    with torch.no_grad():
        eager = model(tokens)
        compiled = torch.compile(model, backend="ocl")(tokens)
    print("compiled vs eager max |diff|:", (compiled - eager).abs().max().item())
