"""``ember.nn.utils`` (mirrors ``torch.nn.utils``): gradient clipping, parameter/vector conversion, BatchNorm
fusion, weight / spectral normalization (hooks and parametrizations), ``functional_call``, ``skip_init``."""
from ember.nn.utils.clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                                      clip_grads_with_norm_, get_total_norm)
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from ember.nn.utils import rnn  # noqa: F401
from ember.nn.utils import parametrizations, parametrize  # noqa: F401,E402
from ember.nn.utils import prune  # noqa: F401,E402
from ember.nn.utils import fusion, init, memory_format, stateless  # noqa: F401,E402
from ember.nn.utils.fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,  # noqa: F401,E402
                                   fuse_linear_bn_weights)
from ember.nn.utils.init import skip_init  # noqa: F401,E402
from ember.nn.utils.memory_format import (convert_conv2d_weight_memory_format,  # noqa: F401,E402
                                          convert_conv3d_weight_memory_format)
from ember.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401,E402
from ember.nn.utils.weight_norm import remove_weight_norm, weight_norm  # noqa: F401,E402
