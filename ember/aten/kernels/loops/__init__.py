"""The loops of ember's fused kernels, compiled by numba, one module per family of operators.

Note [Compiled loops]
Where one NumPy kernel would make many passes over memory, a loop compiled by numba makes one. Each family module
here (``activation``, ``softmax``, ``normalization``, ``pooling``, ``convolution``, ``attention``, ``rnn``,
``optim``, ``random``, ``indexing``, ``linalg``, ``quantized``) holds the loops and the runners that split them over
the intra-op threads; the kernel that uses them (``kernels/softmax.py`` for ``loops/softmax.py``) keeps its NumPy
formulation as the fallback and as the definition the loop must agree with, and reaches the loops by attribute,
``loops.softmax.softmax(x, log)``. Importing numba costs 0.4 s, so ``import ember`` imports no family: this
package loads one on first use (a module ``__getattr__``, PEP 562), after ``compiled.usable`` said numba is there.
numba compiles each loop once per machine and keeps the machine code in ``__pycache__`` beside the source
(``cache=True``): only the first call after installing ember pays the compilation (about a second per loop).

The math kernels (GELU, the softmax and layer-norm rows, attention's rows) make one pass per stage over
C-contiguous float32 arrays: they read each input element once, compute in float64 registers and write one
float32 result, where the NumPy kernel they replace makes a dozen passes with as many temporaries. A family's
module says where it differs: index work (pooling, scatter, im2col / col2im), the optimizers'
updates (float32 rounding op by op, no fast-math) and the Mersenne Twister (integer arithmetic).

The math loops are written so that LLVM vectorizes them (4 float64 lanes with AVX2): no calls into libm, no
branches but selects, and ``error_model="numpy"`` (numba's default Python error model checks every division for
zero, which keeps a loop scalar). The fast-math flags allow contraction into FMAs and reassociation, never the
assumption that no value is NaN or infinite, so NaN and inf propagate as in PyTorch. ``nogil`` lets the
intra-op threads run chunks of one array side by side.

The special functions (``_common.py``) are evaluated from their textbook series, in float64:

- ``_exp_le1(u)`` = e^u for u <= 1: (e^(u/128))^128, the inner power by its Taylor polynomial of degree 12
  (|u/128| <= 0.86, truncation 2e-11 relative), then seven squarings (relative error 3e-9 at worst);
  below -110 the result is 0 (e^-110 already underflows float32);
- ``_erfc_ge0(z)`` = erfc(z) for z >= 0: Numerical Recipes' Chebyshev fit t * exp(-z^2 + P(t)),
  t = 1 / (1 + z/2), fractional error below 1.2e-7 everywhere -- so GELU's tail 0.5 x erfc(-x/sqrt 2) keeps
  its relative accuracy far out, where 1 + erf(x) would cancel;
- ``_one_plus_tanh(u)`` = 1 + tanh(u) from e^(-2|u|), without the cancellation of 1 + tanh(u) for u << 0.
"""
from __future__ import annotations

import importlib
from typing import Any

FAMILIES = ("activation", "attention", "convolution", "indexing", "linalg", "normalization", "optim", "pooling",
            "quantized", "random", "rnn", "softmax")


def __getattr__(name: str) -> Any:
    if name not in FAMILIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
