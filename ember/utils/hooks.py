"""Hook handles (mirrors ``torch/utils/hooks.py``)."""
from __future__ import annotations

import itertools
import weakref

from ember.c10 import compile_state as _cs


class RemovableHandle:
    """Returned by the ``register_*_hook`` methods; ``remove()`` unregisters the hook."""

    _next_id = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        _cs.state_changing("registering a hook", "A compiled region registered a hook, which its graph cannot replay.")
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._next_id)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in
                                    (extra_dict if isinstance(extra_dict, list) else [extra_dict] if extra_dict
                                     is not None else []))

    def remove(self):
        _cs.state_changing("removing a hook", "A compiled region removed a hook, which its graph cannot replay.")
        d = self.hooks_dict_ref()
        if d is not None and self.id in d:
            del d[self.id]
        for ref in self.extra_dict_ref:
            e = ref()
            if e is not None and self.id in e:
                del e[self.id]

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.remove()
