"""``ember.nn`` (mirrors ``torch.nn``): ``Module``, ``Parameter``, the layers, ``functional``, ``init``
and ``utils``."""
from ember.nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from ember.nn.modules import *  # noqa: F401,F403
from ember.nn import attention, functional, init, utils  # noqa: F401
from ember.nn import common_types, grad, parallel  # noqa: F401,E402
from ember.nn.parallel import DataParallel  # noqa: F401,E402


def factory_kwargs(kwargs: dict | None) -> dict:
    """The ``device`` / ``dtype`` / ``memory_format`` of a module constructor's keyword arguments as one dict,
    merging a ``factory_kwargs`` entry (``torch.nn.factory_kwargs``)."""
    if kwargs is None:
        return {}
    simple = {"device", "dtype", "memory_format"}
    expected = simple | {"factory_kwargs"}
    if not kwargs.keys() <= expected:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
