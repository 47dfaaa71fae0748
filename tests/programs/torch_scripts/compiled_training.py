"""Training with torch.compile: a compiled model, a whole training step compiled (optimizer included), a last
batch of another size, a function that breaks the graph, and inference under no_grad."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(200, 10)
Y = (X @ torch.randn(10, 3)).argmax(1)
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)     # batches of 64, 64, 64 and 8

model = nn.Sequential(nn.Linear(10, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 3))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
compiled = torch.compile(model)


@torch.compile
def train_step(x, y):
    opt.zero_grad()
    loss = F.cross_entropy(compiled(x), y)
    loss.backward()
    opt.step()
    return loss


for epoch in range(4):
    total = 0.0
    for x, y in loader:
        total += train_step(x, y).item() * len(x)
    print(f"epoch {epoch} loss {total / len(X):.5f}")


def confident(x):
    p = compiled(x).softmax(-1)
    if p.max() > 0.9:                                  # a value read: a graph break
        return p.argmax(-1)
    return p.argmax(-1) * 0


with torch.no_grad():
    print(f"accuracy {(compiled(X).argmax(1) == Y).float().mean().item():.4f}")
    print(f"confident {torch.compile(confident)(X[:16]).sum().item()}")
    print(f"graph breaks {torch._dynamo.explain(confident)(X[:16]).graph_break_count}")
print(f"state_dict {list(compiled.state_dict())[:2]}")
