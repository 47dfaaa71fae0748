"""Dispatch keys and key sets (mirrors ``c10/core/DispatchKey.h`` and ``DispatchKeySet.h``).

Keys are listed from lowest to highest priority, in PyTorch's order: backends first, then the
functionality keys PyTorch places above them (``ADInplaceOrView``, the per-backend ``Autograd*`` keys,
``Autocast*``, ...).  A ``DispatchKeySet`` is a bitset over these keys; the dispatcher runs the kernel
of the highest key in the set.
"""
from __future__ import annotations

from typing import Iterable, Iterator

import enum


class DispatchKey(enum.IntEnum):
    Undefined = 0
    CPU = 1
    CUDA = 2
    Meta = 3
    QuantizedCPU = 4      # quantized tensors' backends (Note [Quantized dtypes] in dtype.py)
    QuantizedCUDA = 5
    SparseCPU = 6         # sparse tensors' backends (Note [Sparse tensors] in ember/aten/sparse/__init__.py)
    SparseCsrCPU = 7
    BackendSelect = 8
    Python = 9
    Fake = 10
    Functionalize = 11
    Conjugate = 12
    Negative = 13
    ZeroTensor = 14
    ADInplaceOrView = 15
    AutogradOther = 16
    AutogradCPU = 17
    AutogradCUDA = 18
    AutogradMeta = 19
    Tracer = 20
    AutocastCPU = 21
    AutocastCUDA = 22
    Batched = 23
    VmapMode = 24
    PythonTLSSnapshot = 25
    PreDispatch = 26      # above autograd: make_fx(pre_dispatch=True) / export record ops here (Note [Pre-dispatch])
    PythonDispatcher = 27
    # keys of devices ember has no backend for: no tensor carries them, but libraries name them when they register
    # kernels (torchvision's AutocastXPU), and a kernel registered for one is kept and never runs
    XPU = 28
    MPS = 29
    AutogradXPU = 30
    AutogradMPS = 31
    AutocastXPU = 32
    AutocastMPS = 33
    PrivateUse1 = 34
    # alias keys: never in a tensor's key set; a kernel registered under one serves several keys
    CompositeExplicitAutograd = 35
    CompositeImplicitAutograd = 36
    Autograd = 37
    CompositeExplicitAutogradNonFunctional = 38


BACKEND_KEYS = (DispatchKey.CPU, DispatchKey.CUDA, DispatchKey.Meta)
AUTOGRAD_KEYS = (DispatchKey.AutogradCPU, DispatchKey.AutogradCUDA, DispatchKey.AutogradMeta,
                 DispatchKey.AutogradOther)
AUTOGRAD_KEY_OF_BACKEND = {DispatchKey.CPU: DispatchKey.AutogradCPU, DispatchKey.CUDA: DispatchKey.AutogradCUDA,
                           DispatchKey.Meta: DispatchKey.AutogradMeta}
BACKEND_OF_DEVICE_TYPE = {"cpu": DispatchKey.CPU, "cuda": DispatchKey.CUDA, "meta": DispatchKey.Meta}

AUTOGRAD_MASK = 0
for _k in AUTOGRAD_KEYS:
    AUTOGRAD_MASK |= 1 << _k
BACKEND_MASK = (1 << DispatchKey.CPU) | (1 << DispatchKey.CUDA) | (1 << DispatchKey.Meta)


class DispatchKeySet:
    """An immutable set of dispatch keys stored as a bitset (``repr`` as PyTorch prints it)."""

    __slots__ = ("repr_",)

    def __init__(self, keys: int | DispatchKey | Iterable[DispatchKey] = ()) -> None:
        bits = 0
        if isinstance(keys, int) and not isinstance(keys, DispatchKey):
            bits = keys
        else:
            if isinstance(keys, DispatchKey):
                keys = (keys,)
            for k in keys:
                bits |= 1 << int(k)
        self.repr_ = bits

    def __or__(self, other: DispatchKeySet) -> DispatchKeySet:
        return DispatchKeySet(self.repr_ | other.repr_)

    def __and__(self, other: DispatchKeySet) -> DispatchKeySet:
        return DispatchKeySet(self.repr_ & other.repr_)

    def __sub__(self, other: DispatchKeySet) -> DispatchKeySet:
        return DispatchKeySet(self.repr_ & ~other.repr_)

    def add(self, key: DispatchKey) -> DispatchKeySet:
        return DispatchKeySet(self.repr_ | (1 << key))

    def remove(self, key: DispatchKey) -> DispatchKeySet:
        return DispatchKeySet(self.repr_ & ~(1 << key))

    def has(self, key: DispatchKey) -> bool:
        return bool(self.repr_ >> key & 1)

    __contains__ = has

    def empty(self) -> bool:
        return self.repr_ == 0

    def highestPriorityTypeId(self) -> DispatchKey:
        return DispatchKey(self.repr_.bit_length() - 1) if self.repr_ else DispatchKey.Undefined

    def __iter__(self) -> Iterator[DispatchKey]:  # highest priority first, like PyTorch's iteration order reversed
        bits = self.repr_
        while bits:
            k = bits.bit_length() - 1
            yield DispatchKey(k)
            bits &= ~(1 << k)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DispatchKeySet) and other.repr_ == self.repr_

    def __hash__(self) -> int:
        return hash(self.repr_)

    def __repr__(self) -> str:
        return "DispatchKeySet(" + ", ".join(k.name for k in sorted(self, key=int)) + ")"


# Note [Math bits]
# A tensor whose values are the conjugate (or the negation) of its memory carries the Conjugate (Negative) key: a
# lazy ``conj()`` / ``_neg_view()`` is a view with the bit flipped, and the key's fallback (ember/aten/math_bits.py)
# materializes the bit before any kernel that would read the memory as the values, as PyTorch's MathOpFallback does.
CONJ_BIT = 1 << DispatchKey.Conjugate
NEG_BIT = 1 << DispatchKey.Negative
MATH_BITS = CONJ_BIT | NEG_BIT

AUTOCAST_KEY_OF_BACKEND = {DispatchKey.CPU: DispatchKey.AutocastCPU, DispatchKey.CUDA: DispatchKey.AutocastCUDA}
AUTOCAST_MASK = (1 << DispatchKey.AutocastCPU) | (1 << DispatchKey.AutocastCUDA)


def keyset_bits_for_backend(backend: DispatchKey) -> int:
    """PyTorch's key set of a tensor on ``backend``: backend + ADInplaceOrView + its Autograd key + its Autocast key
    (Note [Autocast keys]; meta tensors have none, as in PyTorch). A tensor that does not require grad stores it
    without the Autograd key (Note [The Autograd key of a tensor that does not require grad])."""
    bits = (1 << backend) | (1 << DispatchKey.ADInplaceOrView) | (1 << AUTOGRAD_KEY_OF_BACKEND[backend])
    if backend in AUTOCAST_KEY_OF_BACKEND:
        bits |= 1 << AUTOCAST_KEY_OF_BACKEND[backend]
    return bits


# Note [The Autograd key of a tensor that does not require grad]
# In PyTorch every CPU tensor carries AutogradCPU, so every call runs the op's autograd kernel, which checks whether
# an input requires grad and, for most ops, only redispatches when none does. ember's tensors carry their backend's
# Autograd key only while they require grad (``requires_grad_``, ``set_history``; a tensor that may share its
# autograd state with another, as ``as_subclass``'s alias, keeps it for good). A call's key set, the union of its
# tensors' sets, then has an Autograd key exactly when an input requires grad, and a call without one goes straight
# to the backend -- the autograd frame, its requires-grad checks and the second cache lookup were a fifth of a small
# op's time. The autograd kernels that do more than redispatch when nothing requires grad (views keep their base,
# in-place ops check their target) still run: for those operators the dispatcher resolves a key set that has
# ADInplaceOrView but not the backend's Autograd key as if it had it (Note [Kernel resolution] in
# ember/aten/dispatcher.py). A stale key on a tensor that no longer requires grad costs only that frame; the
# missing key on one that does would lose its gradient, so every write of ``_rg = True`` sets the key.
# The Autograd key of CPU / CUDA / Meta sits AUTOGRAD_SHIFT bits above the backend key.
AUTOGRAD_SHIFT = DispatchKey.AutogradCPU - DispatchKey.CPU
assert all(AUTOGRAD_KEY_OF_BACKEND[b] - b == AUTOGRAD_SHIFT for b in BACKEND_KEYS)


def requiring_grad(ks: int) -> int:
    """``ks`` with the Autograd key of its backend: the key set of a tensor that requires grad."""
    return ks | (ks & BACKEND_MASK) << AUTOGRAD_SHIFT


def not_requiring_grad(ks: int) -> int:
    """``ks`` without the Autograd key of its backend (a quantized tensor, which cannot require grad, keeps
    PyTorch's whole set: its backend key is not one of BACKEND_MASK)."""
    return ks & ~((ks & BACKEND_MASK) << AUTOGRAD_SHIFT)


KS_CPU = not_requiring_grad(keyset_bits_for_backend(DispatchKey.CPU))
# a quantized CPU tensor: QuantizedCPU instead of CPU, the CPU's autograd and autocast keys (PyTorch's set)
KS_QUANTIZED_CPU = keyset_bits_for_backend(DispatchKey.CPU) & ~(1 << DispatchKey.CPU) | 1 << DispatchKey.QuantizedCPU
# a sparse CPU tensor: SparseCPU (COO) or SparseCsrCPU (CSR, CSC, BSR, BSC) instead of CPU, with the CPU's autograd
# and autocast keys (PyTorch's set), kept whole whether or not it requires grad, as a quantized tensor's
KS_SPARSE_CPU = keyset_bits_for_backend(DispatchKey.CPU) & ~(1 << DispatchKey.CPU) | 1 << DispatchKey.SparseCPU
KS_SPARSE_CSR_CPU = keyset_bits_for_backend(DispatchKey.CPU) & ~(1 << DispatchKey.CPU) | 1 << DispatchKey.SparseCsrCPU
SPARSE_MASK = (1 << DispatchKey.SparseCPU) | (1 << DispatchKey.SparseCsrCPU)
KS_CUDA = not_requiring_grad(keyset_bits_for_backend(DispatchKey.CUDA))
KS_META = not_requiring_grad(keyset_bits_for_backend(DispatchKey.Meta))
KS_OF_DEVICE_TYPE = {"cpu": KS_CPU, "cuda": KS_CUDA, "meta": KS_META}
