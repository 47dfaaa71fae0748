"""``torch._higher_order_ops.cond``: ``cond`` (Note [Higher-order operators] in ``__init__.py``)."""
from ember._higher_order_ops import UnsupportedAliasMutationException, cond

__all__ = ["cond", "UnsupportedAliasMutationException"]
