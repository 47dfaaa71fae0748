"""The in-place tensor operations PyTorch's single-tensor optimizers are written in, on arrays.

Each helper applies one PyTorch operation with PyTorch's formula and its rounding order (Python
scalars are rounded to the array's dtype first, as PyTorch's CPU kernels do); ``t`` is a scratch
array of the same shape.  They serve both paths of Note [Flat buffers].
"""
from __future__ import annotations


def lerp_(xp, a, b, w: float, t) -> None:
    """``a.lerp_(b, w)``: ``a + w * (b - a)`` for ``|w| < 0.5``, else ``b - (b - a) * (1 - w)``."""
    xp.subtract(b, a, out=t)
    w = a.dtype.type(w)
    if abs(w) < 0.5:
        t *= w
        a += t
    else:
        t *= a.dtype.type(1) - w
        xp.subtract(b, t, out=a)


def add_scaled_(xp, a, b, alpha: float, t) -> None:
    """``a.add_(b, alpha=alpha)``: ``a + alpha * b``."""
    if alpha == 1:
        a += b              # 1 * b is b exactly: one pass fewer
        return
    xp.multiply(b, alpha, out=t)
    a += t


def addcmul_(xp, a, b, c, value: float, t) -> None:
    """``a.addcmul_(b, c, value=value)``: ``a + value * b * c``."""
    xp.multiply(b, value, out=t)
    t *= c
    a += t


def addcdiv_(xp, a, b, c, value: float, t) -> None:
    """``a.addcdiv_(b, c, value=value)``: ``a + value * b / c``."""
    xp.multiply(b, value, out=t)
    t /= c
    a += t


def ema_sq_(xp, v, g, beta: float, t) -> None:
    """``v.mul_(beta).addcmul_(g, g, value=1 - beta)``."""
    v *= beta
    addcmul_(xp, v, g, g, 1 - beta, t)


def weight_decay_(xp, g, p, weight_decay: float, t) -> None:
    """``grad = grad.add(param, alpha=weight_decay)`` (``g`` is the step's private copy)."""
    if weight_decay != 0:
        add_scaled_(xp, g, p, weight_decay, t)


def adam_moments_(xp, p, g, exp_avg, exp_avg_sq, c, t) -> None:
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
