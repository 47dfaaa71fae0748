"""Functions of ``ember.*`` whose Python signatures are not one schema (``torch/functional.py``)."""
from __future__ import annotations

from ember.aten import torch_function as _torch_function
from ember.aten.backends import written_in_cpp as _written_in_cpp
from ember._generated import functions as _F
from ember._ops import ops as _ops
from ember.c10.size import Size
from ember.c10.tensor_impl import _wrap_dim as wrap_dim

_aten = _ops.aten

__all__ = ["unique", "split", "norm", "einsum", "meshgrid", "tensordot", "broadcast_tensors", "atleast_1d",
           "atleast_2d", "atleast_3d", "broadcast_shapes", "cdist", "detach_", "selu", "selu_",
           "as_strided_", "resize_as_", "is_conj", "is_neg", "is_signed", "cartesian_prod", "block_diag", "get_device",
           "lu", "unravel_index", "chain_matmul", "unique_consecutive", "histogramdd",
           "gradient", "nonzero"]

_CDIST_MODES = {"use_mm_for_euclid_dist_if_necessary": None, "use_mm_for_euclid_dist": 1,
                "donot_use_mm_for_euclid_dist": 2}


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Unique elements (sorted), optionally with the inverse mapping and the counts."""
    if dim is None:
        out, inv, cnt = _aten._unique2(input, sorted, return_inverse, return_counts)
    else:
        out, inv, cnt = _aten.unique_dim(input, dim, sorted, return_inverse, return_counts)
    return _asked_outputs(out, inv, cnt, return_inverse, return_counts)


def _asked_outputs(out, inv, cnt, return_inverse, return_counts):
    """The unique values, followed by the inverse and / or the counts when asked for (a tensor alone otherwise)."""
    if return_inverse and return_counts:
        return out, inv, cnt
    if return_inverse:
        return out, inv
    if return_counts:
        return out, cnt
    return out


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """Each run of equal consecutive elements (slices along ``dim``) collapsed to one; optionally the run each
    element belongs to and the runs' lengths."""
    out, inv, cnt = _aten.unique_consecutive(input, return_inverse, return_counts, dim)
    return _asked_outputs(out, inv, cnt, return_inverse, return_counts)


def histogramdd(input, bins, *, range=None, weight=None, density=False):  # noqa: A002
    """The histogram of the points ``input[..., :]`` in D dimensions (D = ``input.size(-1)``): ``bins`` an int (per
    dimension), a list of D ints, or a list of D edge tensors; returns ``(hist, bin_edges)``."""
    from ember import return_types
    if isinstance(bins, int):
        bins = [bins] * (input.shape[-1] if input.dim() else 0)
    if len(bins) and not isinstance(bins[0], int):
        hist = _aten._histogramdd_from_bin_tensors(input, list(bins), weight=weight, density=density)
        return return_types.histogramdd(hist, tuple(bins))
    edges = _aten._histogramdd_bin_edges(input, list(bins), range=range, weight=weight, density=density)
    hist = _aten._histogramdd_from_bin_cts(input, list(bins), range=range, weight=weight, density=density)
    return return_types.histogramdd(hist, tuple(edges))


def split(tensor, split_size_or_sections, dim=0):
    """Split into chunks of ``split_size_or_sections`` (an int) or of the given sizes (a list)."""
    if isinstance(split_size_or_sections, (list, tuple)):
        return _F.split_with_sizes(tensor, split_size_or_sections, dim)
    return _F.split(tensor, split_size_or_sections, dim)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """``torch.norm``: Frobenius / nuclear / vector p-norms (see ``ember.linalg`` for the new API)."""
    import ember
    if isinstance(dim, int):
        dim = (dim,)
    if p == "fro" and (dim is None or len(dim) <= 2):
        r = ember.linalg.vector_norm(input, 2, dim, keepdim, dtype=dtype)
    elif p == "nuc":
        r = ember.linalg.matrix_norm(input, "nuc", (-2, -1) if dim is None else dim, keepdim, dtype=dtype)
    else:
        r = ember.linalg.vector_norm(input, p, dim, keepdim, dtype=dtype)
    if out is not None:
        from ember.aten.wrap import write_out
        return write_out(out, r._data, "norm")
    return r


def einsum(*args):
    """``einsum("ij,jk->ik", a, b)`` (operands may also be given as one list), or the sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (labels 0-51, ``...`` as Ellipsis)."""
    if len(args) < 2:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if isinstance(args[0], str):
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = operands[0]
        return _F.einsum(equation, list(operands))
    operands, subscripts = list(args[0::2]), list(args[1::2])
    output = None
    if len(args) % 2 == 1:
        output = operands.pop()
    equation = ",".join("".join(_sublist_label(s) for s in sub) for sub in subscripts)
    if output is not None:
        equation += "->" + "".join(_sublist_label(s) for s in output)
    return _F.einsum(equation, operands)


def _sublist_label(n):
    if n is Ellipsis:
        return "..."
    if isinstance(n, int) and 0 <= n < 26:
        return chr(ord("A") + n)
    if isinstance(n, int) and 26 <= n < 52:
        return chr(ord("a") + n - 26)
    raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")


def meshgrid(*tensors, indexing=None):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    if indexing is None:
        import warnings
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    return tuple(_F.meshgrid(list(tensors), indexing=indexing))


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` trailing dims of ``a`` with leading dims of ``b``, or the two given dim lists."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da = list(range(a.dim() - dims, a.dim()))
        db = list(range(dims))
    elif hasattr(dims, "tolist"):
        dims = dims.tolist()
        da, db = ([dims[0]], [dims[1]]) if isinstance(dims[0], int) else (dims[0], dims[1])
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
    r = _F.tensordot(a, b, da, db)
    if out is not None:
        from ember.aten.wrap import write_out
        return write_out(out, r._data, "tensordot")
    return r


def broadcast_tensors(*tensors):
    return tuple(_F.broadcast_tensors(list(tensors)))


def broadcast_shapes(*shapes):
    from ember.aten.meta import broadcast_shapes as _bs
    return Size(_bs(*[(s,) if isinstance(s, int) else tuple(s) for s in shapes]))


def _atleast(fn, tensors):
    if len(tensors) == 1 and not isinstance(tensors[0], (list, tuple)):
        return fn(tensors[0])
    if len(tensors) == 1:
        tensors = tensors[0]
    return tuple(fn(t) for t in tensors)


def atleast_1d(*tensors):
    return _atleast(_F.atleast_1d, tensors)


def atleast_2d(*tensors):
    return _atleast(_F.atleast_2d, tensors)


def atleast_3d(*tensors):
    return _atleast(_F.atleast_3d, tensors)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """Pairwise ``p``-norm distances between the rows of ``x1`` and ``x2``; ``compute_mode`` says whether the
    Euclidean distance may go through a matrix product (PyTorch's names, then the op's integer code)."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    return _F.cdist(x1, x2, p, _CDIST_MODES[compute_mode])


# Tensor properties and methods that PyTorch also offers as functions of ``torch``
def selu(input):  # noqa: A002
    from ember.nn import functional as F
    return F.selu(input)


def selu_(input):  # noqa: A002
    from ember.nn import functional as F
    return F.selu(input, inplace=True)


def detach_(input):  # noqa: A002
    return input.detach_()


def as_strided_(input, size, stride, storage_offset=None):  # noqa: A002
    return input.as_strided_(size, stride, storage_offset)


def resize_as_(input, the_template, memory_format=None):  # noqa: A002
    return input.resize_as_(the_template, memory_format=memory_format)


def is_conj(input):  # noqa: A002
    return input.is_conj()


def is_neg(input):  # noqa: A002
    return input.is_neg()


def is_signed(input):  # noqa: A002
    return input.is_signed()


def get_device(input):  # noqa: A002
    return input.get_device()


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (``torch.cartesian_prod(a, b)``)."""
    return _F.cartesian_prod(list(tensors))


def block_diag(*tensors):
    """The tensors as blocks along the diagonal of one matrix (``torch.block_diag(a, b, c)``)."""
    return _F.block_diag(list(tensors))


_LU_DEPRECATION = ("torch.lu is deprecated in favor of torch.linalg.lu_factor / torch.linalg.lu_factor_ex and will be "
                   "removed in a future PyTorch release.\nLU, pivots = torch.lu(A, compute_pivots)\nshould be replaced "
                   "with\nLU, pivots = torch.linalg.lu_factor(A, compute_pivots)\nand\nLU, pivots, info = torch.lu(A, "
                   "compute_pivots, get_infos=True)\nshould be replaced with\nLU, pivots, info = "
                   "torch.linalg.lu_factor_ex(A, compute_pivots)")
_warned_lu = []


def lu(A, pivot=True, get_infos=False, out=None):
    """The deprecated ``torch.lu``: (LU, pivots), or (LU, pivots, info) with ``get_infos`` (which also stops
    it from raising for a singular matrix)."""
    if not _warned_lu:
        import warnings
        _warned_lu.append(True)
        warnings.warn(_LU_DEPRECATION, UserWarning, stacklevel=2)
    result = _F._lu_with_info(A, pivot=pivot, check_errors=not get_infos)
    if out is not None:
        for o, r in zip(out, result if get_infos else result[:2]):
            o.resize_as_(r).copy_(r)
        return out
    return result if get_infos else (result[0], result[1])


def unravel_index(indices, shape):
    """The coordinates in an array of ``shape`` of flat (row-major) indices: a tuple of int64 tensors, one per
    dimension (indices wrap around modulo each size, as PyTorch's floor division does)."""
    import ember
    if isinstance(indices, (bool, float)) or not isinstance(indices, (int, ember.Tensor)):
        raise TypeError(f"expected 'indices' to be integer dtype, but got {type(indices)}")
    if isinstance(indices, int):
        raise AttributeError("'int' object has no attribute 'is_complex'")
    if indices.is_complex() or indices.is_floating_point() or indices.dtype is ember.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype}")
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(shape))
    coords = []
    stride = 1
    for size in reversed(shape):
        coords.append((indices // stride) % size if size else indices * 0)
        stride *= size
    return tuple(c.long() for c in reversed(coords))


def chain_matmul(*matrices, out=None):
    """The deprecated ``torch.chain_matmul(A, B, C, ...)``: the product of the matrices (``linalg.multi_dot``)."""
    if out is not None:
        return _F.chain_matmul(list(matrices), out=out)
    return _F.chain_matmul(list(matrices))


def gradient(input, *, spacing=1, dim=None, edge_order=1):  # noqa: A002
    """Estimates of the derivative of ``input`` along each of ``dim`` by central differences in the interior and
    one-sided differences of order ``edge_order`` at the ends (NumPy's ``gradient``), with ``spacing`` a scalar,
    one scalar per dimension, or one tensor of coordinates per dimension. Differentiable."""
    import ember
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [wrap_dim(d, input.dim()) for d in ([dim] if isinstance(dim, int) else dim)]
        seen = set()
        for d in dims:
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.add(d)
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            if dim is None:
                raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                                   f"equal to 'self.dim() = {input.dim()}', since dim argument was not given, but got "
                                   f"a list of length {len(spacing)}")
            raise RuntimeError("torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                               f"arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    x = input   # coordinates (a tensor spacing) take an integer input in the default dtype; a number divides it
    if not (input.is_floating_point() or input.is_complex()) and any(isinstance(h, _tensor_type()) for h in spacings):
        x = input.to(ember.get_default_dtype())
    return tuple(_gradient_along(x if isinstance(h, _tensor_type()) else input, d, h, edge_order)
                 for d, h in zip(dims, spacings))


@_written_in_cpp
def _gradient_along(x, d, h, edge_order):
    n = x.shape[d]

    def at(start, length):
        return x.narrow(d, start, length)

    if not isinstance(h, _tensor_type()):  # uniform spacing: divided by h, the centre then halved (ReduceOps.cpp)
        center = (at(2, n - 2) - at(0, n - 2)) / h
        if edge_order == 1:
            first, last = (at(1, 1) - at(0, 1)) / h, (at(n - 1, 1) - at(n - 2, 1)) / h
        else:       # (the three products first, as PyTorch's compiled code evaluates them)
            a, b, c = -1.5 * at(0, 1), 2 * at(1, 1), 0.5 * at(2, 1)
            first = (a + b - c) / h
            a, b, c = 0.5 * at(n - 3, 1), 2 * at(n - 2, 1), 1.5 * at(n - 1, 1)
            last = (a - b + c) / h
        return _F.cat([first, center / 2, last], d)
    if h.dim() != 1 or h.shape[0] != n:
        raise RuntimeError(f"The size of tensor a ({h.shape[0] if h.dim() else 1}) must match the size of tensor b "
                           f"({n}) at non-singleton dimension {d}")
    shape = [1] * x.dim()
    shape[d] = -1

    def along(v):
        return v.reshape(shape)

    dx = h[1:] - h[:-1]
    dx1, dx2 = dx[:-1], dx[1:]
    a = -dx2 / (dx1 * (dx1 + dx2))
    b = (dx2 - dx1) / (dx1 * dx2)
    c = dx1 / (dx2 * (dx1 + dx2))
    interior = along(a) * at(0, n - 2) + along(b) * at(1, n - 2) + along(c) * at(2, n - 2)
    if edge_order == 1:
        first = (at(1, 1) - at(0, 1)) / dx[0]
        last = (at(n - 1, 1) - at(n - 2, 1)) / dx[-1]
    else:
        e1, e2 = dx[0], dx[1]
        first = (-(2 * e1 + e2) / (e1 * (e1 + e2)) * at(0, 1) + (e1 + e2) / (e1 * e2) * at(1, 1)
                 - e1 / (e2 * (e1 + e2)) * at(2, 1))
        e1, e2 = dx[-2], dx[-1]
        last = (e2 / (e1 * (e1 + e2)) * at(n - 3, 1) - (e2 + e1) / (e1 * e2) * at(n - 2, 1)
                + (2 * e2 + e1) / (e2 * (e1 + e2)) * at(n - 1, 1))
    return _F.cat([first, interior, last], d)


def _tensor_type():
    import ember
    return ember.Tensor


def nonzero(input, *, out=None, as_tuple=False):  # noqa: A002
    """The indices of the non-zero elements: an (n, ndim) int64 tensor, or with ``as_tuple=True`` one index tensor
    per dimension (a 0-d input counting as 1-d), as NumPy's ``nonzero`` gives them."""
    if not as_tuple:
        return _F.nonzero(input) if out is None else _F.nonzero(input, out=out)
    if out is not None:
        raise RuntimeError("nonzero does not support the out kwarg when as_tuple is True")
    return _F.nonzero(input if input.dim() else input.unsqueeze(0)).unbind(1)


def _assert(condition, message):
    """``assert condition, message`` as a function (what fx records for a specialized argument)."""
    if type(condition) is not bool and isinstance(condition, _F._Tensor):
        condition = bool(condition)
    assert condition, message


_torch_function.make_module_overridable(globals())
_assert = _torch_function.overridable(_assert)  # Note [Keeping __torch_function__ off the path of plain tensors]
