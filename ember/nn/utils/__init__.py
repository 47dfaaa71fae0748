"""``ember.nn.utils`` (mirrors ``torch.nn.utils``): gradient clipping and parameter/vector conversion."""
from ember.nn.utils.clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, get_total_norm  # noqa: F401
from ember.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
from ember.nn.utils import rnn  # noqa: F401
from ember.nn.utils import parametrizations, parametrize  # noqa: F401,E402
from ember.nn.utils import prune  # noqa: F401,E402
