"""The Conjugate and Negative keys (mirrors ``aten/src/ATen/native/MathBitsFallback.h``, ``ConjugateFallback.cpp``,
``NegateFallback.cpp`` and ``MathBitFallThroughLists.h``).

Note [Math bits]
``x.conj()`` on a complex tensor copies nothing: it is a view of ``x`` whose key set carries ``Conjugate``
(``_conj``); ``_neg_view`` does the same with ``Negative``. The tensor's values are the conjugate (negation) of its
memory, so a write through the view writes the conjugate into ``x``, and ``conj().conj()`` is a plain view again.
Both keys sit above the Python key, so every operator called with such a tensor first runs the key's fallback:

* an operator that returns a view of its argument (``Tensor(a)`` in its schema) runs below the key: its result
  shares the memory, so it carries the bit on (views copy their base's key set);
* otherwise each argument with the bit is replaced by ``clone()`` of it -- a call a dispatch mode sees, whose result
  holds the values -- and the operator runs below the key; an argument it writes (``add_``, ``out=``) is cloned too
  and the result copied back into it with ``copy_``, which writes through the bit;
* the operators PyTorch lists as fall-through (``copy_``, ``clone``, ``mm``, ``dot`` ... and the in-place views) go
  on below the key, so a dispatch mode sees them with the bit on. Those that compute from values have a kernel at
  the key that, unless something below observes the call, hands them tensors holding the values (made without a
  dispatch, as PyTorch's kernels read through the bit; for ``copy_``, the source as the destination's memory must
  hold it). A call with no bit never meets any of this.

``resolve_conj()`` / ``resolve_neg()`` are that ``clone``; ``numpy()`` refuses a tensor with a bit set, as PyTorch's.
"""
from __future__ import annotations

from typing import Any

from ember._generated import aten
from ember.aten.backends import BACKEND, ON_CUDA
from ember.aten.dispatcher import FALLTHROUGH, BoxedFallback, Dispatcher, keys_below, register_fallback
from ember.aten.schema import FunctionSchema
from ember.aten.wrap import new_tensor
from ember.c10.dispatch_key import AUTOGRAD_MASK, CONJ_BIT, MATH_BITS, NEG_BIT, DispatchKey
from ember.c10.tensor_impl import TensorImpl

# views and their in-place versions, and what only reads metadata (MathBitFallThroughLists.h)
_VIEW_FNS = (
    "as_strided_", "detach", "detach_", "diagonal", "expand", "expand_as", "movedim.int", "movedim.intlist", "narrow",
    "permute", "select.Dimname", "select.int", "squeeze", "squeeze_", "transpose.int", "transpose.Dimname",
    "transpose_", "t", "t_", "real", "imag", "view_as_real", "unflatten.int", "unflatten.Dimname", "unfold",
    "unsqueeze", "unsqueeze_", "view_as", "unbind.int", "unbind.Dimname", "split.Tensor", "split_with_sizes",
    "swapaxes", "swapdims", "chunk", "reshape", "alias", "hsplit.int", "hsplit.array", "dsplit.int", "dsplit.array",
    "vsplit.int", "vsplit.array", "conj", "_conj", "_unsafe_view", "resize_", "as_strided", "view",
    "empty_like", "empty.memory_format", "empty.out", "empty_strided", "full_like", "stride.int", "stride.Dimname",
    "size.int", "size.Dimname", "is_complex", "is_floating_point", "requires_grad_")
_BOTH = ("set_.source_Storage_storage_offset", "set_.source_Tensor", "set_", "copy_", "clone", "resolve_conj",
         "resolve_neg", "repeat_interleave.Tensor", "repeat_interleave.self_Tensor", "repeat_interleave.self_int",
         "_has_same_storage_numel", "linalg_solve_triangular")
# the products PyTorch's BLAS calls conjugate on the fly (their in-place and out= forms are left to the fallback:
# ember's kernels write the memory, so a conjugate destination is cloned and copied back)
_CONJ_ONLY = ("_new_zeros_with_same_feature_meta", "_conj_physical", "conj_physical", "conj_physical_", "dot",
              "vdot", "mm", "addmm", "bmm", "baddbmm", "linalg_vector_norm")
_NEG_ONLY = ("neg_", "linalg_svd")
FALLTHROUGH_OPS = {DispatchKey.Conjugate: _VIEW_FNS + _BOTH + _CONJ_ONLY,
                   DispatchKey.Negative: _VIEW_FNS + _BOTH + _NEG_ONLY}
# fall-through operators whose backend kernels compute from the values; the others only move memory or metadata
# (or, as conj_physical_ and neg_, apply their own math to it, which commutes with the bit's)
_READS_VALUES = ("clone", "repeat_interleave.self_Tensor", "repeat_interleave.self_int", "linalg_solve_triangular",
                 "_conj_physical", "dot", "vdot", "mm", "addmm", "bmm", "baddbmm", "linalg_vector_norm")

_BIT_OF_KEY = {DispatchKey.Conjugate: CONJ_BIT, DispatchKey.Negative: NEG_BIT}
_NAME_OF_KEY = {DispatchKey.Conjugate: "conjugate", DispatchKey.Negative: "negation"}
_NO_AUTOGRAD = ~(AUTOGRAD_MASK | 1 << DispatchKey.ADInplaceOrView)


def _tensor_arguments(op: Any) -> list[tuple[int, bool, bool | None]]:
    """``(position, is_list, writes)`` of each Tensor argument of ``op``'s schema; ``writes`` is None without an
    alias annotation, True for ``Tensor(a!)``, False for ``Tensor(a)``."""
    found = []
    for i, a in enumerate(FunctionSchema(op.schema, op.namespace).arguments):
        if a.type.startswith("Tensor"):
            found.append((i, "[]" in a.type, None if a.alias_info is None else a.alias_info.is_write))
    return found


def _clone(t: Any) -> Any:
    """``at::clone(t)`` from inside a kernel: dispatched again (a mode sees it) but below autograd."""
    return aten._op_clone.call(t._ks & _NO_AUTOGRAD, t, None)


def _make_fallback(key: DispatchKey) -> Any:
    bit, name, below = _BIT_OF_KEY[key], _NAME_OF_KEY[key], keys_below(key)

    def make(op: Any) -> Any:
        args = _tensor_arguments(op)
        writes = {w for _, _, w in args if w is not None}
        if len(writes) > 1:
            def mixed(ks: int, *values: Any) -> Any:
                raise RuntimeError(f"Unsupported operator for {name} fallback: {op.qualified_name}{name} fallback "
                                   "doesn't work for operators with a mix mutable and non-mutable inputs that alias "
                                   "with outputs, this must be implemented manually.  If you got this error on a "
                                   "core op, please report a bug to PyTorch.")
            return mixed
        if writes == {False}:          # a view: the result shares the memory and keeps the bit
            def view(ks: int, *values: Any) -> Any:
                return op.redispatch(ks & below, *values)
            return view

        def materialize(ks: int, *values: Any) -> Any:
            vals = list(values)
            mutated: tuple[Any, Any] | None = None
            for i, is_list, w in args:
                if i >= len(vals) or vals[i] is None:
                    continue
                v = vals[i]
                if is_list:
                    if any(t is not None and t._ks & bit for t in v):
                        if w:
                            raise RuntimeError(f" fallback doesn't currently support mutable TensorLists with {name} "
                                               f"inputs. Please materialize all the {name} input tensor(s) in the "
                                               f"mutable TensorList inputs before calling {op.qualified_name}")
                        vals[i] = [_clone(t) if t is not None and t._ks & bit else t for t in v]
                elif isinstance(v, TensorImpl) and v._ks & bit:
                    c = vals[i] = _clone(v)
                    if w:
                        if mutated is not None:
                            raise RuntimeError(f"{name} fallback does not support operators with more than one "
                                               f"mutable tensors with {name}bit set to true.")
                        mutated = (v, c)
            out = op.redispatch(ks & below, *vals)
            if mutated is None:
                return out
            target, clone = mutated
            if tuple(target.shape) != tuple(clone.shape):
                target.resize_(clone.shape)         # (an out= tensor: resized as the kernel resized its clone)
            aten._op_copy_.call(target._ks & _NO_AUTOGRAD, target, clone, False)
            if out is clone:
                return target
            if isinstance(out, (tuple, list)):
                return type(out)(target if o is clone else o for o in out)
            return out
        return materialize
    return make


def values_of(t: Any) -> Any:
    """A tensor without math bits holding ``t``'s values (its memory with the bits applied), made without a
    dispatch: what a fall-through kernel reads."""
    ks = t._ks
    if not ks & MATH_BITS:
        return t
    return new_tensor(_applied(t, ks & MATH_BITS), ks & ~MATH_BITS, t._device)


def _applied(t: Any, bits: int) -> Any:
    """``t``'s memory with the math ``bits`` applied (conjugated, negated), as a new array."""
    a, xp = t._data, BACKEND[t._ks & ON_CUDA].xp     # type: ignore[attr-defined]
    if bits & CONJ_BIT:
        a = xp.conj(a)
    if bits & NEG_BIT:
        a = xp.negative(a)
    return a


# below the math-bit keys, the keys that see a call as it is made (the arguments' bits on): a dispatch mode or a
# tensor subclass (whose handler's own call comes back here unobserved), fake tensors, functionalization
_SEES_BITS = (1 << DispatchKey.Python) | (1 << DispatchKey.Fake) | (1 << DispatchKey.Functionalize)


def _in_values(x: Any) -> Any:
    if isinstance(x, TensorImpl):
        return values_of(x)
    if isinstance(x, list):
        return [values_of(t) if isinstance(t, TensorImpl) else t for t in x]
    return x


def _reading(op: Any, key: DispatchKey) -> Any:
    """A fall-through operator whose kernel computes from its arguments' values (``mm``, ``clone``): below the
    observers, its arguments hold the values (made without a dispatch, as PyTorch's kernels read through the bit)."""
    below = keys_below(key)

    def reads_values(ks: int, *values: Any) -> Any:
        if not ks & _SEES_BITS:
            values = tuple(_in_values(v) for v in values)
        return op.redispatch(ks & below, *values)
    return reads_values


def _copying(op: Any, key: DispatchKey) -> Any:
    """``copy_``: the destination's memory takes the source's values with the destination's bit applied (for the
    key's own bit; the other key does the same for its own)."""
    below, bit = keys_below(key), _BIT_OF_KEY[key]

    def copy_through_bit(ks: int, self: Any, src: Any, non_blocking: Any) -> Any:
        if not ks & _SEES_BITS and (self._ks ^ src._ks) & bit:
            src = new_tensor(_applied(src, bit), (src._ks & ~bit) | (self._ks & bit), src._device)
        return op.redispatch(ks & below, self, src, non_blocking)
    return copy_through_bit


def _keeping(op: Any, key: DispatchKey) -> Any:
    """``_unsafe_view``: a tensor of its own over the same memory (no view for autograd), so it keeps the bit."""
    below, bit = keys_below(key), _BIT_OF_KEY[key]

    def keeps_bit(ks: int, self: Any, *args: Any) -> Any:
        out = op.redispatch(ks & below, self, *args)
        out._ks |= self._ks & bit
        return out
    return keeps_bit


def _refuse_conjugate(ks: int, self: Any) -> Any:
    """``view_as_real`` of a conjugate view: its real view would show the memory, not the values."""
    raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate tensor "
                       "so you can view it as real, use self.resolve_conj(); however, be warned that the resulting "
                       "tensor will NOT alias the original.")


def install() -> None:
    """Register the two fallbacks, the fall-through operators, and the kernels of the operators that read values."""
    makers = dict.fromkeys(_READS_VALUES, _reading)
    makers.update({"copy_": _copying, "_unsafe_view": _keeping})
    for key in (DispatchKey.Conjugate, DispatchKey.Negative):
        register_fallback(key, BoxedFallback(_make_fallback(key)))
        for name in FALLTHROUGH_OPS[key]:
            op = Dispatcher.ops.get("aten::" + name)
            if op is not None:
                op.register(key, makers[name](op, key) if name in makers else FALLTHROUGH)
    Dispatcher.ops["aten::view_as_real"].register(DispatchKey.Conjugate, _refuse_conjugate)
