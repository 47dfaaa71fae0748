"""What a custom ``torch.compile`` backend receives: the graph's code (torch-level calls, inputs named by their
sources, names from the code's variables), the example inputs, and whether the compiled function returns what the
function does -- for functions and modules, in-place operators, grad-mode regions, buffers updated in place,
backward through the compiled result, numbers read with ``.item()``, and backends built on AOT autograd and on
Inductor's ``compile_fx``."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.backends.common import aot_autograd
from torch._inductor.compile_fx import compile_fx

calls = []


def printing_backend(gm, example_inputs):
    calls.append(gm)
    print(gm.code.strip())
    print("inputs:", [tuple(e.shape) for e in example_inputs])
    return gm.forward


def show(out):
    for t in (out if isinstance(out, (tuple, list)) else [out]):
        if isinstance(t, torch.Tensor):
            print(" ", tuple(t.shape), [round(v, 4) + 0.0 for v in t.detach().flatten().tolist()[:6]], t.requires_grad)
        else:
            print(" ", t)


def check(fn, *args, backend=printing_backend, fullgraph=False, **kwargs):
    print("==", getattr(fn, "__name__", type(fn).__name__))
    compiled = torch.compile(fn, backend=backend, fullgraph=fullgraph)
    out = compiled(*args, **kwargs)
    show(out)
    again = compiled(*args, **kwargs)          # a second call: the same graph, no second compilation
    show(again)
    return compiled


torch.manual_seed(0)
x, y = torch.randn(4, 3), torch.randn(4, 3)


def operators(x, y):
    x2 = x.clone()
    x2 += 1
    a = 2 - x2
    b = -y
    c = x.T
    x2[0] = 5
    p, q = x.chunk(2)
    with torch.no_grad():
        d = p * 3
    e = torch.ones(3) + q
    return a, b, c, d, e, x


check(operators, x, y)


def shapes_and_containers(x, n, xs, d):
    s = x.size(0)
    v = x.view(s, -1).softmax(dim=-1)
    return v + xs[0] * xs[1] - d["k"], n + 1, x.shape


check(shapes_and_containers, x, 3, [x, y], {"k": y})


def functionals(x, *, scale=2.0):
    h = F.gelu(x)
    h = F.layer_norm(h, (3,))
    return torch.where(h > 0, h, torch.zeros_like(h)).mean() * scale, h.sum(dim=1, keepdim=True)


check(functionals, x, scale=3.0)
w = torch.randn(3)


def reads_a_global(x):
    return x * w


check(reads_a_global, x)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 5)
        self.bn = nn.BatchNorm1d(5)
        self.register_buffer("shift", torch.ones(5))

    def forward(self, x, scale=2):
        h = F.relu(self.bn(self.fc(x))) * scale
        h = h + self.shift
        return torch.cat([h, x[:, :1].sigmoid()], dim=1).sum(-1), h.shape[0]


torch.manual_seed(1)
block = Block()
check(block, x)
print("running_mean", [round(v, 4) for v in block.bn.running_mean.tolist()], int(block.bn.num_batches_tracked))

torch.manual_seed(2)
net = nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Dropout(0.0), nn.Linear(8, 2))
compiled_net = check(net, torch.randn(2, 1, 4, 4))
img = torch.randn(2, 1, 4, 4)
compiled_net(img).square().sum().backward()           # backward through the compiled result
print("grads", [round(p.grad.abs().sum().item(), 4) for p in net.parameters()])

print("== values read with .item()")


def scaled(x):
    y = x.sum().item()
    z = y * 2 + 1
    return x * z, torch.full((2,), y), x.clamp(max=y)


def total(x):
    return x.sum().item()


def shifted(x):
    n = x.long().sum().item()
    return x + n


def branches(x):
    y = x.sum().item()
    if y > 2:
        return x
    return x * 2


check(scaled, x, fullgraph=True)          # fullgraph=True: the number is a node of the graph
check(total, x, fullgraph=True)
check(shifted, x, fullgraph=True)
for backend in (printing_backend, "inductor"):
    try:
        torch.compile(branches, backend=backend, fullgraph=True)(x)
    except Exception as e:
        print(type(e).__name__, str(e).splitlines()[0])
show(torch.compile(branches)(x))            # without fullgraph=True: the read breaks the graph, eager's result
xs = x.clone().requires_grad_()
out = torch.compile(scaled, fullgraph=True)(xs)     # the default backend: values and gradients
show(out)
out[0].sum().backward()
show(xs.grad)

print("== aot_autograd")
seen = []


def fw_compiler(gm, example_inputs):
    seen.append("forward")
    return gm.forward


def bw_compiler(gm, example_inputs):
    seen.append("backward")
    return gm.forward


torch.manual_seed(3)
mlp = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
out = torch.compile(mlp, backend=aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler))(x)
out.sum().backward()
print(seen, [round(p.grad.sum().item(), 4) for p in mlp.parameters()])

print("== compile_fx inside a backend")


def inductor_after_printing(gm, example_inputs):
    print(gm.code.strip())
    return compile_fx(gm, example_inputs)


show(torch.compile(lambda a, b: (a * b).relu().sum(0), backend=inductor_after_printing)(x, y))
print("backend calls:", len(calls))
