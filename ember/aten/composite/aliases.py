"""PyTorch's aliases (``absolute`` for ``abs``, ``multiply`` for ``mul``, ``arccos`` for ``acos``, ``fix`` for
``trunc``, ``greater_`` for ``gt_``, ...): CompositeImplicitAutograd ops that call their base op, so autograd records
the base's node (``absolute(x).grad_fn`` is AbsBackward0, as in PyTorch). Made from one table: the alias's
function name, the Tensor method of its base, and the keyword-only arguments it passes on by name."""
from __future__ import annotations

from typing import Any, Callable

__all__: list[str] = []

_ALIASES = (
    ('absolute', 'abs', ()),
    ('absolute_', 'abs_', ()),
    ('arccos', 'acos', ()),
    ('arccos_', 'acos_', ()),
    ('arcsin', 'asin', ()),
    ('arcsin_', 'asin_', ()),
    ('arctan', 'atan', ()),
    ('arctan_', 'atan_', ()),
    ('arccosh', 'acosh', ()),
    ('arccosh_', 'acosh_', ()),
    ('arcsinh', 'asinh', ()),
    ('arcsinh_', 'asinh_', ()),
    ('arctanh', 'atanh', ()),
    ('arctanh_', 'atanh_', ()),
    ('arctan2', 'atan2', ()),
    ('arctan2_', 'atan2_', ()),
    ('multiply_Tensor', 'mul', ()),
    ('multiply_Scalar', 'mul', ()),
    ('multiply__Tensor', 'mul_', ()),
    ('multiply__Scalar', 'mul_', ()),
    ('divide_Tensor', 'div', ()),
    ('divide_Scalar', 'div', ()),
    ('divide_Tensor_mode', 'div', ('rounding_mode',)),
    ('divide_Scalar_mode', 'div', ('rounding_mode',)),
    ('divide__Tensor', 'div_', ()),
    ('divide__Tensor_mode', 'div_', ('rounding_mode',)),
    ('divide__Scalar_mode', 'div_', ('rounding_mode',)),
    ('divide__Scalar', 'div_', ()),
    ('true_divide_Tensor', 'div', ()),
    ('true_divide_Scalar', 'div', ()),
    ('true_divide__Tensor', 'div_', ()),
    ('true_divide__Scalar', 'div_', ()),
    ('subtract_Tensor', 'sub', ('alpha',)),
    ('subtract_Scalar', 'sub', ('alpha',)),
    ('subtract__Tensor', 'sub_', ('alpha',)),
    ('subtract__Scalar', 'sub_', ('alpha',)),
    ('negative', 'neg', ()),
    ('negative_', 'neg_', ()),
    ('fix', 'trunc', ()),
    ('fix_', 'trunc_', ()),
    ('greater__Scalar', 'gt_', ()),
    ('greater__Tensor', 'gt_', ()),
    ('less__Scalar', 'lt_', ()),
    ('less__Tensor', 'lt_', ()),
    ('greater_equal__Scalar', 'ge_', ()),
    ('greater_equal__Tensor', 'ge_', ()),
    ('less_equal__Scalar', 'le_', ()),
    ('less_equal__Tensor', 'le_', ()),
    ('not_equal__Scalar', 'ne_', ()),
    ('not_equal__Tensor', 'ne_', ()),
)


def _alias(method: str, keywords: tuple[str, ...]) -> Callable[..., Any]:
    n_kw = len(keywords)

    def fn(self: Any, *args: Any) -> Any:
        positional = args[:len(args) - n_kw]
        return getattr(self, method)(*positional, **dict(zip(keywords, args[len(args) - n_kw:])))
    return fn


for _name, _method, _keywords in _ALIASES:
    _fn = _alias(_method, _keywords)
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.is_alias = True     # type: ignore[attr-defined]  # (composite_kernel in ember/aten/backends.py)
    globals()[_name] = _fn
    __all__.append(_name)
