"""The array updates of ember's fused optimizer ops (``aten/composite/optim.py``), run over a parameter group's
arenas or one tensor's arrays by ``aten/arena.py`` (Note [Fused optimizer steps]).

Each ``<optimizer>_update(xp, p, g, T, c, tmp)`` applies PyTorch's single-tensor implementation of the optimizer,
operation by operation, with its rounding order, to the parameter ``p`` given its gradient ``g`` (a private copy the
update may overwrite), its state arrays ``T`` (by PyTorch's state names) and the step's Python floats ``c``; ``tmp(i)``
is the i-th scratch array shaped as ``p``. The helpers below apply one PyTorch tensor operation each (Python scalars
are rounded to the array's dtype first, as PyTorch's CPU kernels do).

SGD and Adam / AdamW on float32 run as one compiled loop (``sgd_step`` / ``adam_step`` in ``loops/optim.py``)
that rounds every intermediate as these NumPy passes do, so both give the same bits (tested).
"""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import numpy as np

from ember.aten import parallel
from ember.aten.kernels import compiled, loops


def lerp_(xp: Any, a: Array, b: Array, w: float, t: Array) -> None:
    """``a.lerp_(b, w)``: ``a + w * (b - a)`` for ``|w| < 0.5``, else ``b - (b - a) * (1 - w)``."""
    xp.subtract(b, a, out=t)
    w = a.dtype.type(w)
    if abs(w) < 0.5:
        t *= w
        a += t
    else:
        t *= a.dtype.type(1) - w
        xp.subtract(b, t, out=a)


def add_scaled_(xp: Any, a: Array, b: Array, alpha: float, t: Array) -> None:
    """``a.add_(b, alpha=alpha)``: ``a + alpha * b``."""
    if alpha == 1:
        a += b              # 1 * b is b exactly: one pass fewer
        return
    xp.multiply(b, alpha, out=t)
    a += t


def addcmul_(xp: Any, a: Array, b: Array, c: Any, value: float, t: Array) -> None:
    """``a.addcmul_(b, c, value=value)``: ``a + value * b * c``."""
    xp.multiply(b, value, out=t)
    t *= c
    a += t


def addcdiv_(xp: Any, a: Array, b: Array, c: Any, value: float, t: Array) -> None:
    """``a.addcdiv_(b, c, value=value)``: ``a + value * b / c``."""
    xp.multiply(b, value, out=t)
    t /= c
    a += t


def ema_sq_(xp: Any, v: Any, g: Any, beta: float, t: Array) -> None:
    """``v.mul_(beta).addcmul_(g, g, value=1 - beta)``."""
    v *= beta
    addcmul_(xp, v, g, g, 1 - beta, t)


def weight_decay_(xp: Any, g: Any, p: Any, weight_decay: float, t: Array) -> None:
    """``grad = grad.add(param, alpha=weight_decay)`` (``g`` is the step's private copy)."""
    if weight_decay != 0:
        add_scaled_(xp, g, p, weight_decay, t)


def adam_moments_(xp: Any, p: Any, g: Any, exp_avg: Any, exp_avg_sq: Any, c: Any, t: Array) -> None:
    """The common start of Adam, NAdam and RAdam: weight decay (``p *= 1 - lr * wd`` when decoupled,
    else ``g += wd * p``), then ``exp_avg.lerp_(g, 1 - beta1)`` and
    ``exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)``."""
    wd = c["weight_decay"]
    if wd != 0:
        if c["decoupled"]:
            p *= 1 - c["lr"] * wd
        else:
            weight_decay_(xp, g, p, wd, t)
    lerp_(xp, exp_avg, g, 1 - c["beta1"], t)
    ema_sq_(xp, exp_avg_sq, g, c["beta2"], t)


# Elements per range of the compiled updates over the threads. The update is a step's only pass over the
# optimizer's memory, so it runs after the backward's GEMMs (Note [Two thread pools] in parallel.py).
SGD_GRAIN = compiled.CHEAP_GRAIN      # a memory pass: 5 float32 reads and writes an element, 3 flops
ADAM_GRAIN = parallel.GRAIN_SIZE      # ~20 flops with a square root and a division: Adam on 670k values (an MLP's)
#                                       862 -> 590 us split in two, 2-core AMD EPYC (best of two alternating runs)


def _flat_float32(xp: Any, *arrays: Any) -> list[Any] | None:
    """The arrays as flat views when the compiled updates apply (float32, C-contiguous, NumPy), else None."""
    if not compiled.usable(xp, *arrays) or not all(a.flags.c_contiguous for a in arrays):
        return None
    return [a.reshape(-1) for a in arrays]


def compiled_update(xp: Any, p: Any) -> bool:
    """Whether ``sgd_update`` / ``adam_update`` run their compiled loop on ``p`` (it splits itself over the threads,
    so the arena runs it once over the whole buffer)."""
    return _flat_float32(xp, p) is not None


def sgd_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    momentum = c["momentum"]
    flat = _flat_float32(xp, p, g, *([T["momentum_buffer"]] if momentum != 0 else []))
    if flat is not None:
        f32 = np.float32
        buf = flat[2] if momentum != 0 else flat[0]
        compiled.split(loops.optim.sgd_step, flat[0].size, SGD_GRAIN, flat[0], flat[1], buf, f32(c["weight_decay"]),
                       f32(momentum), f32(1 - c["dampening"]), f32(-c["lr"]), c["weight_decay"] != 0, momentum != 0,
                       bool(c["fresh"]), bool(c["nesterov"]))
        return
    t = tmp(0)
    weight_decay_(xp, g, p, c["weight_decay"], t)
    if momentum != 0:
        buf = T["momentum_buffer"]
        if c["fresh"]:
            xp.copyto(buf, g)
        else:
            buf *= momentum
            add_scaled_(xp, buf, g, 1 - c["dampening"], t)
        if c["nesterov"]:
            add_scaled_(xp, g, buf, momentum, t)
        else:
            g = buf
    add_scaled_(xp, p, g, -c["lr"], t)


sgd_update.compiled = compiled_update      # type: ignore[attr-defined]


def adam_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    ams = [T["max_exp_avg_sq"]] if c["amsgrad"] else []
    flat = _flat_float32(xp, p, g, T["exp_avg"], T["exp_avg_sq"], *ams)
    if flat is not None:
        f32 = np.float32
        w1 = f32(1 - c["beta1"])
        wd = c["weight_decay"]
        mode = 0 if wd == 0 else 1 if c["decoupled"] else 2
        compiled.split(loops.optim.adam_step, flat[0].size, ADAM_GRAIN, *flat[:4], flat[4] if ams else flat[3],
                       f32(1 - c["lr"] * wd), f32(wd), w1, f32(1) - w1, bool(abs(w1) < 0.5), f32(c["beta2"]),
                       f32(1 - c["beta2"]), f32(c["bias_correction2_sqrt"]), f32(c["eps"]), f32(-c["step_size"]),
                       mode, bool(c["amsgrad"]))
        return
    t = tmp(0)
    exp_avg, exp_avg_sq = T["exp_avg"], T["exp_avg_sq"]
    adam_moments_(xp, p, g, exp_avg, exp_avg_sq, c, t)
    if c["amsgrad"]:
        xp.maximum(T["max_exp_avg_sq"], exp_avg_sq, out=T["max_exp_avg_sq"])
        exp_avg_sq = T["max_exp_avg_sq"]
    denom = tmp(1)
    xp.sqrt(exp_avg_sq, out=denom)
    denom /= c["bias_correction2_sqrt"]
    denom += c["eps"]
    addcdiv_(xp, p, exp_avg, denom, -c["step_size"], t)


adam_update.compiled = compiled_update     # type: ignore[attr-defined]


def adagrad_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    t, std = tmp(0), tmp(1)
    weight_decay_(xp, g, p, c["weight_decay"], t)
    state_sum = T["sum"]
    addcmul_(xp, state_sum, g, g, 1, t)
    xp.sqrt(state_sum, out=std)
    std += c["eps"]
    addcdiv_(xp, p, g, std, -c["clr"], t)


def rmsprop_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    t, avg = tmp(0), tmp(1)
    weight_decay_(xp, g, p, c["weight_decay"], t)
    square_avg = T["square_avg"]
    alpha = c["alpha"]
    ema_sq_(xp, square_avg, g, alpha, t)
    if c["centered"]:
        grad_avg = T["grad_avg"]
        lerp_(xp, grad_avg, g, 1 - alpha, t)
        xp.copyto(avg, square_avg)
        addcmul_(xp, avg, grad_avg, grad_avg, -1, t)
        xp.sqrt(avg, out=avg)
    else:
        xp.sqrt(square_avg, out=avg)
    avg += c["eps"]
    if c["momentum"] > 0:
        buf = T["momentum_buffer"]
        buf *= c["momentum"]
        addcdiv_(xp, buf, g, avg, 1, t)
        add_scaled_(xp, p, buf, -c["lr"], t)
    else:
        addcdiv_(xp, p, g, avg, -c["lr"], t)


def adadelta_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    t, std, delta = tmp(0), tmp(1), tmp(2)
    weight_decay_(xp, g, p, c["weight_decay"], t)
    square_avg, acc_delta = T["square_avg"], T["acc_delta"]
    rho, eps = c["rho"], c["eps"]
    ema_sq_(xp, square_avg, g, rho, t)
    xp.add(square_avg, eps, out=std)
    xp.sqrt(std, out=std)
    xp.add(acc_delta, eps, out=delta)
    xp.sqrt(delta, out=delta)
    delta /= std
    delta *= g
    ema_sq_(xp, acc_delta, delta, rho, t)
    add_scaled_(xp, p, delta, -c["lr"], t)


def adamax_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    t = tmp(0)
    weight_decay_(xp, g, p, c["weight_decay"], t)
    exp_avg, exp_inf = T["exp_avg"], T["exp_inf"]
    lerp_(xp, exp_avg, g, 1 - c["beta1"], t)
    exp_inf *= c["beta2"]
    xp.abs(g, out=t)
    t += c["eps"]
    xp.maximum(exp_inf, t, out=exp_inf)
    addcdiv_(xp, p, exp_avg, exp_inf, -c["clr"], t)


def nadam_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    t, denom = tmp(0), tmp(1)
    exp_avg, exp_avg_sq = T["exp_avg"], T["exp_avg_sq"]
    adam_moments_(xp, p, g, exp_avg, exp_avg_sq, c, t)
    xp.divide(exp_avg_sq, c["bias_correction2"], out=denom)
    xp.sqrt(denom, out=denom)
    denom += c["eps"]
    addcdiv_(xp, p, g, denom, c["grad_coef"], t)
    addcdiv_(xp, p, exp_avg, denom, c["avg_coef"], t)


def radam_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    t, u = tmp(0), tmp(1)
    exp_avg, exp_avg_sq = T["exp_avg"], T["exp_avg_sq"]
    adam_moments_(xp, p, g, exp_avg, exp_avg_sq, c, t)
    xp.divide(exp_avg, c["bias_correction1"], out=u)   # bias-corrected exp_avg
    u *= c["lr"]
    if c["rect"] is not None:
        xp.sqrt(exp_avg_sq, out=t)
        t += c["eps"]
        xp.divide(c["bias_correction2_sqrt"], t, out=t)   # the adaptive learning rate
        u *= t
        u *= c["rect"]
    p -= u


def asgd_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    t = tmp(0)
    weight_decay_(xp, g, p, c["weight_decay"], t)
    eta = c["eta"]
    p *= 1 - c["lambd"] * eta
    add_scaled_(xp, p, g, -eta, t)
    ax = T["ax"]
    if c["mu"] != 1:
        xp.subtract(p, ax, out=t)
        t *= c["mu"]
        ax += t
    else:
        xp.copyto(ax, p)


def rprop_update(xp: Any, p: Any, g: Any, T: Any, c: Any, tmp: Any) -> Any:
    sign = tmp(0)
    prev, step_size = T["prev"], T["step_size"]
    xp.multiply(g, prev, out=sign)
    xp.sign(sign, out=sign)
    positive, negative, zero = sign > 0, sign < 0, sign == 0
    xp.copyto(sign, c["etaplus"], where=positive)
    xp.copyto(sign, c["etaminus"], where=negative)
    xp.copyto(sign, 1, where=zero)
    step_size *= sign
    xp.clip(step_size, c["min"], c["max"], out=step_size)
    xp.copyto(g, 0, where=sign == sign.dtype.type(c["etaminus"]))
    xp.copyto(prev, g)
    xp.sign(g, out=g)
    g *= -1
    g *= step_size
    p += g
