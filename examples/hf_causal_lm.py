"""A Hugging Face `transformers` causal LM on ocl: GPT-2's architecture from a config (random
weights, nothing downloaded) generates text greedily, then takes fine-tuning steps with AdamW.
Both are compared with the same model on the CPU.

    python -m drawbridge check examples/hf_causal_lm.py   # and the migration report at the end

`--layers`, `--width` and `--new-tokens` size it (the test suite runs it small).
"""
import argparse
import copy

import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging

import drawbridge  # noqa: F401  (autoloaded by `import torch`; imported to say what this needs)

parser = argparse.ArgumentParser()
parser.add_argument("--layers", type=int, default=4)
parser.add_argument("--width", type=int, default=256)
parser.add_argument("--new-tokens", type=int, default=24)
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()
logging.set_verbosity_error()

torch.manual_seed(0)
config = GPT2Config(vocab_size=1024, n_positions=256, n_embd=args.width, n_layer=args.layers, n_head=4,
                    bos_token_id=0, eos_token_id=0, pad_token_id=0,
                    # no dropout: the two devices draw different random numbers
                    resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
cpu_model = GPT2LMHeadModel(config).eval()
model = copy.deepcopy(cpu_model).to("ocl")
prompt = torch.randint(1, config.vocab_size, (2, 16))

# Greedy generation: every step's argmax must pick the same token as the CPU.
text = model.generate(prompt.to("ocl"), max_new_tokens=args.new_tokens, do_sample=False)
expected = cpu_model.generate(prompt, max_new_tokens=args.new_tokens, do_sample=False)
print("generated token ids:", text[0, prompt.shape[1]:].tolist())
assert torch.equal(text.cpu(), expected), "ocl generated other tokens than the CPU"


def fine_tune(net, device):
    net.train()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    batch = torch.randint(1, config.vocab_size, (4, 64), generator=torch.Generator().manual_seed(1)).to(device)
    losses = []
    for _ in range(args.steps):
        loss = net(batch, labels=batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


losses, cpu_losses = fine_tune(model, "ocl"), fine_tune(cpu_model, "cpu")
for step, (a, b) in enumerate(zip(losses, cpu_losses)):
    print(f"fine-tuning step {step}  loss ocl {a:.5f}  cpu {b:.5f}")
assert losses[-1] < losses[0], "the loss did not fall"
torch.testing.assert_close(losses, cpu_losses, rtol=1e-4, atol=1e-4)
