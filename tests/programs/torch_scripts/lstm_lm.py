"""A word-level LSTM language model with truncated backpropagation through time and perplexity."""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
words = ("a cat sat on the mat and the dog sat on the log while a bird sang " * 20).split()
vocab = sorted(set(words))
ids = torch.tensor([vocab.index(w) for w in words])
BATCH, BPTT = 4, 8
n = ids.size(0) // BATCH
data = ids[:n * BATCH].view(BATCH, n).t().contiguous()


class LM(nn.Module):
    def __init__(self, ntoken, ninp=16, nhid=32):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, num_layers=2, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, x, hidden):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out), hidden


model = LM(len(vocab))
opt = torch.optim.SGD(model.parameters(), lr=1.0)
crit = nn.CrossEntropyLoss()
for epoch in range(3):
    model.train()
    hidden = None
    total = 0.0
    for i in range(0, data.size(0) - 1, BPTT):
        seq = min(BPTT, data.size(0) - 1 - i)
        x, y = data[i:i + seq], data[i + 1:i + 1 + seq].reshape(-1)
        if hidden is not None:
            hidden = tuple(h.detach() for h in hidden)
        out, hidden = model(x, hidden)
        loss = crit(out.view(-1, len(vocab)), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        opt.step()
        total += loss.item() * seq
    print(f"epoch {epoch} ppl {math.exp(total / (data.size(0) - 1)):.4f}")
