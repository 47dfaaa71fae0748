"""Dynamic int8 quantization against float32 inference, ember and PyTorch, each in a process of its own.

    python -m bench.quantization [--quick] [--rounds 3]

Workloads: an MLP (1024-2048-2048-10, batch 64) and a 2-layer LSTM (256 inputs, 512 hidden, 32 steps, batch 16),
in eval mode under ``no_grad``. The int8 sides run the model after ``quantize_dynamic(model, {Linear, LSTM},
dtype=qint8)``: int8 weights, activations quantized at each call. Ratios are each side's time over ember int8's
(> 1: ember int8 is faster). ``bench/_timing.py`` explains the harness.
"""
from __future__ import annotations

import warnings

import numpy as np

from bench._timing import Bench, Side, Workload, run

OPTIONS = {"int8": False}


def _int8(lib):
    OPTIONS["int8"] = True


def _model(lib, kind, quick):
    nn = lib.nn
    lib.manual_seed(0)
    if kind == "mlp":
        width = 256 if quick else 2048
        model = nn.Sequential(nn.Linear(1024, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                              nn.Linear(width, 10))
        x = lib.tensor(np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32))
    else:
        hidden, steps = (64, 4) if quick else (512, 32)
        model = nn.Sequential(nn.LSTM(256, hidden, num_layers=2))   # quantize_dynamic swaps children only
        x = lib.tensor(np.random.default_rng(0).standard_normal((steps, 16, 256)).astype(np.float32))
    model.eval()
    if OPTIONS["int8"]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = lib.ao.quantization.quantize_dynamic(model, {nn.Linear, nn.LSTM}, dtype=lib.qint8)
        if kind == "lstm":
            model = model[0]

    def step():
        with lib.no_grad():
            return model(x)[0] if kind == "lstm" else model(x)
    return step


BENCH = Bench(__name__, __doc__,
              {"MLP 1024-2048-2048-10, batch 64": Workload(lambda lib, q: _model(lib, "mlp", q), 5),
               "LSTM 2x512, 32 steps, batch 16": Workload(lambda lib, q: _model(lib, "lstm", q), 2)},
              sides=(Side("ember int8", "ember", _int8), Side("ember float32", "ember"),
                     Side("torch int8", "torch", _int8), Side("torch float32", "torch")),
              ratios_to_all=True)


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
