"""A character-level GPT trained on any text file, then sampled.

    python examples/char_gpt.py [--data FILE] [--steps 300] [--ckpt gpt.pt] [--resume] ...

Pre-norm transformer blocks with causal self-attention through F.scaled_dot_product_attention, AdamW with
weight decay on matrices only (decay / no-decay groups), a cosine schedule with linear warm-up
(LambdaLR), gradient clipping, a checkpoint (model, optimizer, scheduler, step, RNG) every --ckpt-every
steps that --resume continues from, and greedy-or-sampled generation at the end.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import ember
import ember.nn as nn
import ember.nn.functional as F


class Block(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.Dropout(dropout))
        self.dropout = dropout

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, block, d, layers, heads, dropout):
        super().__init__()
        self.block = block
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.Sequential(*[Block(d, heads, dropout) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx, targets=None):
        x = self.wte(idx) + self.wpe(ember.arange(idx.shape[1]))
        logits = self.head(self.ln_f(self.blocks(x)))
        loss = None if targets is None else F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        return logits, loss

    @ember.no_grad()
    def generate(self, idx, n, temperature=1.0):
        for _ in range(n):
            logits, _ = self(idx[:, -self.block:])
            logits = logits[:, -1] / max(temperature, 1e-6)
            nxt = ember.multinomial(F.softmax(logits, dim=-1), 1) if temperature > 0 else logits.argmax(-1, True)
            idx = ember.cat([idx, nxt], dim=1)
        return idx


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=__file__, help="a text file (default: this script)")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--block", type=int, default=64, help="context length")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--ckpt", default="char_gpt.pt", help="checkpoint path")
    p.add_argument("--ckpt-every", type=int, default=100)
    p.add_argument("--resume", action="store_true", help="continue from --ckpt")
    p.add_argument("--sample-len", type=int, default=200)
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not os.path.isfile(args.data):
        p.error(f"--data: no such file: {args.data}")

    text = open(args.data, encoding="utf-8", errors="replace").read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = ember.tensor([stoi[c] for c in text], dtype=ember.int64)
    if len(data) <= args.block + 1:
        p.error(f"--data: the text has {len(data)} characters; it needs more than --block ({args.block})")
    ember.manual_seed(args.seed)
    model = GPT(len(chars), args.block, args.d_model, args.layers, args.heads, args.dropout)
    decay = [p_ for n, p_ in model.named_parameters() if p_.dim() >= 2]
    no_decay = [p_ for n, p_ in model.named_parameters() if p_.dim() < 2]
    opt = ember.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95))

    def schedule(step):
        if step < args.warmup:
            return (step + 1) / args.warmup
        progress = (step - args.warmup) / max(1, args.steps - args.warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))
    sched = ember.optim.lr_scheduler.LambdaLR(opt, schedule)
    gen = ember.Generator().manual_seed(args.seed + 1)
    step = 0
    if args.resume and os.path.exists(args.ckpt):
        ck = ember.load(args.ckpt)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        gen.set_state(ck["batch_generator"])
        ember.set_rng_state(ck["rng"])
        step = ck["step"]
        print(f"resumed from {args.ckpt} at step {step}")
    n_params = sum(p_.numel() for p_ in model.parameters())
    print(f"{len(text):,} characters, vocabulary {len(chars)}, {n_params:,} parameters")

    def save():
        ember.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                    "batch_generator": gen.get_state(), "rng": ember.get_rng_state(), "step": step,
                    "chars": "".join(chars)}, args.ckpt)

    model.train()
    t0, first = time.perf_counter(), step
    while step < args.steps:
        ix = ember.randint(0, len(data) - args.block - 1, (args.batch_size,), generator=gen).tolist()
        x = ember.stack([data[i:i + args.block] for i in ix])
        y = ember.stack([data[i + 1:i + 1 + args.block] for i in ix])
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        opt.step()
        sched.step()
        step += 1
        if step % 10 == 0 or step == args.steps:
            rate = (step - first) / (time.perf_counter() - t0)
            print(f"step {step:5d}  loss {loss.item():.4f}  grad norm {norm.item():.3f}  "
                  f"lr {sched.get_last_lr()[0]:.2e}  {rate:.1f} steps/s", flush=True)
        if step % args.ckpt_every == 0 or step == args.steps:
            save()
    model.eval()
    start = ember.tensor([[stoi.get("\n", 0)]])
    out = model.generate(start, args.sample_len, args.temperature)
    print("--- sample ---")
    sys.stdout.write("".join(chars[i] for i in out[0].tolist()) + "\n")


if __name__ == "__main__":
    main()
