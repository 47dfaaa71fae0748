"""``ember.utils`` (mirrors ``torch/utils``): hooks and ``data``."""
