"""``ember.utils`` (mirrors ``torch/utils``): hooks, ``data`` and activation ``checkpoint``."""
from ember.utils import checkpoint, data, hooks  # noqa: F401
