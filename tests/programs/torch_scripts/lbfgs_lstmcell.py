"""Fitting a sine wave with an LSTMCell and LBFGS (the closure pattern of pytorch/examples time_sequence)."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
t = torch.arange(0, 40).double().view(1, -1)
data = torch.sin((t + torch.randint(-8, 8, (6, 1)).double()) / 4.0)
inp, target = data[:, :-1], data[:, 1:]


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(1, 12)
        self.out = nn.Linear(12, 1)

    def forward(self, x):
        h = torch.zeros(x.size(0), 12)
        c = torch.zeros(x.size(0), 12)
        outs = []
        for xt in x.split(1, dim=1):
            h, c = self.cell(xt, (h, c))
            outs.append(self.out(h))
        return torch.cat(outs, dim=1)


model = Seq()
opt = torch.optim.LBFGS(model.parameters(), lr=0.8)
crit = nn.MSELoss()
for i in range(3):
    def closure():
        opt.zero_grad()
        loss = crit(model(inp), target)
        loss.backward()
        return loss
    loss = opt.step(closure)
    print(f"step {i} loss {loss.item():.8f}")
