"""The hot multi-pass ops of the suite's models, one at a time, forward + backward, ember against PyTorch.

    python -m bench.nn_ops [--quick] [--self-check] [--rounds 3] [--only TEXT] [--markdown]

Each op at the shape it has in ``bench.suite``'s workloads (float32, 2 threads each, a process per op and
framework, alternating, medians; ``bench/_timing.py`` explains the harness): cross entropy over the GPT's
1024 x 1000 logits, softmax over its 64 x 64 x 64 attention scores, LayerNorm(128) and GELU on its activations,
causal scaled dot-product attention (16 x 4 heads x 64 x 32), LeNet's second convolution and first max pool,
the conv autoencoder's stride-2 transposed convolution. Each step is the op's forward and the backward of a
fixed gradient into its inputs.
"""
from __future__ import annotations

import numpy as np

from bench._timing import Bench, Workload, run


def _tensor(lib, shape, seed=0, grad=True):
    x = lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    return x.requires_grad_() if grad else x


def _fwd_bwd(lib, fn, inputs, quick):
    out = fn(*inputs)
    g = _tensor(lib, tuple(out.shape), seed=1, grad=False)

    def step():
        for t in inputs:
            t.grad = None
        fn(*inputs).backward(g)
    return step


def cross_entropy(lib, quick):
    n, c = (64, 100) if quick else (1024, 1000)
    x = _tensor(lib, (n, c))
    y = lib.tensor(np.random.default_rng(2).integers(0, c, n))

    def step():
        x.grad = None
        lib.nn.functional.cross_entropy(x, y).backward()
    return step


def softmax(lib, quick):
    return _fwd_bwd(lib, lambda a: lib.softmax(a, -1), [_tensor(lib, (4, 16, 16) if quick else (64, 64, 64))], quick)


def layer_norm(lib, quick):
    ln = lib.nn.LayerNorm(128)
    return _fwd_bwd(lib, ln, [_tensor(lib, (64, 128) if quick else (1024, 128))], quick)


def gelu(lib, quick):
    return _fwd_bwd(lib, lib.nn.functional.gelu, [_tensor(lib, (64, 512) if quick else (1024, 512))], quick)


def attention(lib, quick):
    shape = (2, 2, 16, 8) if quick else (16, 4, 64, 32)
    qkv = [_tensor(lib, shape, seed=s) for s in range(3)]
    return _fwd_bwd(lib, lambda q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                    qkv, quick)


def conv(lib, quick):
    x = _tensor(lib, (8 if quick else 64, 6, 14, 14))
    w = _tensor(lib, (16, 6, 5, 5), seed=2)
    return _fwd_bwd(lib, lib.nn.functional.conv2d, [x, w], quick)


def conv_transpose(lib, quick):
    x = _tensor(lib, (8 if quick else 64, 32, 7, 7))
    w = _tensor(lib, (32, 16, 3, 3), seed=2)
    return _fwd_bwd(lib, lambda a, b: lib.nn.functional.conv_transpose2d(a, b, stride=2, padding=1,
                                                                          output_padding=1), [x, w], quick)


def max_pool(lib, quick):
    return _fwd_bwd(lib, lambda a: lib.nn.functional.max_pool2d(a, 2), [_tensor(lib, (8 if quick else 64, 6, 28, 28))],
                    quick)


BENCH = Bench(__name__, __doc__, {
    "cross_entropy 1024x1000": Workload(cross_entropy, 20, warm=3),
    "softmax 64x64x64 (last dim)": Workload(softmax, 20, warm=3),
    "LayerNorm(128) 1024x128": Workload(layer_norm, 20, warm=3),
    "GELU 1024x512": Workload(gelu, 20, warm=3),
    "SDPA causal 16x4x64x32": Workload(attention, 20, warm=3),
    "conv2d 64x6x14x14 * 16x6x5x5": Workload(conv, 10, warm=3),
    "conv_transpose2d 64x32x7x7 * 32x16x3x3 s2": Workload(conv_transpose, 10, warm=3),
    "max_pool2d 2 on 64x6x28x28": Workload(max_pool, 20, warm=3),
})


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
