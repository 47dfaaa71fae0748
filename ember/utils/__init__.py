"""``ember.utils`` (mirrors ``torch/utils``): hooks, ``data`` and activation ``checkpoint``."""
from ember.utils import checkpoint, data, dlpack, hooks  # noqa: F401
