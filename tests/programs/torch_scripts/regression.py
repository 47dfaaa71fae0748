"""Linear regression written the old way: manual updates through param.data and grad.zero_()."""
import torch

torch.manual_seed(0)
x = torch.randn(100, 1)
y = 3 * x + 2 + 0.1 * torch.randn(100, 1)
w = torch.randn(1, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(60):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    for p in (w, b):
        p.data.add_(p.grad.data, alpha=-0.1)
        p.grad.zero_()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.6f}")
print(f"w {w.item():.5f} b {b.item():.5f}")
