"""The SparseCPU and SparseCsrCPU backends (mirrors ``aten/src/ATen/native/sparse``): the kernels of operators over
sparse tensors. The YAML's ``SparseCPU: <name>`` / ``SparseCsrCPU: <name>`` names a function of this namespace; like
composites, they take the op's arguments (tensors, not arrays) in schema order.

Note [Sparse tensors]
A sparse tensor is an ``ember.Tensor`` whose key set has ``SparseCPU`` (the COO layout) or ``SparseCsrCPU`` (CSR,
CSC, BSR, BSC) where a strided tensor has ``CPU``, with the CPU's autograd and autocast keys, as in PyTorch. Its
``_data`` is a shell: an array of its sizes and dtype over one element with every stride 0, so everything that reads
sizes, dtype or ``numel`` works unchanged and ``stride()`` gives PyTorch's zeros; nothing reads its elements. What
it holds is in ``_sp`` (``SparseParts``, ember/aten/sparse/tensor.py): the index and value arrays of its layout.

Because ``SparseCPU`` ranks above ``CPU``, any call with a sparse argument runs the operator's SparseCPU kernel (a
dense + sparse ``add`` too); an operator without one refuses with PyTorch's "Could not run 'aten::exp' with
arguments from the 'SparseCPU' backend". The dense kernels never see a sparse tensor. CompositeImplicitAutograd
operators decompose for sparse tensors as for dense ones (``matmul`` reaches ``mm``); CompositeExplicitAutograd
kernels are not used for sparse keys, so a sparse tensor never reaches a kernel written for strided ones.

Autograd needs nothing special: formulas are written in operators, so a gradient is sparse exactly where the
formula's operators make one (``embedding_backward`` with ``sparse=True``, ``torch.sparse.mm``'s masked gradient),
and ``AccumulateGrad`` sums sparse gradients without densifying them (ember/autograd/graph.py).
"""
from ember.aten.sparse.coo import *  # noqa: F401,F403
from ember.aten.sparse.math import *  # noqa: F401,F403
from ember.aten.sparse.compressed import *  # noqa: F401,F403
from ember.aten.sparse.compressed_math import *  # noqa: F401,F403
from ember.aten.sparse import compressed_math as _compressed_math, math as _math


def register_kernels() -> None:
    """The SparseCPU / SparseCsrCPU kernels registered from tables rather than the YAML (the zero-preserving
    elementwise ops), once the operator table is registered (ember/_initialize.py)."""
    _math.register_unary_kernels()
    _compressed_math.register_unary_kernels()
