"""``ember.nn``: the functional namespace now; modules and layers land with the nn issue."""
from ember.nn import functional  # noqa: F401
