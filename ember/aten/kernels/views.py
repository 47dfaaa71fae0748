"""View kernels: results share memory with ``self`` (``aten/src/ATen/native/TensorShape.cpp``).

They only compute sizes, strides and offsets, which is why they also serve meta tensors unchanged
(Note [Meta tensors]).  Strides are handled in bytes here (NumPy's unit) and in elements in messages.
"""
from __future__ import annotations

from ember.aten.kernels._common import Array

from typing import Any

import builtins

import numpy as np

from ember.aten.kernels._common import meta_shape, shape_str, type_name, wrap_dim, wrap_dims
from ember.c10.storage import array_data_ptr, root_array
from ember.c10.tensor_impl import is_fake_buffer

_as_strided_np = np.lib.stride_tricks.as_strided


def _restride(xp: Any, a: Array, shape: Any, byte_strides: Any, byte_offset: int = 0) -> Any:
    """A view of ``a``'s memory with the given shape/strides, starting ``byte_offset`` bytes after a's start."""
    if xp is np or isinstance(a, np.ndarray):
        if a.flags.c_contiguous:
            # the ndarray constructor over a's own buffer: 0.85 us where as_strided (a Python function building an
            # __array_interface__ object) takes 3.8; it checks that the view stays inside a's bytes, and a view
            # that reaches beyond them (as_strided over a storage) takes the general path below
            try:
                return np.ndarray(tuple(shape), a.dtype, buffer=a, offset=byte_offset, strides=tuple(byte_strides))
            except (ValueError, TypeError):
                pass
        if byte_offset:
            # shift the start without reading: a 2-element view whose stride is the offset
            a = _as_strided_np(a, (2,), (byte_offset,))[1:]
        return _as_strided_np(a, tuple(shape), tuple(byte_strides))
    import cupy  # type: ignore[import-not-found, unused-ignore]
    return cupy.ndarray(tuple(shape), a.dtype, a.data + byte_offset, tuple(byte_strides))


def infer_size(shape: Any, numel: int) -> tuple[int, ...]:
    """Resolve one -1 in ``shape`` (PyTorch's ``infer_size``) with its errors."""
    known, neg = 1, None
    for i, s in enumerate(shape):
        if s >= 0:
            known *= s
        elif s != -1:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {shape_str(shape)}")
        elif neg is not None:
            raise RuntimeError("only one dimension can be inferred")
        else:
            neg = i
    if neg is not None:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size {numel}")
        shape = list(shape)
        shape[neg] = numel // known
        return tuple(shape)
    if known != numel:
        raise RuntimeError(f"shape '{shape_str(shape)}' is invalid for input of size {numel}")
    return tuple(shape)


def compute_stride(oldshape: Any, oldstride: Any, newshape: Any) -> Any:
    """Strides for viewing (oldshape, oldstride) as newshape, or None (PyTorch's ``computeStride``)."""
    if not oldshape:
        return tuple(1 for _ in newshape)
    numel = int(np.prod(oldshape))
    if numel == 0 and tuple(oldshape) == tuple(newshape):
        return tuple(oldstride)
    newstride = [0] * len(newshape)
    if numel == 0:
        # any strides work; use contiguous ones
        acc = 1
        for i in range(len(newshape) - 1, -1, -1):
            newstride[i] = acc
            acc *= max(newshape[i], 1)
        return tuple(newstride)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def view(xp: Any, self: Array, size: Any) -> Any:
    shape = infer_size(size, self.size)
    if self.flags.c_contiguous:
        return self.reshape(shape)
    it = self.itemsize
    st = compute_stride(self.shape, [s // it for s in self.strides], shape)
    if st is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return _restride(xp, self, shape, [s * it for s in st])


def _unsafe_view(xp: Any, self: Array, size: Any) -> Any:
    """``view``'s memory, but the result is not a view to autograd (its schema has no alias): what ``matmul`` and
    ``reshape`` return after computing into a fresh tensor (PyTorch's ``UnsafeViewBackward0``)."""
    return view(xp, self, size)


def _reshape_alias(xp: Any, self: Array, size: Any, stride: Any) -> Any:
    it = self.itemsize
    return _restride(xp, self, size, [s * it for s in stride])


def view_dtype(xp: Any, self: Array, dtype: Any) -> Any:
    if dtype.np.itemsize != self.itemsize:
        if self.ndim == 0:
            raise RuntimeError("self.dim() cannot be 0 to view " + str(self.dtype) + " as " + dtype.name +
                               " (different element sizes)")
        if self.strides[-1] != self.itemsize:
            raise RuntimeError("self.stride(-1) must be 1 to view Float as Double (different element sizes), "
                               "but got " + str(self.strides[-1] // self.itemsize))
    return self.view(dtype.np)


def as_strided(xp: Any, self: Array, size: Any, stride: Any, storage_offset: Any = None) -> Any:
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of sizes and strides")
    for st in stride:
        if st < 0:
            raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                               + shape_str(stride))
    it = self.itemsize
    root = root_array(self)
    cur = (array_data_ptr(self) - array_data_ptr(root)) // it
    off = cur if storage_offset is None else storage_offset
    byte_strides = tuple(st * it for st in stride)
    if isinstance(root, np.ndarray) and not is_fake_buffer(root) and root.flags.c_contiguous:
        try:  # a view of the storage itself: NumPy checks it stays inside the buffer
            v = np.ndarray(tuple(size), self.dtype, buffer=root, offset=off * it, strides=byte_strides)
        except (ValueError, TypeError):
            need = off + 1 + builtins.sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else 0
            raise RuntimeError(f"setStorage: sizes {shape_str(size)}, strides {shape_str(stride)}, storage "
                               f"offset {off}, and itemsize {it} requiring a storage size of {need * it} are out "
                               f"of bounds for storage of size {root.size * it}") from None
        if not self.flags.writeable:
            v.flags.writeable = False
        return v
    return _restride(xp, self, size, byte_strides, (off - cur) * it)


def alias(xp: Any, self: Array) -> Any:
    return self.view()


def t(xp: Any, self: Array) -> Any:
    if self.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self.ndim}D")
    return self.T if self.ndim == 2 else self.view()


def transpose(xp: Any, self: Array, dim0: Any, dim1: Any) -> Any:
    n = self.ndim
    d0, d1 = wrap_dim(dim0, n), wrap_dim(dim1, n)
    if n == 0:
        return self.view()
    return self.swapaxes(d0, d1)    # the methods, not NumPy's Python-level functions around them


def permute(xp: Any, self: Array, dims: Any) -> Any:
    if len(dims) != self.ndim:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           f"length of the desired ordering of dimensions i.e. input.dim() = {self.ndim} is not "
                           f"equal to len(dims) = {len(dims)}")
    return self.transpose(wrap_dims(dims, self.ndim))


def check_expand(shape: Any, size: Any) -> None:
    """PyTorch's error where a tensor of ``shape`` cannot be expanded to ``size`` (-1 keeps a size)."""
    n = len(size)
    if n < len(shape):
        raise RuntimeError(f"expand(torch.FloatTensor{{{shape_str(shape)}}}, size={shape_str(size)}): the "
                           f"number of sizes provided ({n}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({len(shape)})")
    off = n - len(shape)
    for i in reversed(range(off, n)):      # (PyTorch's order: the last mismatch is the one reported)
        want, have = size[i], shape[i - off]
        if want not in (-1, have) and have != 1:
            raise RuntimeError(f"The expanded size of the tensor ({want}) must match the existing size ({have}) "
                               f"at non-singleton dimension {i}.  Target sizes: {shape_str(size)}.  Tensor sizes: "
                               f"{shape_str(shape)}")


def expand(xp: Any, self: Array, size: Any, implicit: Any = False) -> Any:
    n = len(size)
    have_shape, have_strides = self.shape, self.strides    # (each read of them makes a tuple)
    if n < len(have_shape):
        check_expand(have_shape, size)
    off = n - len(have_shape)
    shape, strides = [], []
    for i in range(n):
        want = size[i]
        if i < off:
            if want < 0:
                raise RuntimeError(f"The expanded size of the tensor ({want}) isn't allowed in a leading, "
                                   "non-existing dimension " + str(i))
            shape.append(want)
            strides.append(0)
            continue
        have = have_shape[i - off]
        st = have_strides[i - off]
        if want == -1:
            want = have
        if have == want:
            shape.append(have)
            strides.append(st)
        elif have == 1:
            shape.append(want)
            strides.append(0)
        else:
            check_expand(have_shape, size)
    return _restride(xp, self, shape, strides)


def squeeze(xp: Any, self: Array, dim: Any = None) -> Any:
    if dim is None:
        return self.reshape([s for s in self.shape if s != 1]) if self.flags.c_contiguous else \
            _restride(xp, self, [s for s in self.shape if s != 1],
                      [st for s, st in zip(self.shape, self.strides) if s != 1])
    dims = wrap_dims(dim if isinstance(dim, (tuple, list)) else (dim,), self.ndim)
    keep = [i for i in range(self.ndim) if not (i in dims and self.shape[i] == 1)]
    return _restride(xp, self, [self.shape[i] for i in keep], [self.strides[i] for i in keep])


def unsqueeze(xp: Any, self: Array, dim: Any) -> Any:
    d = wrap_dim(dim, self.ndim + 1)
    shape, strides = self.shape, self.strides
    r = self.reshape(shape[:d] + (1,) + shape[d:])  # a view: a size-1 dim fits any strides
    # PyTorch's stride for the new dim (inferUnsqueezeGeometry): the next dim's extent, or 1 at the end, the others
    # kept; NumPy's reshape picks its own for size-1 dims where the tensor is not contiguous (an empty tensor's
    # strides read as contiguous ones anyway)
    want = strides[:d] + (shape[d] * strides[d] if d < len(shape) else self.itemsize,) + strides[d:]
    if r.strides == want or self.size == 0:
        return r
    return _restride(xp, self, r.shape, want)


def unflatten(xp: Any, self: Array, dim: Any, sizes: Any) -> Any:
    d = wrap_dim(dim, self.ndim)
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    sizes = infer_size(sizes, self.shape[d]) if -1 in sizes or int(np.prod(sizes)) != self.shape[d] else \
        tuple(sizes)
    return view(xp, self, self.shape[:d] + tuple(sizes) + self.shape[d + 1:])


def narrow_check(shape: Any, dim: Any, start: Any, length: Any) -> tuple[int, int]:
    """PyTorch's narrow errors; returns (dim, start) wrapped."""
    if len(shape) == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, len(shape))
    n = shape[d]
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return d, start


def narrow(xp: Any, self: Array, dim: Any, start: Any, length: Any) -> Any:
    d, start = narrow_check(self.shape, dim, start, length)
    idx = [builtins.slice(None)] * self.ndim
    idx[d] = builtins.slice(start, start + length)
    return self[tuple(idx)]


def select(xp: Any, self: Array, dim: Any, index: Array) -> Any:
    if self.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {shape_str(self.shape)} at "
                         f"dimension {d}")
    if d == 0:
        return self[index, ...]
    return self[(_FULL,) * d + (index, ...)]


_FULL = builtins.slice(None)


def slice(xp: Any, self: Array, dim: Any = 0, start: Any = None, end: Array = None, step: Any = 1) -> Any:  # noqa: A001
    d = wrap_dim(dim, self.ndim)
    if step <= 0:
        raise ValueError("step must be greater than zero")
    sl = builtins.slice(start, end, step)
    if d == 0:
        return self[sl]
    return self[(_FULL,) * d + (sl,)]


def unbind(xp: Any, self: Array, dim: Any = 0) -> Any:
    if self.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim(dim, self.ndim)
    return [select(xp, self, d, i) for i in range(self.shape[d])]


def split(xp: Any, self: Array, split_size: Any, dim: Any = 0) -> Any:
    if self.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    if split_size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    if n == 0:
        return [self.view()]
    return [narrow(xp, self, d, s, min(split_size, n - s)) for s in range(0, n, split_size)]


def split_with_sizes(xp: Any, self: Array, split_sizes: Any, dim: Any = 0) -> Any:
    d = wrap_dim(dim, self.ndim)
    n = self.shape[d]
    if sum(split_sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={shape_str(split_sizes)}")
    out, s = [], 0
    for ln in split_sizes:
        out.append(narrow(xp, self, d, s, ln))
        s += ln
    return out


def unfold(xp: Any, self: Array, dimension: Any, size: Any, step: Any) -> Any:
    d = wrap_dim(dimension, self.ndim) if self.ndim else 0
    n = self.shape[d] if self.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if self.ndim == 0:
        return self.reshape(1)
    count = (n - size) // step + 1
    shape = list(self.shape)
    strides = list(self.strides)
    shape[d] = count
    strides[d] = self.strides[d] * step
    return _restride(xp, self, shape + [size], strides + [self.strides[d]])


@meta_shape(lambda grad_in, input_sizes, *a, **k: (tuple(input_sizes), grad_in.dtype))
def unfold_backward(xp: Any, grad_in: Array, input_sizes: Any, dim: Any, size: Any, step: Any) -> Any:
    """The adjoint of ``unfold(dim, size, step)``: each window of ``grad_in`` (windows along ``dim``, their elements
    in a last dimension) added back at its place in a tensor of ``input_sizes`` (overlapping windows add up)."""
    sizes = tuple(input_sizes)
    out = xp.zeros(sizes, grad_in.dtype)
    if not sizes:
        return out + grad_in.sum() if grad_in.size else out
    d = wrap_dim(dim, len(sizes))
    windows = xp.moveaxis(grad_in, d, -2)  # (..., count, size)
    target = xp.moveaxis(out, d, -1)       # (..., n): a view of out
    for i in range(windows.shape[-2]):
        target[..., i * step:i * step + size] += windows[..., i, :]
    return out


def diagonal(xp: Any, self: Array, offset: Any = 0, dim1: Any = 0, dim2: Any = 1) -> Any:
    d1, d2 = wrap_dim(dim1, self.ndim), wrap_dim(dim2, self.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n1, n2 = self.shape[d1], self.shape[d2]
    if offset >= 0:
        length = max(min(n1, n2 - offset), 0)
        start = offset * self.strides[d2] if length else 0
    else:
        length = max(min(n1 + offset, n2), 0)
        start = -offset * self.strides[d1] if length else 0
    rest = [i for i in range(self.ndim) if i not in (d1, d2)]
    shape = [self.shape[i] for i in rest] + [length]
    strides = [self.strides[i] for i in rest] + [self.strides[d1] + self.strides[d2]]
    return _restride(xp, self, shape, strides, start)


def view_as_real(xp: Any, self: Array) -> Any:
    """A complex tensor as pairs of reals: one more dimension of size 2 with stride 1 (``ComplexHelper.h``)."""
    if self.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    part = self.real  # same memory, strides in bytes unchanged, half the itemsize
    return _restride(xp, part, self.shape + (2,), self.strides + (part.itemsize,))


def view_as_complex(xp: Any, self: Array) -> Any:
    """Pairs of reals in the last dimension as one complex tensor, with ``view_as_complex``'s checks."""
    if self.dtype not in (np.float16, np.float32, np.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a tensor "
                           f"of scalar type: {type_name(self.dtype)}")
    if self.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if self.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    item = self.itemsize
    if self.strides[-1] != item:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(st % (2 * item) for st in self.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if (array_data_ptr(self) - array_data_ptr(root_array(self))) % (2 * item):
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    if self.dtype == np.float16:
        raise RuntimeError("view_as_complex: ember has no complex32 (ComplexHalf) dtype")
    return self.view(np.complex128 if self.dtype == np.float64 else np.complex64)[..., 0]



# -- the *_scatter ops (TensorShape.cpp): a copy of ``self`` with ``src`` written into one of its views
def _scatter_into(xp: Any, self: Array, src: Array, view: Any) -> Any:
    out = self.copy()
    window = view(out)
    if tuple(src.shape) != tuple(window.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{shape_str(src.shape)}, slice size = {shape_str(window.shape)}")
    window[...] = src
    return out


def select_scatter(xp: Any, self: Array, src: Array, dim: Any, index: Any) -> Any:
    return _scatter_into(xp, self, src, lambda a: select(xp, a, dim, index))


def slice_scatter(xp: Any, self: Array, src: Array, dim: Any = 0, start: Any = None, end: Any = None,
                  step: Any = 1) -> Any:
    return _scatter_into(xp, self, src, lambda a: slice(xp, a, dim, start, end, step))


def diagonal_scatter(xp: Any, self: Array, src: Array, offset: Any = 0, dim1: Any = 0, dim2: Any = 1) -> Any:
    return _scatter_into(xp, self, src, lambda a: diagonal(xp, a, offset, dim1, dim2))


def as_strided_scatter(xp: Any, self: Array, src: Array, size: Any, stride: Any, storage_offset: Any = None) -> Any:
    """A clone of ``self`` (its dimension order kept) whose elements at the strided window (``size``, ``stride``
    and ``storage_offset`` in elements, over the clone's own memory) are replaced by ``src``."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of sizes and strides")
    if any(st < 0 for st in stride):
        raise RuntimeError("as_strided: Negative strides are not supported at the moment, got strides: "
                           + shape_str(stride))
    out = self.copy(order="K")
    buf = out.ravel(order="K")
    off = 0 if storage_offset is None else int(storage_offset)
    it = self.itemsize
    need = off + 1 + builtins.sum((n - 1) * st for n, st in zip(size, stride)) if all(size) else 0
    if need > buf.size or off < 0:
        raise RuntimeError(f"setStorage: sizes {shape_str(size)}, strides {shape_str(stride)}, storage offset {off}, "
                           f"and itemsize {it} requiring a storage size of {need * it} are out of bounds for storage "
                           f"of size {buf.size * it}")
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{shape_str(src.shape)}, slice size = {shape_str(size)}")
    if all(size):
        window = _restride(xp, buf, size, tuple(st * it for st in stride), off * it)
        window[...] = src
    return out
