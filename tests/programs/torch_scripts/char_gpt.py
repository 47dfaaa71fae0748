"""A character-level GPT: causal self-attention through F.scaled_dot_product_attention, pre-norm blocks,
AdamW with decay / no-decay parameter groups, clip_grad_norm_, DataLoader(RandomSampler(replacement=True))."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, RandomSampler

TEXT = ("the quick brown fox jumps over the lazy dog. " * 12) + "pack my box with five dozen liquor jugs. " * 8
torch.manual_seed(0)
chars = sorted(set(TEXT))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in TEXT], dtype=torch.long)
BLOCK, D, HEADS = 16, 32, 4


class Chunks(Dataset):
    def __len__(self):
        return len(data) - BLOCK - 1

    def __getitem__(self, i):
        return data[i:i + BLOCK], data[i + 1:i + BLOCK + 1]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, D), nn.Embedding(BLOCK, D)
        self.blocks = nn.ModuleList([Block(), Block()])
        self.ln_f = nn.LayerNorm(D)
        self.head = nn.Linear(D, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1))
        x = self.wte(idx) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


model = GPT(len(chars))
decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=3e-3, betas=(0.9, 0.95))
ds = Chunks()
g = torch.Generator().manual_seed(1)
loader = DataLoader(ds, batch_size=8, sampler=RandomSampler(ds, replacement=True, num_samples=10 ** 6, generator=g))
for step, (xb, yb) in enumerate(loader):
    lr = 3e-3 * min(1.0, (step + 1) / 5) * 0.5 * (1 + math.cos(math.pi * step / 30))
    for group in opt.param_groups:
        group["lr"] = lr
    _, loss = model(xb, yb)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item():.5f} norm {norm.item():.5f}")
    if step == 25:
        break
model.eval()
with torch.no_grad():
    idx = torch.tensor([[stoi["t"]]])
    for _ in range(20):
        logits, _ = model(idx[:, -BLOCK:])
        idx = torch.cat([idx, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
print("sample", "".join(chars[i] for i in idx[0].tolist()))
