"""ember.compile against PyTorch eager and torch.compile on the suite's workloads, each side in a process of its own.

    python -m bench.compiled [--quick] [--rounds 3] [--blocks 5] [--only TEXT] [--markdown]

Sides: ember with every workload's whole training step -- ``zero_grad()``, forward, loss, ``backward()``,
``optimizer.step()`` -- passed through ``ember.compile`` (the default backend; ``docs/compile.md``), PyTorch eager,
and PyTorch with the same step function through ``torch.compile`` (Inductor, which writes and builds C++ on this
machine; Dynamo breaks the step's graph at ``backward()`` and compiles the optimizer's step on its own). The
models, data, losses and optimizers are ``bench.suite``'s. The ratios are PyTorch's time over ember's (> 1: ember
compiled is faster).

The "model compiled" rows compile as most programs do: ``model = compile(model)`` (for the tiny graph the function
``(a * b).sum()``), with the loss, ``backward()`` and ``optimizer.step()`` run eagerly around the compiled forward and
its compiled backward; the compiled sides compile that way there, the eager side is the same.

The "first step" rows time what a user waits for on the first call: ``_dynamo.reset()``, building the workload and
one step, capture and compilation included (one call per block, three blocks).
"""
from __future__ import annotations

from bench import suite
from bench._timing import Bench, Side, Workload, run


def _compile_on(lib):
    lib._bench_compile = True


def _model_only(make):
    """The workload with only its model compiled, on the sides that compile (``suite._model``)."""
    def workload(lib, quick):
        side = getattr(lib, "_bench_compile", False)
        lib._bench_compile = "model" if side else False
        try:
            return make(lib, quick)      # (the model is compiled here, when the workload is built)
        finally:
            lib._bench_compile = side
    return workload


def _first_step(make):
    def workload(lib, quick):
        def first():
            lib._dynamo.reset()
            make(lib, quick)()
        return first
    return workload


BENCH = Bench(__name__, __doc__, {
    "tiny (a*b).sum().backward()": Workload(suite.tiny_backward, 500, warm=20, quick_number=5),
    "MLP 784-512-512-10 b128 SGD-mom": Workload(suite.mlp, 10, warm=3),
    "LeNet-5 64x1x28x28 Adam": Workload(suite.lenet, 5, warm=3),
    "ResNet stack 32x3x32x32 SGD": Workload(suite.resnet_stack, 2, warm=3),
    "GPT 4L d128 h4 ctx64 b16 AdamW": Workload(suite.gpt, 2, warm=3),
    "model compiled: tiny (a*b).sum() + backward": Workload(_model_only(suite.tiny_backward), 500, warm=20,
                                                            quick_number=5),
    "model compiled: MLP": Workload(_model_only(suite.mlp), 10, warm=3),
    "model compiled: LeNet-5": Workload(_model_only(suite.lenet), 5, warm=3),
    "model compiled: ResNet stack": Workload(_model_only(suite.resnet_stack), 2, warm=3),
    "model compiled: GPT": Workload(_model_only(suite.gpt), 2, warm=3),
    "first step (compile): MLP": Workload(_first_step(suite.mlp), 1, warm=0, blocks=3),
    "first step (compile): GPT": Workload(_first_step(suite.gpt), 1, warm=0, blocks=3),
}, sides=(Side("ember compiled", "ember", _compile_on), Side("torch", "torch"),
          Side("torch compiled", "torch", _compile_on)))


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
