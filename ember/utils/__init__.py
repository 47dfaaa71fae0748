"""``ember.utils`` (mirrors ``torch/utils``): hooks and ``data``."""
from ember.utils import data, hooks  # noqa: F401
