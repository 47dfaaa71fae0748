"""``ember.utils`` (mirrors ``torch/utils``): hooks, ``data`` and activation ``checkpoint``."""
from ember.utils import checkpoint, data, deterministic, dlpack, hooks, weak  # noqa: F401


def swap_tensors(t1, t2):
    """Exchange everything two tensors are, in place: their data, dtype, device, autograd state, attributes and
    class (``torch.utils.swap_tensors``); every reference to ``t1`` now sees what ``t2`` was, and back."""
    from ember._tensor import Tensor
    if not (isinstance(t1, Tensor) and isinstance(t2, Tensor)):
        raise RuntimeError(f"Expected both t1 and t2 to be Tensors, but got {type(t1).__name__} and "
                           f"{type(t2).__name__}")
    for slot in ("_data", "_ks", "_vc", "_device"):
        a, b = getattr(t1, slot), getattr(t2, slot)
        object.__setattr__(t1, slot, b)
        object.__setattr__(t2, slot, a)
    d1, d2 = dict(t1.__dict__), dict(t2.__dict__)
    t1.__dict__.clear()
    t1.__dict__.update(d2)
    t2.__dict__.clear()
    t2.__dict__.update(d1)
    c1, c2 = type(t1), type(t2)
    t1.__class__, t2.__class__ = c2, c1
