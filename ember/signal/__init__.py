"""``torch.signal``: signal-processing helpers; today its window functions (``ember.signal.windows``)."""
from ember.signal import windows  # noqa: F401

__all__ = ["windows"]
