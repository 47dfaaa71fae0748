"""Shape and view ops written in other ops (``aten/src/ATen/native/TensorShape.cpp``): reshape, flatten,
movedim, narrow, split / chunk / tensor_split, the stacks, meshgrid, atleast_*, tile, broadcasting helpers."""
from __future__ import annotations

from typing import Any

import math

from ember._generated import aten
from ember.c10.dtype import bool_, int64
from ember.c10.exceptions import warn_once
from ember.c10.memory_format import contiguous_format
from ember.aten.dispatcher import is_tensor_subclass_like
from ember.aten.wrap import new_tensor, write_out
from ember.aten.composite.factories import empty_like
from ember.c10.dtype import scalar_type_name
from ember.aten.kernels._common import wrap_dim, wrap_dims
from ember.aten.kernels.views import compute_stride, infer_size, narrow_check
from ember.aten.meta import broadcast_shapes


def to_copy(self: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
            non_blocking: Any = False, memory_format: Any = None) -> Any:
    """``_to_copy`` (CompositeExplicitAutograd): a new tensor on ``device`` / of ``dtype``, filled by ``copy_``, laid
    out as ``empty_like`` lays it out (``preserve_format``: ``self``'s strides where they are dense)."""
    out = empty_like(self, dtype=dtype, device=device, memory_format=memory_format)  # (its composite, undispatched)
    return out.copy_(self)


def sym_size(self: Any, dim: int) -> int:
    """``sym_size.int``: one size of ``self`` (the node an exported graph reads a dynamic size with)."""
    return int(self.size(dim))


def local_scalar_dense(self: Any) -> Any:
    """``_local_scalar_dense``: the one element as a Python number (what ``Tensor.item()`` dispatches to, so that
    a mode or a tensor subclass sees it)."""
    if self.device.type == "meta":
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")
    a = self._data
    if a.size != 1:
        raise RuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
    if self.device.type != "cpu":
        a = a.get()
    v = a.reshape(()).item()
    return float(v) if a.dtype.name == "bfloat16" else v


def reshape(self: Any, shape: Any) -> Any:
    """PyTorch's ``reshape``: a view when the sizes allow one (``view`` for a contiguous tensor, else
    ``_reshape_alias`` -- ``view`` again under a dispatch mode or for a Python-key tensor), else a contiguous copy
    returned through ``_unsafe_view`` (so autograd records ``CloneBackward0`` then ``UnsafeViewBackward0``)."""
    shape = infer_size(shape, self._data.size)
    if self.is_contiguous():
        return aten.view(self, shape)
    if self.is_sparse:
        raise RuntimeError("reshape is not implemented for sparse tensors")
    st = compute_stride(tuple(self.shape), self.stride(), shape)
    if st is not None:
        return aten.view(self, shape) if is_tensor_subclass_like(self) else aten._reshape_alias(self, shape, st)
    return aten._unsafe_view(aten.clone(self, memory_format=contiguous_format), shape)


# the dim orders of channels-last layouts: channels innermost in memory
_CHANNELS_LAST = {"channels_last": (4, (0, 2, 3, 1), (0, 3, 1, 2)),
                  "channels_last_3d": (5, (0, 2, 3, 4, 1), (0, 4, 1, 2, 3))}


def contiguous(self: Any, memory_format: Any = None) -> Any:
    """``self`` if already laid out in ``memory_format``, else a copy that is: row-major by default; with the
    channels innermost for ``channels_last`` (4-D) and ``channels_last_3d`` (5-D)."""
    cl = _CHANNELS_LAST.get(getattr(memory_format, "name", ""))
    if cl is not None:
        ndim, to_last, back = cl
        if self.dim() != ndim:
            raise RuntimeError(f"required rank {ndim} tensor to use {memory_format.name} format")
        if self.is_contiguous(memory_format=memory_format):
            return self
        return aten.clone(self.permute(to_last), memory_format=contiguous_format).permute(back)
    if self.is_contiguous():
        return self
    return aten.clone(self, memory_format=contiguous_format)


def view_as(self: Any, other: Any) -> Any:
    return self.view(other.shape)


def reshape_as(self: Any, other: Any) -> Any:
    return self.reshape(other.shape)


def flatten(self: Any, start_dim: Any = 0, end_dim: Any = -1) -> Any:
    shape = self._data.shape
    n = len(shape)
    if n == 0:
        return aten.reshape(self, (1,))
    s, e = wrap_dim(start_dim, n), wrap_dim(end_dim, n)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    return aten.reshape(self, shape[:s] + (math.prod(shape[s:e + 1]),) + shape[e + 1:])   # (PyTorch's at::reshape)


def repeat_interleave_self_int(self: Any, repeats: int, dim: Any = None, output_size: Any = None) -> Any:
    """Each element ``repeats`` times along ``dim`` (the flattened input without one): an expand of a new axis
    after ``dim``, copied and flattened into it (Repeat.cpp)."""
    x = self if dim is not None else self.flatten()
    d = wrap_dim(0 if dim is None else dim, self.dim())
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    x = x.unsqueeze(d + 1)
    shape = list(x.shape)
    shape[d + 1] = repeats
    x = x.expand(shape)
    if output_size is not None and output_size != repeats * shape[d]:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {repeats * shape[d]} but got "
                           f"{output_size}")
    return x.clone(memory_format=contiguous_format).flatten(d, d + 1)


def repeat_interleave_self_Tensor(self: Any, repeats: Any, dim: Any = None, output_size: Any = None) -> Any:
    """Element ``i`` along ``dim`` ``repeats[i]`` times: ``index_select`` of the indices
    ``repeat_interleave(repeats)`` (Repeat.cpp)."""
    x, d = (self, dim) if dim is not None else (self.flatten(), 0)
    if repeats.dim() == 0 or (repeats.dim() == 1 and repeats.shape[0] == 1):
        repeats = repeats.reshape((1,)).expand((x.size(d),))
    elif repeats.dim() == 1:
        if repeats.shape[0] != x.size(d):
            raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats.shape[0]} and input.size({d}) = {x.size(d)}")
    else:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    return x.index_select(d, aten.repeat_interleave_Tensor(repeats, output_size=output_size))


def diag(self: Any, diagonal: int = 0) -> Any:
    """A vector's diagonal matrix (``diag_embed``) or a matrix's diagonal (``diagonal_copy``)."""
    if self.dim() == 1:
        return aten.diag_embed(self, diagonal)
    if self.dim() == 2:
        return aten.diagonal_copy(self, diagonal)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {self.dim()}D")


def take_along_dim(self: Any, indices: Any, dim: Any = None) -> Any:
    """``gather`` along ``dim`` of the two broadcast against each other (all but ``dim``), an index wrapped into
    ``[0, size)`` (so -1 is the last); without ``dim``, of the flattened tensors (TensorAdvancedIndexing.cpp)."""
    if dim is None:
        return self.view(-1).gather(0, indices.view(-1))
    if self.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {self.dim()} dimensions for input, and {indices.dim()} dimensions for indices")
    if indices.dtype != int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{scalar_type_name(indices.dtype)}")
    d = wrap_dim(dim, self.dim())
    sizes = list(self.shape)
    sizes[d] = indices.shape[d]
    indices_b = indices.expand(broadcast_shapes(tuple(sizes), tuple(indices.shape)))
    sizes = list(indices.shape)
    sizes[d] = self.shape[d]
    self_b = self.expand(broadcast_shapes(tuple(sizes), tuple(self.shape)))
    return self_b.gather(d, indices_b.remainder(self.shape[d]))


# Note [In-place view ops]
# ``x.squeeze_(0)`` is an operator of its own (a dispatch mode sees ``squeeze_.dim``): ``x`` takes the sizes and
# strides of the view ``squeeze(x, 0)`` over the same storage, and its version moves on. Its autograd kernel records
# a node whose input is ``x``'s history before the call and makes it ``x``'s ``grad_fn`` -- a view stays a view of
# its base, with no CopySlices (the data did not change) -- as PyTorch's in-place view ops do.
def _become(self: Any, view: Any) -> Any:
    self._data = view._data
    self._vc.version += 1
    return self


def squeeze_(self: Any) -> Any:
    return _become(self, aten.squeeze(self))


def squeeze__dim(self: Any, dim: int) -> Any:
    return _become(self, aten.squeeze_dim(self, dim))


def squeeze__dims(self: Any, dim: Any) -> Any:
    return _become(self, aten.squeeze_dims(self, dim))


def unsqueeze_(self: Any, dim: int) -> Any:
    return _become(self, aten.unsqueeze(self, dim))


def t_(self: Any) -> Any:
    return _become(self, aten.t(self))


def transpose_(self: Any, dim0: int, dim1: int) -> Any:
    return _become(self, aten.transpose_int(self, dim0, dim1))


def ravel(self: Any) -> Any:
    return self.contiguous().view(-1)


def movedim_int(self: Any, source: Any, destination: Any) -> Any:
    return aten.movedim_intlist(self, (source,), (destination,))


def expand_as(self: Any, other: Any) -> Any:
    return self.expand(other.shape)


def broadcast_to(self: Any, size: Any) -> Any:
    return self.expand(size)


def sum_to_size(self: Any, size: Any) -> Any:
    """PyTorch's at::sum_to: sum ``self`` down to ``size``, a shape it could have been expanded from -- one
    ``sum`` with keepdim over the leading dims and the dims of size 1, then a ``view`` without the leading ones;
    ``self`` itself when the shapes are equal."""
    size = tuple(size)
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != t for s, t in zip(size, shape[lead:])):
        raise RuntimeError(f"size {{[{', '.join(map(str, size))}]}} is not expandable to size "
                           f"{{[{', '.join(map(str, shape))}]}}.")
    dims = list(range(lead)) + [lead + i for i, (s, t) in enumerate(zip(size, shape[lead:])) if s == 1 and t != 1]
    out = aten.sum_dim_IntList(self, tuple(dims), True) if dims else self
    return aten.view(out, size) if lead > 0 else out


def unflatten(self: Any, dim: Any, sizes: Any) -> Any:
    """``dim`` split into ``sizes`` (one may be -1): a ``view`` (PyTorch's ``unflatten``)."""
    d = wrap_dim(dim, self.dim())
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = self.shape[d]
    sizes = tuple(infer_size(sizes, n) if -1 in sizes or math.prod(sizes) != n else sizes)
    return aten.view(self, tuple(self.shape[:d]) + sizes + tuple(self.shape[d + 1:]))


def broadcast_tensors(tensors: Any) -> Any:
    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    # a tensor already of the broadcast shape is returned itself (PyTorch's expand_outplace): no expand op
    return [t if tuple(t.shape) == shape else t.expand(shape) for t in tensors]


def meshgrid(tensors: Any) -> Any:
    return meshgrid_indexing(tensors, "ij")


def meshgrid_indexing(tensors: Any, indexing: Any) -> Any:
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {indexing}")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t}")
    ts = list(tensors)
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = tuple(t.numel() for t in ts)
    out = []
    for i, t in enumerate(ts):      # (PyTorch's: each input viewed along its own dim, then expanded)
        view = [1] * len(ts)
        view[i] = -1
        out.append(aten.expand(aten.view(t, tuple(view)), shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return out


def atleast_1d(self: Any) -> Any:
    return self.reshape((1,)) if self.dim() == 0 else self


def atleast_2d(self: Any) -> Any:
    if self.dim() == 0:
        return self.reshape((1, 1))
    return self.unsqueeze(0) if self.dim() == 1 else self


def atleast_3d(self: Any) -> Any:
    if self.dim() == 0:
        return self.reshape((1, 1, 1))
    if self.dim() == 1:
        return self.unsqueeze(0).unsqueeze(-1)
    return self.unsqueeze(-1) if self.dim() == 2 else self


def atleast_1d_seq(tensors: Any) -> Any:
    return [atleast_1d(t) for t in tensors]


def atleast_2d_seq(tensors: Any) -> Any:
    return [atleast_2d(t) for t in tensors]


def atleast_3d_seq(tensors: Any) -> Any:
    return [atleast_3d(t) for t in tensors]


def hstack(tensors: Any) -> Any:
    ts = atleast_1d_seq(tensors)
    return aten.cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors: Any) -> Any:
    return aten.cat(atleast_2d_seq(tensors), 0)


row_stack = vstack


def dstack(tensors: Any) -> Any:
    return aten.cat(atleast_3d_seq(tensors), 2)


def column_stack(tensors: Any) -> Any:
    ts = [t.reshape((t.numel(), 1)) if t.dim() <= 1 else t for t in tensors]
    return aten.cat(ts, 1)


def fliplr(self: Any) -> Any:
    if self.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return self.flip((1,))


def flipud(self: Any) -> Any:
    if self.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return self.flip((0,))


def tile(self: Any, dims: Any) -> Any:
    dims = tuple(dims)
    if len(dims) < self.dim():
        dims = (1,) * (self.dim() - len(dims)) + dims
    return self.repeat(dims)


def where_nonzero(condition: Any) -> Any:
    return list(condition.nonzero().unbind(1))


def swapaxes(self: Any, axis0: Any, axis1: Any) -> Any:
    return self.transpose(axis0, axis1)


def movedim(self: Any, source: Any, destination: Any) -> Any:
    n = self.dim()
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
                           f"contain the same number of dims as destination ({list(destination)} dims)")
    src, dst = wrap_dims(source, n), wrap_dims(destination, n)
    order = [-1] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(i for i in range(n) if i not in src)
    order = [next(rest) if o == -1 else o for o in order]
    return self.permute(order)


def narrow(self: Any, dim: Any, start: Any, length: Any) -> Any:
    d, start = narrow_check(tuple(self.shape), dim, start, length)
    return aten.slice_Tensor(self, d, start, start + length, 1)


def split_sizes(self: Any, split_size: Any, dim: Any = 0) -> Any:
    return self.split_with_sizes(split_size, dim)


def chunk(self: Any, chunks: Any, dim: Any = 0) -> Any:
    if self.dim() == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    d = wrap_dim(dim, self.dim())
    n = self.shape[d]
    size = (n + chunks - 1) // chunks
    if size == 0 and n == 0:
        return list(self.split_with_sizes([0] * chunks, d))
    return list(aten.split_Tensor(self, size, d))


def tensor_split(self: Any, sections: Any, dim: Any = 0) -> Any:
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    d = wrap_dim(dim, self.dim())
    q, r = divmod(self.shape[d], sections)
    out, start = [], 0
    for size in [q + 1] * r + [q] * (sections - r):
        out.append(aten.slice_Tensor(self, d, start, start + size, 1))
        start += size
    return out


def tensor_split_indices(self: Any, indices: Any, dim: Any = 0) -> Any:
    d = wrap_dim(dim, self.dim())
    n = self.shape[d]
    out, prev = [], 0
    for i in list(indices) + [n]:
        i = max(min(i if i >= 0 else i + n, n), prev) if i != n else n
        out.append(aten.slice_Tensor(self, d, prev, max(i, prev), 1))
        prev = max(i, prev)
    return out


# ---- NumPy-style splits along dim 1 (hsplit; dim 0 for 1-D), 0 (vsplit) and 2 (dsplit) (TensorShape.cpp)
def _split_dim(name: str, self: Any, min_dims: int, dim: int, sections: Any = None) -> int:
    if self.dim() < min_dims:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                           f"{self.dim()} dimensions!")
    if sections is not None and (sections == 0 or self.shape[dim] % sections != 0):
        raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but the size of the dimension "
                           f"{self.shape[dim]} is not divisible by the split_size {sections}!")
    return dim


def hsplit_int(self: Any, sections: int) -> Any:
    dim = 0 if self.dim() == 1 else 1
    return aten.tensor_split_sections(self, sections, _split_dim("hsplit", self, 1, dim, sections))


def hsplit_array(self: Any, indices: Any) -> Any:
    dim = 0 if self.dim() == 1 else 1
    return aten.tensor_split_indices(self, tuple(indices), _split_dim("hsplit", self, 1, dim))


def vsplit_int(self: Any, sections: int) -> Any:
    return aten.tensor_split_sections(self, sections, _split_dim("vsplit", self, 2, 0, sections))


def vsplit_array(self: Any, indices: Any) -> Any:
    return aten.tensor_split_indices(self, tuple(indices), _split_dim("vsplit", self, 2, 0))


def dsplit_int(self: Any, sections: int) -> Any:
    return aten.tensor_split_sections(self, sections, _split_dim("dsplit", self, 3, 2, sections))


def dsplit_array(self: Any, indices: Any) -> Any:
    return aten.tensor_split_indices(self, tuple(indices), _split_dim("dsplit", self, 3, 2))


def adjoint(self: Any) -> Any:
    """The conjugate transpose of the last two dims (a lazy conjugate; a 0-d tensor is its own transpose)."""
    if self.dim() == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
    if self.dim() == 0:
        warn_once("adjoint 0-d", "adjoint() is deprecated on 0-D tensors. Consider using x.conj().")
    t = aten.transpose_int(self, -2, -1) if self.dim() else aten.transpose_int(self, 0, 0)
    return aten.conj(t)


def diagflat(self: Any, offset: int = 0) -> Any:
    """A 2-D tensor with the flattened input on its ``offset``-th diagonal."""
    return aten.diag_embed(aten.reshape(aten.contiguous(self), (-1,)), offset)


def fill_diagonal_(self: Any, fill_value: Any, wrap: bool = False) -> Any:
    """Write ``fill_value`` on the main diagonal (of a 2-D tensor, or of an n-D one with equal sizes); ``wrap``
    continues it below a tall matrix's square part, after one skipped row."""
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    if nd > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    height, width = self.shape[0], self.shape[1]
    size, step = min(height, width), sum(self.stride())
    aten.as_strided(self, (size,), (step,), self.storage_offset()).fill_(fill_value)
    if wrap and nd == 2 and height > width + 1:     # the diagonal goes on after one skipped row
        wrap_size = (self.numel() + width) // (width + 1) - size
        offset = self.storage_offset() + self.stride(0) * (width + 1)
        aten.as_strided(self, (wrap_size,), (step,), offset).fill_(fill_value)
    return self


# -- the *_copy ops: a view op's result as a new contiguous tensor (PyTorch's functionalization variants) ------
_VIEWS: dict[str, Any] = {
    "detach": lambda self: self.detach(),
    "expand": lambda self, size, implicit=False: aten.expand(self, size, implicit=implicit),  # keyword-only
}


def _make_copy(name: str, view: str, list_result: bool = False) -> None:
    view_op = _VIEWS.get(view) or getattr(aten, view)

    def functional(self: Any, *args: Any, **kwargs: Any) -> Any:
        r = view_op(self, *args, **kwargs)  # a *_copy op's result is contiguous, as in PyTorch
        if list_result:
            return [t.clone(memory_format=contiguous_format) for t in r]
        return r.clone(memory_format=contiguous_format)

    def with_out(self: Any, *args_and_out: Any, **kwargs: Any) -> Any:
        *args, out = args_and_out
        return write_out(out, functional(self, *args, **kwargs).detach()._data, name)

    functional.__name__ = functional.__qualname__ = name
    with_out.__name__ = with_out.__qualname__ = name + "_out"
    globals()[name] = functional
    if not list_result:
        globals()[name + "_out"] = with_out


for _name, _view, _list in [
        ("alias_copy", "alias", False), ("as_strided_copy", "as_strided", False), ("detach_copy", "detach", False),
        ("diagonal_copy", "diagonal", False), ("expand_copy", "expand", False), ("narrow_copy", "narrow", False),
        ("permute_copy", "permute", False), ("select_copy_int", "select_int", False),
        ("slice_copy_Tensor", "slice_Tensor", False), ("split_copy_Tensor", "split_Tensor", True),
        ("split_with_sizes_copy", "split_with_sizes", True), ("squeeze_copy", "squeeze", False),
        ("squeeze_copy_dim", "squeeze_dim", False), ("squeeze_copy_dims", "squeeze_dims", False),
        ("t_copy", "t", False), ("transpose_copy_int", "transpose_int", False), ("unbind_copy_int", "unbind_int", True),
        ("unfold_copy", "unfold", False), ("unsqueeze_copy", "unsqueeze", False),
        ("view_as_complex_copy", "view_as_complex", False), ("view_as_real_copy", "view_as_real", False),
        ("view_copy", "view", False), ("view_copy_dtype", "view_dtype", False)]:
    _make_copy(_name, _view, _list)


def combinations(self: Any, r: int = 2, with_replacement: bool = False) -> Any:
    """The r-element combinations of a vector's elements (itertools' order), as the rows of an (n_comb, r)
    tensor: an r-dimensional meshgrid of the vector, masked to the cells with i < j < ... (i <= j <= ... with
    replacement) by a mask made the same way from indices (Itertools.cpp)."""
    if self.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(self.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return aten.empty_memory_format((0,), dtype=self.dtype, device=self.device)
    grids = aten.meshgrid_indexing([self] * r, indexing="ij")
    index = aten.meshgrid_indexing([aten.arange(self.numel(), dtype=int64, device=self.device)] * r, indexing="ij")
    mask = aten.full(tuple(index[0].shape), True, dtype=bool_, device=self.device)
    for i in range(r - 1):
        mask *= (index[i] <= index[i + 1]) if with_replacement else (index[i] < index[i + 1])
    return aten.stack([g.masked_select(mask) for g in grids], 1)


def chain_matmul(matrices: Any, out: Any = None) -> Any:
    """The deprecated ``torch.chain_matmul``: ``linalg.multi_dot`` of two or more matrices (one is returned
    as is)."""
    warn_once("chain_matmul", "torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                     "release. Use torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
                     "than multiple parameters.")
    if len(matrices) == 0:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for i, m in enumerate(matrices):
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    r = matrices[0].clone() if len(matrices) == 1 else aten.linalg_multi_dot(list(matrices))
    return r if out is None else out.resize_(r.shape).copy_(r)


def unsafe_chunk(self: Any, chunks: int, dim: int = 0) -> Any:
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = self.shape[wrap_dim(dim, self.dim())] if self.dim() else 0
    return aten.unsafe_split_Tensor(self, -(-n // chunks) if n else 1, dim)


def _unsafe(parts: Any) -> list[Any]:
    """Split pieces as ``unsafe_split`` returns them: over the same memory, but not views -- no base, a version
    counter of their own -- so in-place ops on them (an RNN cell's ``sigmoid_``) are not checked against the
    input (PyTorch's "unsafe")."""
    return [new_tensor(p._data, p._ks, p.device) for p in parts]


def unsafe_split_Tensor(self: Any, split_size: Any, dim: int = 0) -> Any:
    return _unsafe(aten.split_Tensor(self, split_size, dim))


def unsafe_split_with_sizes(self: Any, split_sizes: Any, dim: int = 0) -> Any:
    return _unsafe(aten.split_with_sizes(self, split_sizes, dim))
