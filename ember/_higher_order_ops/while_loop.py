"""``torch._higher_order_ops.while_loop``: ``while_loop`` (Note [Higher-order operators] in ``__init__.py``)."""
from ember._higher_order_ops import while_loop

__all__ = ["while_loop"]
