"""``ember.linalg``: entries of native_functions.yaml with ``python_module: linalg``."""
from ember._generated.linalg import *  # noqa: F401,F403
from ember.c10.exceptions import _LinAlgError as LinAlgError  # noqa: F401
