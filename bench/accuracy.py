"""The accuracy of ember's float32 kernels beside PyTorch's: the largest error, in float32 ulps, against the
same function evaluated in float64 from its float32 inputs (NumPy / SciPy in float64).

    python -m bench.accuracy [--quick] [--markdown]

Inputs: a dense sweep over each function's range plus uniform samples in it. An ulp is that of the float64 value's own
binade (2^(e - 23)); results below 2^-126 (subnormal, their ulp absolute) are left out. Row functions are measured
per element of the output against the float64 evaluation of the whole row; those that subtract (log_softmax,
layer norm) in ulps of the row's largest value.
"""
from __future__ import annotations

import argparse
import math

import numpy as np


def _ulps(got: np.ndarray, ref: np.ndarray, per_row: bool = False) -> float:
    """The largest error in ulps of each value's own binade, or with ``per_row`` in ulps of the largest value of
    its row (log_softmax and layer norm subtract: an output near 0 has only the row's absolute accuracy)."""
    got = got.astype(np.float64)
    scale = np.abs(ref).max(-1, keepdims=True) * np.ones_like(ref) if per_row else np.abs(ref)
    ok = np.isfinite(ref) & (scale >= 2.0 ** -126) & (scale < 3.4e38)
    if not ok.any():
        return 0.0
    ulp = np.exp2(np.floor(np.log2(scale[ok])) - 23)
    return float(np.max(np.abs(got[ok] - ref[ok]) / ulp))


def _cases(quick: bool = False) -> list:
    from scipy import special

    rng = np.random.default_rng(0)

    n, m = (20001, 5000) if quick else (400001, 100000)

    def sweep(lo: float, hi: float) -> np.ndarray:
        return np.concatenate([np.linspace(lo, hi, n), rng.uniform(lo, hi, m)]).astype(np.float32)

    def gelu_tanh(x):
        u = math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
        e = np.exp(-2 * np.abs(u))                     # 1 + tanh(u) without its cancellation for u << 0
        return 0.5 * x * np.where(u >= 0, 2 / (1 + e), 2 * e / (1 + e))

    rows = rng.standard_normal((256 if quick else 2048, 128)).astype(np.float32) * 4

    def softmax64(x):
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def log_softmax64(x):
        s = x - x.max(-1, keepdims=True)
        return s - np.log(np.exp(s).sum(-1, keepdims=True))

    def layer_norm64(x):
        m = x.mean(-1, keepdims=True)
        return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + 1e-5)

    return [
        ("exp", sweep(-103, 88.7), lambda t, x: t.exp(x), np.exp),
        ("sigmoid", sweep(-88, 30), lambda t, x: t.sigmoid(x), special.expit),
        ("gelu (erf)", sweep(-13, 13), lambda t, x: t.nn.functional.gelu(x),
         lambda x: 0.5 * x * special.erfc(-x / math.sqrt(2))),
        ("gelu (erf), x > -3", sweep(-3, 13), lambda t, x: t.nn.functional.gelu(x),
         lambda x: 0.5 * x * special.erfc(-x / math.sqrt(2))),
        ("gelu (tanh)", sweep(-13, 13), lambda t, x: t.nn.functional.gelu(x, approximate="tanh"), gelu_tanh),
        ("silu", sweep(-88, 30), lambda t, x: t.nn.functional.silu(x), lambda x: x * special.expit(x)),
        ("tanh", sweep(-10, 10), lambda t, x: t.tanh(x), np.tanh),
        ("erf", sweep(-5, 5), lambda t, x: t.erf(x), special.erf),
        ("softplus", sweep(-100, 20), lambda t, x: t.nn.functional.softplus(x), lambda x: np.logaddexp(0, x)),
        ("log_sigmoid", sweep(-20, 100), lambda t, x: t.nn.functional.logsigmoid(x), lambda x: -np.logaddexp(0, -x)),
        ("elu", sweep(-20, 10), lambda t, x: t.nn.functional.elu(x), lambda x: np.where(x > 0, x, np.expm1(x))),
        ("mish", sweep(-100, 20), lambda t, x: t.nn.functional.mish(x), lambda x: x * np.tanh(np.logaddexp(0, x))),
        ("softmax rows of 128", rows, lambda t, x: t.softmax(x, -1), softmax64),
        ("log_softmax rows of 128 *", rows, lambda t, x: t.log_softmax(x, -1), log_softmax64),
        ("layer_norm rows of 128 *", rows, lambda t, x: t.nn.functional.layer_norm(x, (128,)), layer_norm64),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer points (a smoke run)")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    import ember
    import torch

    from bench._timing import machine
    print(f"float32 kernels, max error in ulps against float64; ember {ember.__version__}, torch {torch.__version__}")
    print(f"machine: {machine()} (PyTorch's vector math depends on its CPU capability: "
          f"{torch.backends.cpu.get_cpu_capability()})")
    fmt = "| {} | {} | {} |" if args.markdown else "{:<28}{:>12}{:>12}"
    print(fmt.format("function", "ember", "torch"))
    if args.markdown:
        print("|---|---|---|")
    for name, x, op, ref in _cases(args.quick):
        want = ref(x.astype(np.float64))
        e = op(ember, ember.tensor(x)).numpy()
        t = op(torch, torch.tensor(x)).numpy()
        row = name.endswith("*")
        print(fmt.format(name, f"{_ulps(e, want, row):.1f}", f"{_ulps(t, want, row):.1f}"))
    print("* in ulps of the row's largest value")


if __name__ == "__main__":
    main()
