"""The loops of ember's fused kernels, compiled by numba, one module per family of operators.

Note [Compiled loops]
Where one NumPy kernel would make many passes over memory, a loop compiled by numba makes one. Each family module
here (``activation``, ``softmax``, ``normalization``, ``pointwise``, ``pooling``, ``convolution``, ``attention``,
``rnn``, ``optim``, ``random``, ``indexing``, ``linalg``, ``loss``, ``quantized``, ``reduction``, ``sparse``) holds
the loops and the runners that split them over the intra-op threads (``gemm`` holds the loop that calls BLAS once
per matrix of a batch); the kernel that uses them (``kernels/softmax.py`` for ``loops/softmax.py``) keeps its NumPy
formulation as the fallback and as the definition the loop must agree with, and reaches the loops by attribute,
``loops.softmax.softmax(x, log)``.
Importing numba costs 0.4 s, so ``import ember`` imports no family: this package loads one on first use (a module
``__getattr__``, PEP 562), after ``compiled.usable`` said numba is there. numba compiles each loop once per machine
and keeps the machine code in ``__pycache__`` beside the source (``cache=True``): only the first call after
installing ember pays the compilation (about a second per loop).

A loop takes the range of its work last (rows r0..r1, elements b..e) and a family gives its hot loops a parallel
driver (``compiled.parallel_of``, Note [Splitting a loop over threads] in ``compiled.py``), which runs the ranges
on numba's threading layer: a launch costs a microsecond where a pooled Python thread costs a wake-up.

The loops are written so that LLVM vectorizes them: no calls into libm, no branches but selects, and
``error_model="numpy"`` (numba's default Python error model checks every division for zero, which keeps a loop
scalar). The fast-math flags allow contraction into FMAs and reassociation, never the assumption that no value is
NaN or infinite, so NaN and inf propagate as in PyTorch. ``nogil`` lets threads run ranges of one array side by
side. A family's module says where it differs: index work (pooling, scatter, im2col / col2im), the optimizers'
updates and ``pointwise``'s arithmetic (rounding op by op, no fast math) and the Mersenne Twister (integer
arithmetic).

Note [float32 math]
The hot math loops (GELU, SiLU, the softmax and layer-norm rows, exp, sigmoid) compute in float32 vectors, as
PyTorch's kernels do: 8 lanes a vector with AVX2 and with AVX-512 (LLVM prefers 256-bit vectors there), twice the
float64 lanes. Their special functions (``_common.py``) are float32 helpers compiled apart with contraction but no
reassociation (which would undo the compensated steps below), bit casts included (``_as_float32``, an LLVM
bitcast, so that 2^n is built in the exponent bits and vectorizes):

- ``_expf(x)``: Cephes' expf, x = n ln 2 + r with ln 2 in two parts, e^r by a degree-7 polynomial, 2^n added to
  the exponent (in two steps where the result is subnormal): within 1.0 ulp;
- ``_two_phif(x)`` = 2 Phi(x) = erfc(-x / sqrt 2): Numerical Recipes' fit t exp(P(t) - z^2), z^2 = x^2 / 2 taken
  exactly as a + b (b the FMA's rounding error of a = (x / 2) x) and the rounding of the exponent carried as
  e^err ~ 1 + err, e^s built times 2^64 (always a normal float) and scaled back once,
  so GELU keeps its relative accuracy in the far negative tail where 1 + erf cancels: within 6.1 ulps, where
  PyTorch's 0.5 x (1 + erf(x / sqrt 2)) is 2000 ulps off already for x > -3 (``python -m bench.accuracy``);
- ``_one_plus_tanhf(u)`` = 1 + tanh(u) from e^(-2|u|), for a float64 u taken as float32 hi + lo: GELU's tanh
  form within 11 ulps;
- softmax rows take their max on ``_order_key``s (an int32 that orders as the float does: an integer max
  vectorizes where a float max that must keep NaN does not).

The LSTM cell's gates take ``_sigmoidf`` (1 / (1 + e^-x) from e^(-|x|)) and ``_tanhf`` (-m / (2 + m) from
m = e^(-2|x|) - 1 by ``_expm1f_le0``, which keeps the relative accuracy near 0): within 2.3 and 2.5 ulps, where
the float64 helpers below took twice as long for the step (85 -> 45 us for 20 x 256).

Where a float32 result would lose the relative accuracy the float64 one has (SiLU's gradient crosses 0 at
x = -1.28, the GRU cell's gates), or where float32 would need a log (softplus, ELU, log-sigmoid, Mish,
tanh: NumPy's float32 log1p and expm1 have no vector loop), the loop keeps float64 registers and the float64
helpers (``_exp_le1``: (e^(u/128))^128 by a Taylor polynomial and seven squarings; ``_expm1_le0``; ``_log1p_le1``:
2 atanh(e / (2 + e)) by its series; ``_softplus``; ``_erfc_ge0``; ``_one_plus_tanh``; ``_sigmoid``; ``_tanh``) and
rounds once: within about half an ulp; ``ember/_inductor/fusion.py``'s generated loops use them too.
"""
from __future__ import annotations

import importlib
from typing import Any

FAMILIES = ("activation", "attention", "convolution", "gemm", "indexing", "linalg", "loss", "normalization",
            "optim", "pointwise", "pooling", "quantized", "random", "reduction", "rnn", "softmax", "sparse")


def __getattr__(name: str) -> Any:
    if name not in FAMILIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
