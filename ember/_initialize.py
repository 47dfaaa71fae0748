"""Wiring the layers together once they are loaded.

Note [Initialization]
Importing a module of ember registers no kernel, fallback or Tensor method: a module defines its operators,
kernels, fallbacks and methods, and exposes the function that registers them. ``import ember`` loads the package,
then calls ``initialize()`` once, which registers, in this order:

1. the operator library's kernels: the generated table of backend kernels (CPU and CUDA wrappers, the facts the
   Meta fallback derives Meta kernels from) and composite kernels (``ember/_generated/registrations.py``, Note
   [Backend kernels] in ember/aten/backends.py), then the QuantizedCPU layout kernels, which reuse the CPU ones;
2. the boxed fallbacks of the keys above the backends, from the bottom up: Meta (Note [The Meta fallback]), the
   Conjugate and Negative keys with their fall-through operators (Note [Math bits]), Python (``__torch_dispatch__``);
3. autograd: the generated Autograd kernels and fall-throughs (``ember/_generated/autograd.py``), then the
   Autograd keys' fallback for operators without a kernel (library operators);
4. the Autocast keys' kernels, which wrap the operators registered above;
5. the methods of ``Tensor``: its Python-written methods wrapped for ``__torch_function__``, the generated
   bindings of the rest (``Tensor.add``), and the shape queries' wrappers, installed when the protocol first turns
   on (Note [Wrappers installed on first use] in ember/_tensor.py).

A step registers over what a previous one did only where the order says so (math bits' fall-throughs and kernels
are set on operators the table registered; Autocast looks operators up in the dispatcher). ``initialize`` runs once;
a second call does nothing.
"""
from __future__ import annotations

_done = [False]


def initialize() -> None:
    if _done[0]:
        return
    _done[0] = True
    from ember._generated import autograd as autograd_kernels
    from ember._generated import registrations
    from ember.aten import math_bits, meta
    from ember.aten.quantized.ops import register_layout_kernels
    from ember.aten.sparse import register_kernels as register_sparse_kernels
    from ember import _python_key, _tensor
    from ember.amp import autocast_kernels
    from ember.autograd import fallback

    registrations.register()            # 1
    register_layout_kernels()
    register_sparse_kernels()
    meta.install()                      # 2
    math_bits.install()
    _python_key.install()
    autograd_kernels.register()         # 3
    fallback.install()
    autocast_kernels.register()         # 4
    _tensor.install_methods()           # 5
