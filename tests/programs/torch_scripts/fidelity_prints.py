"""What a PyTorch program prints about PyTorch itself: reprs of dtypes and classes, fx's generated code (wrapped
functions, concrete arguments, annotations, readable printing, submodule editing), the profiler's operators, and
what torch function / dispatch modes see of common calls. Every line must read the same under ``python -m ember``."""
import sys
from math import sqrt
from typing import Optional

import torch
import torch.fx as fx
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode


def section(name):
    print(f"== {name}")


# ------------------------------------------------------------------------------------------------ reprs
section("reprs")
print(torch.float32, torch.qint8, torch.per_tensor_affine, torch.Size([2, 3]), repr(torch.device("cpu")))
print(torch.strided, torch.contiguous_format, torch.finfo(torch.float32).eps)
print(type(torch.zeros(1)), type(torch.nn.Parameter(torch.zeros(1))), torch.nn.Linear, torch.typename(torch.nn.ReLU()))
print(torch.Size, torch.dtype, torch.device, torch.Generator, torch.optim.SGD, torch.utils.data.DataLoader)
print(torch.fx.GraphModule, type(torch.fx.PH), torch.nn.utils.rnn.PackedSequence, torch.distributions.Normal)
print(torch.UntypedStorage, torch.autograd.Function, torch.return_types.max, torch.amp.GradScaler)


# ------------------------------------------------------------------------------------------------ fx
def my_add(x, y):
    return x + y


fx.wrap("my_add")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.unused = torch.nn.ReLU()

    def forward(self, x: torch.Tensor, y: Optional[torch.Tensor] = None, n: int = 2) -> torch.Tensor:
        return my_add(self.lin(x), x) * sqrt(x.shape[0]) + len(x)


fx.wrap("len")
section("fx wrap and annotations")
gm = fx.symbolic_trace(Net())
print(gm.code)
print(gm.graph)
gm.print_readable()
section("fx submodules")
print(gm.add_submodule("extra.inner", torch.nn.Tanh()), gm.add_submodule("lin.weight.bad", torch.nn.Tanh()))
print(gm.get_submodule("extra.inner"))
print(gm.delete_submodule("extra.inner"), gm.delete_submodule("nothing.here"))
gm.delete_all_unused_submodules()
print([name for name, _ in gm.named_modules()])

section("fx concrete_args")


class Structured(torch.nn.Module):
    def forward(self, x, d, n):
        return {"o": x + d["a"] * n, "p": [d["b"]]}


for concrete in ({"d": {"a": fx.PH, "b": fx.PH}, "n": 2}, {"d": {"a": fx.PH, "b": 3}, "n": 4}):
    g = fx.symbolic_trace(Structured(), concrete_args=concrete)
    print(g.code)
    print(g._in_spec)
    print(g._out_spec)
    print(type(g.graph._codegen).__name__)
out = g(torch.ones(2), {"a": torch.ones(2), "b": 3, "unused": 0}, 4)
print(out["o"].tolist(), out["p"])


def pair(x, t):
    return x + t[0] * t[1]


g = fx.symbolic_trace(pair, concrete_args={"t": (fx.PH, fx.PH)})
print(g.code)
print(g(torch.ones(2), (torch.full((2,), 2.0), torch.full((2,), 3.0))).tolist())
print(repr(fx.PH))

section("profiler operators")
for name in ["_record_function_enter", "_record_function_enter_new", "_record_function_exit"]:
    packet = getattr(torch.ops.profiler, name)
    for overload in packet.overloads():
        print(getattr(packet, overload)._schema)
with torch.profiler.profile() as prof:
    handle = torch.ops.profiler._record_function_enter("outer")
    record = torch.ops.profiler._record_function_enter_new("inner")
    torch.ones(3).sum()
    torch.ops.profiler._record_function_exit(record)
    torch.ops.profiler._record_function_exit(handle)
print(sorted(e.name for e in prof.events() if not e.name.startswith("aten::")))


class ProfilerTracer(fx.Tracer):
    """pytorch/examples' fx profiling tracer: record_function blocks become operator nodes."""

    def trace(self, root, concrete_args=None):
        rf_class = torch.autograd.profiler.record_function
        enter, exit_ = rf_class.__enter__, rf_class.__exit__

        def fake_enter(rf):
            rf._fx_ctx = self.create_proxy("call_function", torch.ops.profiler._record_function_enter, (rf.name,), {})
            return rf._fx_ctx

        def fake_exit(rf, *exc):
            torch.ops.profiler._record_function_exit(rf._fx_ctx)

        torch.autograd.profiler.record_function.__enter__ = fake_enter
        torch.autograd.profiler.record_function.__exit__ = fake_exit
        try:
            return super().trace(root, concrete_args)
        finally:
            torch.autograd.profiler.record_function.__enter__ = enter
            torch.autograd.profiler.record_function.__exit__ = exit_


class Labelled(torch.nn.Module):
    def forward(self, x):
        with torch.profiler.record_function("labelled"):
            return torch.relu(x)


traced = fx.GraphModule(Labelled(), ProfilerTracer().trace(Labelled()))
print(traced.code)
with torch.autograd.profiler.profile() as prof:
    traced(torch.randn(5))
print([e.name for e in prof.function_events if not e.name.startswith("aten::")])


# ------------------------------------------------------------------------------------------------ modes
class FunctionLog(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        print("  function", getattr(func, "__name__", func))
        return func(*args, **(kwargs or {}))


class DispatchLog(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args]
        print("  dispatch", func, shapes)
        return func(*args, **(kwargs or {}))


section("torch function mode")
torch.manual_seed(0)
x = torch.randn(2, 3, 4)
with FunctionLog():
    with torch.autograd.profiler.record_function("r"):
        torch.nn.functional.linear(x, torch.ones(5, 4))
    torch.nn.Linear(4, 5)
    torch.tensor([1.0]), torch.as_tensor([1.0]), torch.zeros(2)
    torch.ops.aten.add.Tensor(x, x)
    torch.nn.functional.cross_entropy(torch.randn(3, 5), torch.tensor([1, 2, 3]))

section("torch dispatch mode")
w, b = torch.randn(5, 4), torch.randn(5)
r = torch.randn
inputs = {"1d": r(4), "2d": r(3, 4), "3d": r(2, 3, 4), "4d": r(2, 2, 3, 4), "3d strided": r(2, 4, 3).transpose(1, 2)}
for name, inp in inputs.items():
    for bias in (b, None) if name != "1d" else (b,):    # (1-d without bias ends in squeeze_, which ember lacks)
        print("linear", name, "bias" if bias is not None else "no bias")
        with DispatchLog():
            torch.nn.functional.linear(inp, w, bias)
pairs = [("3x2", r(2, 3, 4), r(4, 5)), ("3x1", r(2, 3, 4), r(4)), ("2x3", r(3, 4), r(2, 4, 5)),
         ("1x3", r(4), r(2, 4, 5)), ("4x3", r(2, 2, 3, 4), r(2, 4, 5)), ("3x4", r(2, 3, 4), r(3, 2, 4, 5)),
         ("strided 3x2", r(2, 4, 3).transpose(1, 2), r(4, 5)), ("2x2", r(3, 4), r(4, 5)), ("2x1", r(3, 4), r(4))]
for name, a0, b0 in pairs:
    for ga, gb in ((False, False), (True, False), (False, True)):
        a1, b1 = a0.clone().requires_grad_(ga), b0.clone().requires_grad_(gb)
        print("matmul", name, ga, gb)
        with DispatchLog():
            y = torch.matmul(a1, b1)
        print("  grad_fn", y.grad_fn.name() if y.grad_fn is not None else None)
t = torch.randn(2, 3, requires_grad=True)
print(t.reshape(6).grad_fn.name(), t.t().reshape(3, 2).grad_fn.name(), t.t().reshape(6).grad_fn.name())
with DispatchLog():
    t.reshape(6), t.t().reshape(3, 2), t.t().reshape(6)
sys.stdout.flush()
