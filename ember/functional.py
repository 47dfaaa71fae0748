"""``torch.functional``: the functions of ``torch.*`` written in Python rather than declared as one schema."""
from ember._functional import (atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes,  # noqa: F401
                               broadcast_tensors, cartesian_prod, cdist, chain_matmul, einsum, lu, meshgrid, norm,
                               split, tensordot, unique, unique_consecutive, unravel_index)
from ember._generated.functions import istft, stft  # noqa: F401
from ember._lowrank import pca_lowrank, svd_lowrank  # noqa: F401

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes", "broadcast_tensors",
           "cartesian_prod", "cdist", "chain_matmul", "einsum", "istft", "lu", "meshgrid", "norm", "pca_lowrank",
           "split", "stft", "svd_lowrank",
           "tensordot", "unique", "unique_consecutive", "unravel_index"]
