"""A word-level LSTM language model with truncated backpropagation through time.

    python examples/lstm_lm.py [--data FILE] [--epochs 4] [--bptt 35] ...

The text is split into words (train 90% / validation 10%), batchified into --batch-size columns and
trained in --bptt-long chunks whose hidden state is carried over but detached (truncated BPTT), with SGD,
gradient clipping and the learning rate divided by 4 when validation perplexity stops improving
(pytorch/examples' word_language_model recipe). Prints training loss and validation perplexity.
"""
from __future__ import annotations

import argparse
import math
import os
import re
import time

import ember
import ember.nn as nn


class RNNModel(nn.Module):
    def __init__(self, ntoken, emsize, nhid, nlayers, dropout, tie_weights):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, emsize)
        self.rnn = nn.LSTM(emsize, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != emsize:
                raise ValueError("When using the tied flag, --nhid must be equal to --emsize")
            self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.drop(self.encoder(x)), hidden)
        return self.decoder(self.drop(out)), hidden


def batchify(ids, bsz):
    n = ids.shape[0] // bsz
    return ids[:n * bsz].view(bsz, n).t().contiguous()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=None, help="a text file (default: ember's README.md, else this script)")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=20)
    p.add_argument("--bptt", type=int, default=35)
    p.add_argument("--emsize", type=int, default=128)
    p.add_argument("--nhid", type=int, default=128)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--tied", action="store_true", help="tie the encoder and decoder weights")
    p.add_argument("--lr", type=float, default=20.0)
    p.add_argument("--clip", type=float, default=0.25)
    p.add_argument("--max-batches", type=int, default=0, help="stop each epoch after this many (0: all)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    data = args.data
    if data is None:
        readme = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")
        data = readme if os.path.isfile(readme) else __file__
    if not os.path.isfile(data):
        p.error(f"--data: no such file: {data}")

    words = re.findall(r"\w+|[^\w\s]", open(data, encoding="utf-8", errors="replace").read().lower()) + ["<eos>"]
    vocab = {w: i for i, w in enumerate(sorted(set(words)))}
    ids = ember.tensor([vocab[w] for w in words], dtype=ember.int64)
    split = int(len(ids) * 0.9)
    train, valid = batchify(ids[:split], args.batch_size), batchify(ids[split:], 10)
    if train.shape[0] < 2 or valid.shape[0] < 2:
        p.error("--data: the text is too short")
    ember.manual_seed(args.seed)
    model = RNNModel(len(vocab), args.emsize, args.nhid, args.layers, args.dropout, args.tied)
    crit = nn.CrossEntropyLoss()
    opt = ember.optim.SGD(model.parameters(), lr=args.lr)
    print(f"{len(words):,} words, vocabulary {len(vocab):,}, {sum(q.numel() for q in model.parameters()):,} "
          "parameters")

    def evaluate(source):
        model.eval()
        total, hidden = 0.0, None
        with ember.no_grad():
            for i in range(0, source.shape[0] - 1, args.bptt):
                seq = min(args.bptt, source.shape[0] - 1 - i)
                out, hidden = model(source[i:i + seq], hidden)
                total += seq * crit(out.reshape(-1, len(vocab)), source[i + 1:i + 1 + seq].reshape(-1)).item()
        return total / (source.shape[0] - 1)

    best = None
    for epoch in range(1, args.epochs + 1):
        model.train()
        hidden, t0, total, count = None, time.perf_counter(), 0.0, 0
        for batch, i in enumerate(range(0, train.shape[0] - 1, args.bptt)):
            if args.max_batches and batch >= args.max_batches:
                break
            seq = min(args.bptt, train.shape[0] - 1 - i)
            x, y = train[i:i + seq], train[i + 1:i + 1 + seq].reshape(-1)
            if hidden is not None:
                hidden = tuple(h.detach() for h in hidden)      # truncated BPTT
            out, hidden = model(x, hidden)
            loss = crit(out.reshape(-1, len(vocab)), y)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            total += loss.item()
            count += 1
            if count % 20 == 0:
                print(f"  epoch {epoch} batch {count:4d}  loss {total / count:.3f}  "
                      f"{count / (time.perf_counter() - t0):.1f} batches/s", flush=True)
        val = evaluate(valid)
        print(f"epoch {epoch}  train loss {total / max(count, 1):.3f}  valid loss {val:.3f}  "
              f"valid ppl {math.exp(val):.2f}  lr {opt.param_groups[0]['lr']:g}  "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        if best is None or val < best:
            best = val
        else:
            for group in opt.param_groups:
                group["lr"] /= 4.0
    print(f"best valid perplexity: {math.exp(best):.2f}")


if __name__ == "__main__":
    main()
