"""``ember.special``: entries of native_functions.yaml with ``python_module: special``; ``Tensor`` as
``torch.special`` has it."""
from ember._generated.special import *  # noqa: F401,F403
from ember._tensor import Tensor  # noqa: F401
