"""What ``import ember`` does before anything else: choose OpenBLAS's kernels for this CPU, then load NumPy
(``ember/_cpu_capability.py``), and tune malloc for reuse of large temporaries (``ember/c10/cpu_allocator.py``).
Imported first by ``ember/__init__.py``."""
from ember import _cpu_capability
from ember.c10 import cpu_allocator

_cpu_capability.load_numpy()
cpu_allocator.configure()
