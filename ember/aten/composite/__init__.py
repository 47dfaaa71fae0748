"""CompositeImplicitAutograd ops: written in other ember ops, so they need no kernel and no derivative
formula (``aten/src/ATen/native`` functions registered as ``CompositeImplicitAutograd``), one module per
PyTorch source file. The YAML's ``CompositeImplicitAutograd: <name>`` names a function of this namespace.

Each function takes the op's schema arguments in order and is written in the internal op API
(``ember/_generated/aten.py``, Note [The internal op API]) and Tensor methods, as PyTorch's are in ``at::``.
"""
from ember.aten.composite.elementwise import *  # noqa: F401,F403
from ember.aten.composite.aliases import *  # noqa: F401,F403
from ember.aten.composite.complex import *  # noqa: F401,F403
from ember.aten.composite.dropout import *  # noqa: F401,F403
from ember.aten.composite.factories import *  # noqa: F401,F403
from ember.aten.composite.foreach import *  # noqa: F401,F403
from ember.aten.composite.linalg import *  # noqa: F401,F403
from ember.aten.composite.loss import *  # noqa: F401,F403
from ember.aten.composite.nn import *  # noqa: F401,F403
from ember.aten.composite.optim import *  # noqa: F401,F403
from ember.aten.composite.reduction import *  # noqa: F401,F403
from ember.aten.composite.rnn import *  # noqa: F401,F403
from ember.aten.composite.shape import *  # noqa: F401,F403
from ember.aten.composite.spectral import *  # noqa: F401,F403
from ember.aten.composite.windows import *  # noqa: F401,F403
from ember.aten.composite.amp import *  # noqa: F401,F403
from ember.aten.composite.quantize import *  # noqa: F401,F403
from ember.aten.composite.elementwise import scalar_to_tensor, wrapped_number  # noqa: F401 (used above the op library)
from ember.aten.composite.nn import (_pad_circular, _prelu_kernel_backward,  # noqa: F401
                                     _scaled_dot_product_attention_math)
from ember.aten.composite.linalg import _linalg_check_errors, _lu_with_info  # noqa: F401
# sparse tensors' constructors and layout queries (Note [Sparse tensors] in ember/aten/sparse/__init__.py)
from ember.aten.sparse.coo import (coalesce, dense_dim_strided, dense_to_sparse, dense_to_sparse_layout,  # noqa: F401
                                   indices_default, to_sparse,
                                   is_coalesced_default, sparse_coo_tensor_indices, sparse_coo_tensor_indices_size,
                                   sparse_coo_tensor_size, sparse_coo_tensor_unsafe,
                                   sparse_coo_tensor_with_dims_and_tensors, sparse_dim_strided, to_dense,
                                   to_sparse_sparse_dim, validate_sparse_coo_tensor_args, values_default)
from ember.aten.sparse.math import sparse_mm, sparse_sum, sparse_sum_dim_dtype, sparse_sum_dtype  # noqa: F401
from ember.aten.sparse.compressed import (ccol_indices_default, col_indices_default,  # noqa: F401
                                         crow_indices_default, row_indices_default, sparse_compressed_tensor_infer,
                                         sparse_compressed_tensor_unsafe, sparse_compressed_tensor_with_size,
                                         to_sparse_bsc, to_sparse_bsr, to_sparse_csc, to_sparse_csr,
                                         validate_sparse_compressed_tensor_args)
