"""``ember.fft``: entries of native_functions.yaml with ``python_module: fft``."""
from ember._generated.fft import *  # noqa: F401,F403
