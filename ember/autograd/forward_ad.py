"""``ember.autograd.forward_ad`` (mirrors ``torch/autograd/forward_ad.py``): forward-mode AD with dual tensors.

Inside a ``dual_level``, ``make_dual(x, v)`` gives a tensor that carries the tangent ``v``; every op on it computes
its result's tangent too (the Jacobian-vector product), and ``unpack_dual`` takes it out. How the ops do it:
Note [Dual tensors] in ember/autograd/forward_grad.py.
"""
from __future__ import annotations

from typing import Any, NamedTuple

from ember._generated import aten
from ember.autograd import forward_grad as _fg
from ember.autograd.grad_mode import _DecoratorContextManager

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

# the level ``make_dual`` / ``unpack_dual`` use by default (-1: none)
_current_level = -1


def enter_dual_level() -> int:
    """Enter a new forward grad level (the level ``make_dual`` and ``unpack_dual`` then use by default)."""
    global _current_level
    if _fg.state.levels:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    new_level = _fg.enter_level()
    if new_level != _current_level + 1:
        _fg.exit_level(new_level)
        raise RuntimeError("Entering a new forward AD level but the current level is not valid. Make sure you did "
                           "not modify it directly.")
    _current_level = new_level
    return new_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit a forward grad level, deleting every tangent of it. Only the newest level can be exited."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _fg.exit_level(level)
    _current_level = level - 1


def make_dual(tensor: Any, tangent: Any, *, level: int | None = None) -> Any:
    """A new tensor aliasing ``tensor`` that carries ``tangent`` as its forward gradient at ``level``; the tangent is
    kept as it is when it has ``tensor``'s layout, copied into one that has otherwise. Backward differentiable."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(f"Expected primal to be floating point or complex, but got: {tensor.dtype}")
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(f"Expected tangent to be floating point or complex, but got: {tangent.dtype}")
    return _make_dual(tensor, tangent, level)


def _make_dual(tensor: Any, tangent: Any, level: int) -> Any:
    if level not in _fg.state.levels:
        raise RuntimeError(f"Trying to create a dual Tensor at level {level}, which does not exist.")
    if _fg.tangent_of(tensor, level) is not None:
        raise RuntimeError(f"Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {level} is not supported.")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if type(tangent) is type(tensor) and tangent.stride() != tensor.stride() and tensor.numel() > 1:
        fresh = aten.empty_like(tensor, dtype=tangent.dtype)   # (a dense tensor's layout)
        fresh.copy_(tangent)
        tangent = fresh
    with _fg.hidden(level):   # the alias keeps the tangents of the other levels
        out = aten.view(tensor, tuple(tensor.shape))
    _fg.set_tangent(out, tangent, level)
    return out


class UnpackedDualTensor(NamedTuple):
    """``unpack_dual``'s result: the primal (a view of the dual tensor's value) and the tangent (or None)."""

    primal: Any
    tangent: Any


def unpack_dual(tensor: Any, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)``: a view of ``tensor``'s value that is not dual at ``level``, and its tangent there as it
    is (None if it has none). Backward differentiable."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(*_unpack_dual(tensor, level))


def _unpack_dual(tensor: Any, level: int) -> tuple[Any, Any]:
    tangent = _fg.tangent_of(tensor, level)
    with _fg.hidden(level):
        primal = aten.alias(tensor)
    if level in _fg.state.levels:
        _fg.set_tangent(primal, None, level)   # (not its base's either: Note [Dual tensors])
    return primal, tangent


class dual_level(_DecoratorContextManager):
    """Context manager for forward AD: every forward AD computation happens inside one. On exit, every tangent made
    inside is deleted. One level at a time (``ember.func.jvp`` nests)."""

    def __enter__(self) -> int:   # type: ignore[override]
        return enter_dual_level()

    def __exit__(self, *exc: object) -> None:
        exit_dual_level()


_set_fwd_grad_enabled = _fg.fwd_grad_enabled


def _is_fwd_grad_enabled() -> bool:
    return _fg.state.enabled
