"""``ember.nn.functional``: entries of native_functions.yaml with ``python_module: nn``, plus the
functions written in Python over them (more land with the nn issue)."""
from ember._generated.functions import relu, sigmoid, tanh  # noqa: F401
from ember._generated.nn_functional import *  # noqa: F401,F403
