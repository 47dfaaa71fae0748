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
