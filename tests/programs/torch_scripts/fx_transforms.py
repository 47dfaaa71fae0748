"""Program transformations as torch.fx's documentation and tutorials teach them: trace a model, read and rewrite
its graph, replace a pattern, split it, profile it with an Interpreter, count the ATen ops with a dispatch mode,
record the ATen graph (forward and backward) with make_fx, decompose it, and wrap tensors in a subclass."""
import collections
import time

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F
from torch._decomp import core_aten_decompositions
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.passes.shape_prop import ShapeProp
from torch.fx.passes.split_module import split_module
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = self.fc2(h)
        return self.norm(x + h).sum(dim=-1)


model = Block()
x = torch.randn(4, 8)

# 1. trace, print the graph and the generated code
gm = fx.symbolic_trace(model)
print(gm.graph)
print(gm.code)
print("traced equals eager:", torch.allclose(gm(x), model(x)))

# 2. rewrite: relu -> gelu, by editing nodes
for node in gm.graph.nodes:
    if node.op == "call_function" and node.target is torch.relu:
        node.target = F.gelu
gm.recompile()
print(gm.code)
print("gelu output %.5f" % gm(x).abs().sum().item())

# 3. replace a pattern with another
def pattern(a, b):
    return torch.add(a, b)


def replacement(a, b):
    return torch.sub(a, -b)


gm2 = fx.symbolic_trace(Block())
print("add nodes before:", sum(1 for n in gm2.graph.nodes if n.target == torch.add))


class AddModel(nn.Module):
    def forward(self, x, y):
        return torch.add(x, y).relu() + torch.add(y, 1.0)


am = fx.symbolic_trace(AddModel())
matches = fx.subgraph_rewriter.replace_pattern(am, pattern, replacement)
print("matches:", len(matches))
print(am.code)
print("rewritten %.5f" % am(x, x).sum().item())

# 4. an Interpreter that times each node
class Timer(fx.Interpreter):
    def run_node(self, n):
        t0 = time.perf_counter()
        out = super().run_node(n)
        self.times[n.name] = time.perf_counter() - t0
        return out


timer = Timer(fx.symbolic_trace(model))
timer.times = {}
timer.run(x)
print("timed nodes:", list(timer.times))

# 5. shapes of every node
sp = fx.symbolic_trace(model)
ShapeProp(sp).propagate(x)
for n in sp.graph.nodes:
    if "tensor_meta" in n.meta:
        print(n.name, tuple(n.meta["tensor_meta"].shape))

# 6. split at the second linear layer
parts = split_module(sp, model, lambda n: 0 if n.name in ("fc1", "relu") else 1)
print(parts.code)
print("split equals eager:", torch.allclose(parts(x), model(x)))

# 7. count the ATen operators one training step runs
class OpCounter(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.counts = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.counts[str(func)] += 1
        return func(*args, **(kwargs or {}))


with OpCounter() as counter:
    loss = model(x).pow(2).mean()
    loss.backward()
for name in ["aten.addmm.default", "aten.native_layer_norm.default", "aten.native_layer_norm_backward.default",
             "aten.mm.default"]:
    print(name, counter.counts[name])

# 8. the ATen graph of a function and its gradient, then decomposed
def f(x, w):
    return torch.tanh(x @ w).sum()


def grad_f(x, w):
    return torch.autograd.grad(f(x, w), w)[0]


w = torch.randn(8, 3, requires_grad=True)
g = make_fx(f)(x, w)
print(g.code)
gd = make_fx(f, decomposition_table=core_aten_decompositions())(x, w)
print(gd.code)
gg = make_fx(grad_f)(x, w)
print(sorted({str(n.target) for n in gg.graph.nodes if n.op == "call_function"}))
print("make_fx grad matches autograd:", torch.allclose(gg(x, w), grad_f(x, w)))

# 9. a wrapper subclass that logs what it sees (torch_dispatch tutorial)
class LoggingTensor(torch.Tensor):
    @staticmethod
    def __new__(cls, elem, requires_grad=False):
        r = torch.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(), dtype=elem.dtype,
                                                device=elem.device, requires_grad=requires_grad)
        r.elem = elem
        return r

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        def unwrap(e):
            return e.elem if isinstance(e, LoggingTensor) else e

        def wrap(e):
            return LoggingTensor(e) if isinstance(e, torch.Tensor) else e
        print("  dispatch:", func)
        return tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {})))


lt = LoggingTensor(torch.tensor([1.0, 2.0, 3.0]), requires_grad=True)
out = (lt * lt).sum()
out.backward()
print("grad", lt.grad.elem.tolist())
