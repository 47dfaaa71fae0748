"""Settings of the ``inductor`` backend (``torch._inductor.config``'s place)."""
from __future__ import annotations

# Note [Pointwise fusion]: chains of elementwise operators run as one generated numba loop (needs numba; the
# compiled kernels switch, ``EMBER_COMPILED_KERNELS=0``, turns it off too)
pointwise_fusion = True
# the most operators one fused loop takes (numba's compile time grows with the loop body)
max_fusion_size = 48
# ``mode="max-autotune"``: a compiled graph times the algorithms of its convolutions on their first call and keeps
# the fastest (as ``ember.backends.cudnn.benchmark = True`` does eagerly), in its forward and backward
max_autotune = False
