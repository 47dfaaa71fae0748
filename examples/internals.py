"""How one ember.nn.Linear forward and backward runs, layer by layer (for learners).

    python examples/internals.py [--no-backward]

For each operator call it prints the binding's operator, the dispatch key set it carries, the keys the
dispatcher visits (fallthroughs, then the kernel that runs: the autograd kernel, then the CPU kernel that
calls NumPy), indented by nesting; then the autograd graph the forward recorded, the backward's calls, and
which ember file mirrors which PyTorch file.
"""
from __future__ import annotations

import argparse
import contextlib

import ember
from ember.aten.dispatcher import OperatorHandle
from ember.c10.dispatch_key import DispatchKeySet

MIRRORS = [
    ("ember/nn/modules/linear.py", "torch/nn/modules/linear.py", "Linear.forward calls F.linear"),
    ("ember/_generated/functions.py", "torch/csrc/autograd/generated/python_torch_functions.cpp",
     "the binding: argument parsing, the key set of the inputs"),
    ("ember/aten/dispatcher.py", "aten/src/ATen/core/dispatch/Dispatcher.h", "key set -> kernel, cached"),
    ("ember/aten/composite/", "CompositeImplicitAutograd ops in aten/src/ATen/native/", "linear = addmm / matmul"),
    ("ember/_generated/autograd.py", "torch/csrc/autograd/generated/VariableType_*.cpp",
     "the Autograd kernel: records a Node, redispatches below Autograd"),
    ("ember/autograd/derivatives.yaml", "tools/autograd/derivatives.yaml", "the backward formulas"),
    ("ember/_generated/registrations.py", "RegisterCPU.cpp (generated)", "unwraps tensors to arrays"),
    ("ember/aten/kernels/", "aten/src/ATen/native/*.cpp", "the NumPy kernels"),
    ("ember/autograd/engine.py", "torch/csrc/autograd/engine.cpp", "runs the graph backward"),
]


def numpy_kernel(backend_fn):
    """The array kernel a generated CPU/CUDA wrapper calls (the ``_k`` its factory closed over), as module.name."""
    code = getattr(backend_fn, "__code__", None)
    if code is None or "_k" not in code.co_freevars:
        return None
    fn = backend_fn.__closure__[code.co_freevars.index("_k")].cell_contents
    return f"{fn.__module__}.{fn.__name__}"


@contextlib.contextmanager
def trace_dispatch(log):
    """Log every OperatorHandle.call / redispatch (what PyTorch's TorchDispatchMode would show)."""
    original_call, original_redispatch = OperatorHandle.call, OperatorHandle.redispatch
    depth = [0]

    def describe(handle, ks, how):
        keys = DispatchKeySet(ks)
        steps = handle.dispatch_trace(ks) if how == "call" else [handle.dispatch_trace(ks)[-1]]
        kernel = numpy_kernel(handle.resolve((ks | 0)))
        if kernel:
            steps.append(f"NumPy kernel {kernel}")
        return f"{'  ' * depth[0]}{handle.qualified_name}  {how}  keys={keys}\n" + "".join(
            f"{'  ' * depth[0]}    -> {s}\n" for s in steps)

    def call(self, ks, *args):
        log.append(describe(self, (ks | 0), "call"))
        depth[0] += 1
        try:
            return original_call(self, ks, *args)
        finally:
            depth[0] -= 1

    def redispatch(self, ks, *args):
        log.append(describe(self, ks, "redispatch"))
        depth[0] += 1
        try:
            return original_redispatch(self, ks, *args)
        finally:
            depth[0] -= 1

    OperatorHandle.call, OperatorHandle.redispatch = call, redispatch
    try:
        yield
    finally:
        OperatorHandle.call, OperatorHandle.redispatch = original_call, original_redispatch


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--no-backward", action="store_true", help="stop after the forward")
    args = p.parse_args(argv)
    ember.manual_seed(0)
    lin = ember.nn.Linear(3, 2)
    x = ember.randn(4, 3)

    log: list = []
    with trace_dispatch(log):
        y = lin(x)
        loss = y.sum()
    print("== forward: lin(x).sum(), x of shape [4, 3]\n")
    print("".join(log))
    print("== the autograd graph it recorded\n")
    print(ember.autograd.graph_text(loss), "\n")
    if not args.no_backward:
        log.clear()
        with trace_dispatch(log):
            loss.backward()
        print("== backward: loss.backward() (the engine runs each Node; formulas call operators)\n")
        print("".join(log))
        print("weight.grad =", lin.weight.grad, "\n")
    print("== which ember file mirrors which PyTorch file\n")
    width = max(len(e) for e, _, _ in MIRRORS)
    for e, t, what in MIRRORS:
        print(f"{e:<{width}}  {t}\n{'':<{width}}  ({what})")


if __name__ == "__main__":
    main()
