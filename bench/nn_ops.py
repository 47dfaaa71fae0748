"""The hot multi-pass ops of the suite's models, one at a time, forward + backward, ember against PyTorch.

    python -m bench.nn_ops [--quick] [--self-check] [--rounds 3] [--only TEXT] [--markdown]

Each op at the shape it has in ``bench.suite``'s workloads (float32, 2 threads each, a process per op and
framework, alternating, medians; ``bench/_timing.py`` explains the harness): cross entropy over the GPT's
1024 x 1000 logits, softmax over its 64 x 64 x 64 attention scores, LayerNorm(128) and GELU on its activations,
causal scaled dot-product attention (16 x 4 heads x 64 x 32), LeNet's second convolution and first max pool,
the conv autoencoder's stride-2 transposed convolution; the GPT's token embedding (1000 x 128 looked up at
16 x 64) and its attention products as `bmm` / `baddbmm` (64 x (64 x 32 @ 32 x 64)), the encoder's dropout on its
16 x 64 x 512 feed-forward activations, the ResNet stack's BatchNorm2d(64) in training on 32 x 64 x 32 x 32,
the LSTM LM's LSTM 128 -> 256 over 35 steps of batch 20 (and a GRU of the same size). Each step is the op's
forward and the backward of a fixed gradient into its inputs. The optimizer rows time one ``step()`` over the
parameters of the GPT (AdamW) and of the MLP (SGD with momentum), their gradients fixed.
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


def embedding(lib, quick):
    emb = lib.nn.Embedding(100 if quick else 1000, 128)
    idx = lib.tensor(np.random.default_rng(2).integers(0, emb.num_embeddings, (2, 16) if quick else (16, 64)))
    return _fwd_bwd(lib, lambda w: lib.nn.functional.embedding(idx, w), [emb.weight], quick)


def dropout(lib, quick):
    lib.manual_seed(0)
    return _fwd_bwd(lib, lambda a: lib.nn.functional.dropout(a, 0.1, training=True),
                    [_tensor(lib, (2, 8, 64) if quick else (16, 64, 512))], quick)


def batch_norm(lib, quick):
    bn = lib.nn.BatchNorm2d(64)  # training mode: batch statistics, running stats updated
    return _fwd_bwd(lib, bn, [_tensor(lib, (4, 64, 8, 8) if quick else (32, 64, 32, 32))], quick)


def _rnn(lib, quick, cls):
    lib.manual_seed(0)
    rnn = cls(128, 32 if quick else 256)
    return _fwd_bwd(lib, lambda a: rnn(a)[0], [_tensor(lib, (5, 4, 128) if quick else (35, 20, 128))], quick)


def lstm(lib, quick):
    return _rnn(lib, quick, lib.nn.LSTM)


def gru(lib, quick):
    return _rnn(lib, quick, lib.nn.GRU)


def _batches(quick):
    return (4, 16, 8) if quick else (64, 64, 32)


def bmm(lib, quick):
    b, t, h = _batches(quick)
    return _fwd_bwd(lib, lib.bmm, [_tensor(lib, (b, t, h)), _tensor(lib, (b, h, t), seed=2)], quick)


def baddbmm(lib, quick):
    b, t, h = _batches(quick)
    bias = _tensor(lib, (b, t, t), seed=3)
    return _fwd_bwd(lib, lambda x, y: lib.baddbmm(bias, x, y, alpha=0.125),
                    [_tensor(lib, (b, t, h)), _tensor(lib, (b, h, t), seed=2)], quick)


def _optimizer_step(lib, shapes, make_opt):
    params = [_tensor(lib, s, seed=i) for i, s in enumerate(shapes)]
    for i, p in enumerate(params):
        p.grad = _tensor(lib, p.shape, seed=100 + i, grad=False)
    opt = make_opt(params)
    return opt.step


def adamw(lib, quick):
    d, v, c, layers = (32, 100, 16, 1) if quick else (128, 1000, 64, 4)
    block = [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (4 * d, d), (4 * d,), (d, 4 * d), (d,)]
    shapes = [(v, d), (c, d)] + block * layers + [(d,), (d,), (v, d)]  # the GPT's parameters
    return _optimizer_step(lib, shapes, lambda ps: lib.optim.AdamW(ps, lr=3e-4))


def sgd(lib, quick):
    w = 64 if quick else 512
    shapes = [(w, 784), (w,), (w, w), (w,), (10, w), (10,)]  # the MLP's parameters
    return _optimizer_step(lib, shapes, lambda ps: lib.optim.SGD(ps, lr=0.01, momentum=0.9))


BENCH = Bench(__name__, __doc__, {
    "cross_entropy 1024x1000": Workload(cross_entropy, 20, warm=3),
    "softmax 64x64x64 (last dim)": Workload(softmax, 20, warm=3),
    "LayerNorm(128) 1024x128": Workload(layer_norm, 20, warm=3),
    "GELU 1024x512": Workload(gelu, 20, warm=3),
    "SDPA causal 16x4x64x32": Workload(attention, 20, warm=3),
    "conv2d 64x6x14x14 * 16x6x5x5": Workload(conv, 10, warm=3),
    "conv_transpose2d 64x32x7x7 * 32x16x3x3 s2": Workload(conv_transpose, 10, warm=3),
    "max_pool2d 2 on 64x6x28x28": Workload(max_pool, 20, warm=3),
    "embedding 1000x128 at 16x64": Workload(embedding, 20, warm=3),
    "dropout 0.1 16x64x512": Workload(dropout, 20, warm=3),
    "BatchNorm2d(64) train 32x64x32x32": Workload(batch_norm, 5, warm=2),
    "LSTM 128->256 35x20": Workload(lstm, 5, warm=2),
    "GRU 128->256 35x20": Workload(gru, 5, warm=2),
    "bmm 64x(64x32 @ 32x64)": Workload(bmm, 20, warm=3),
    "baddbmm 64x(64x32 @ 32x64)": Workload(baddbmm, 20, warm=3),
    "AdamW step (GPT's parameters)": Workload(adamw, 10, warm=3),
    "SGD-momentum step (MLP's parameters)": Workload(sgd, 20, warm=3),
})


def main(argv=None):
    run(BENCH, argv)


if __name__ == "__main__":
    main()
