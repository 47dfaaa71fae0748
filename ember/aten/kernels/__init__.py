"""Array kernels: ``(xp, arrays, python values) -> array``, one per ``dispatch`` entry of
native_functions.yaml (``aten/src/ATen/native``).  Names ending in ``_`` mutate their first argument."""
from ember.aten.kernels.binary import *  # noqa: F401,F403
from ember.aten.kernels.binary import (add, addcdiv, addcmul, atan2, bitwise_and, bitwise_left_shift,  # noqa: F401
                                       bitwise_or, bitwise_right_shift, bitwise_xor, clamp, clamp_max,
                                       clamp_min, copysign, div, eq, floor_divide, fmax, fmin, fmod,
                                       ge, gt, hypot, le, lerp, logaddexp, logaddexp2, logical_and, logical_or,
                                       logical_xor, lt, maximum, minimum, mul, ne, nextafter, pow, remainder,
                                       rsub, sub, true_divide, where, xlogy)
from ember.aten.kernels.complex import *  # noqa: F401,F403
from ember.aten.kernels.copy import *  # noqa: F401,F403
from ember.aten.kernels.factory import *  # noqa: F401,F403
from ember.aten.kernels.fake_quantize import *  # noqa: F401,F403
from ember.aten.kernels.fake_quantize import _fake_quantize_per_tensor_affine_cachemask_tensor_qparams  # noqa: F401
from ember.aten.kernels.fractional_pool import *  # noqa: F401,F403
from ember.aten.kernels.indexing import *  # noqa: F401,F403
from ember.aten.kernels.linalg import *  # noqa: F401,F403
# the torch.nn ops, one module per family of PyTorch's native .cpp files
from ember.aten.kernels.softmax import *  # noqa: F401,F403
from ember.aten.kernels.activation import *  # noqa: F401,F403
from ember.aten.kernels.normalization import *  # noqa: F401,F403
from ember.aten.kernels.convolution import *  # noqa: F401,F403
from ember.aten.kernels.pooling import *  # noqa: F401,F403
from ember.aten.kernels.padding import *  # noqa: F401,F403
from ember.aten.kernels.embedding import *  # noqa: F401,F403
from ember.aten.kernels.loss import *  # noqa: F401,F403
from ember.aten.kernels.upsample import *  # noqa: F401,F403
from ember.aten.kernels.grid_sampler import *  # noqa: F401,F403
from ember.aten.kernels.ctc import *  # noqa: F401,F403
from ember.aten.kernels.shuffle import *  # noqa: F401,F403
from ember.aten.kernels.dropout import *  # noqa: F401,F403
from ember.aten.kernels.attention import *  # noqa: F401,F403
from ember.aten.kernels.random import *  # noqa: F401,F403
from ember.aten.kernels.resample import *  # noqa: F401,F403
from ember.aten.kernels.reduction import *  # noqa: F401,F403
from ember.aten.kernels.spectral import *  # noqa: F401,F403
from ember.aten.kernels.unary import *  # noqa: F401,F403
from ember.aten.kernels.views import *  # noqa: F401,F403
from ember.aten.kernels.special_functions import *  # noqa: F401,F403
from ember.aten.kernels.views import _reshape_alias, _unsafe_view  # noqa: F401
from ember.aten.kernels.distributions import (_dirichlet_grad, _sample_dirichlet, _standard_gamma,  # noqa: F401
                                              _standard_gamma_grad, binomial)
from ember.aten.kernels.rnn import (_rnn_layer, _rnn_layer_backward, mkldnn_rnn_layer,  # noqa: F401
                                    mkldnn_rnn_layer_backward)
from ember.aten.kernels.reduction import (_histogramdd_bin_edges, _histogramdd_from_bin_cts,  # noqa: F401
                                          _histogramdd_from_bin_tensors)
from ember.aten.kernels.sobol import (_sobol_engine_draw, _sobol_engine_ff_,  # noqa: F401
                                      _sobol_engine_initialize_state_, _sobol_engine_scramble_)
