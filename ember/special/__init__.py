"""``ember.special``: entries of native_functions.yaml with ``python_module: special``."""
from ember._generated.special import *  # noqa: F401,F403
