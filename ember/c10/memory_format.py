"""``torch.layout`` and ``torch.memory_format`` (mirrors ``c10/core/Layout.h`` and ``MemoryFormat.h``): named
constants; the lower layers use them as defaults where PyTorch's C++ does (the autograd engine's implicit gradient
is ``ones_like(output, memory_format=preserve_format)``)."""
from __future__ import annotations
from ember.c10 import naming
from ember.c10.tensor_impl import contiguous_strides


class _NamedConstant:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"{naming.prefix}.{self.name}"

    def __reduce__(self) -> str:
        return self.name        # a singleton: pickled (and deep-copied) as the module attribute of its name


class layout(_NamedConstant):
    __module__ = "ember"      # where it is public (Note [Printed module name])
    pass


strided = layout("strided")
# the sparse layouts (Note [Sparse tensors] in ember/aten/sparse/__init__.py)
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")


class memory_format(_NamedConstant):
    __module__ = "ember"      # where it is public (Note [Printed module name])
    pass


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format  # the same format in PyTorch (what old code asks for)


# -- strides of new tensors (c10's ``get_channels_last_strides_*`` and ``infer_dense_strides``; ``empty_like``'s and
# ``_to_copy``'s preserve_format rule in ATen's TensorFactories.cpp / TensorConversions.cpp)
def channels_last_strides(sizes: tuple[int, ...], fmt: memory_format) -> tuple[int, ...]:
    """NHWC (4-D) / NDHWC (5-D) strides of the NCHW / NCDHW ``sizes``; PyTorch's error for another rank."""
    rank = 4 if fmt is channels_last else 5
    if len(sizes) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {fmt.name} format")
    out = [0] * rank
    out[1] = step = 1
    for d in range(rank - 1, 1, -1):       # W, H (, D): channels innermost, then the spatial dims from the right
        out[d] = step = step * sizes[1] if d == rank - 1 else step * sizes[d + 1]
    out[0] = out[2] * sizes[2]
    return tuple(out)


def non_overlapping_and_dense(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """The elements fill a block of memory exactly once, in some order of the dimensions."""
    expected = 1
    for i in sorted(range(len(sizes)), key=lambda d: (strides[d], sizes[d])):
        if sizes[i] == 1:
            continue
        if strides[i] != expected:
            return False
        expected *= sizes[i]
    return True


def infer_dense_strides(sizes: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...]:
    """Dense strides keeping the order of ``strides`` (c10's ``infer_dense_strides``, TensorIterator's order): a
    stable insertion sort of the dims, innermost first, by stride, then by size for equal strides; a dim of stride 0
    keeps its place."""
    ndim = len(sizes)
    perm = list(range(ndim - 1, -1, -1))

    def should_swap(d0: int, d1: int) -> int:
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if sizes[d0] > sizes[d1] else 0

    for i in range(1, ndim):
        d1 = i
        for j in range(1, i + 1):
            d0 = i - j
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out, step = [0] * ndim, 1
    for d in perm:
        out[d] = step
        if sizes[d] > 1:
            step *= sizes[d]
    return tuple(out)


def preserved_strides(sizes: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The strides PyTorch gives a tensor made like one of ``sizes`` / ``strides`` in ``preserve_format``
    (``empty_like``, ``_to_copy``, ``clone``): the same strides where they are non-overlapping and dense, else
    ``infer_dense_strides``; None for row-major."""
    out = strides if non_overlapping_and_dense(sizes, strides) else infer_dense_strides(sizes, strides)
    return None if out == contiguous_strides(sizes) else out


def strides_like_channels_last(sizes: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """c10's ``is_channels_last_strides_2d`` / ``_3d``: the strides order the dims as NHWC (NDHWC), ambiguous cases
    (a trivial C dimension, N111 tensors) counted as row-major."""
    order = {4: (1, 3, 2, 0), 5: (1, 4, 3, 2, 0)}.get(len(sizes))
    if order is None or strides[1] == 0:
        return False
    low = 0
    for d in order:
        if sizes[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * sizes[d] if sizes[d] > 1 else strides[d]
    return True


def suggest_memory_format(sizes: tuple[int, ...], strides: tuple[int, ...]) -> memory_format:
    """``Tensor.suggest_memory_format()``: channels_last(_3d) where the strides are like it, else contiguous."""
    if strides_like_channels_last(sizes, strides):
        return channels_last if len(sizes) == 4 else channels_last_3d
    return contiguous_format
