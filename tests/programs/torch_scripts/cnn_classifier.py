"""A CNN classifier on synthetic images; keeps the best checkpoint with torch.save and reloads it."""
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
N = 256
labels = torch.randint(0, 4, (N,))
images = torch.randn(N, 1, 12, 12) * 0.5
for c in range(4):  # each class lights up one quadrant
    r, q = divmod(c, 2)
    images[labels == c, :, r * 6:(r + 1) * 6, q * 6:(q + 1) * 6] += 1.0
train = TensorDataset(images[:192], labels[:192])
test = TensorDataset(images[192:], labels[192:])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 3 * 3, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=0.01)
best, path = -1.0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(), "best.pt")
g = torch.Generator().manual_seed(2)
for epoch in range(3):
    model.train()
    for xb, yb in DataLoader(train, batch_size=32, shuffle=True, generator=g):
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        correct = sum((model(xb).argmax(1) == yb).sum().item() for xb, yb in DataLoader(test, batch_size=64))
    acc = correct / len(test)
    print(f"epoch {epoch} acc {acc:.4f}")
    if acc > best:
        best = acc
        torch.save({"model": model.state_dict(), "epoch": epoch, "acc": acc}, path)
ck = torch.load(path, map_location="cpu")
model.load_state_dict(ck["model"])
model.eval()
with torch.no_grad():
    out = model(test.tensors[0][:4])
print(f"best epoch {ck['epoch']} acc {ck['acc']:.4f} logits {out.sum().item():.4f}")
