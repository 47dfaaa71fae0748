"""``ember.backends``: switches PyTorch programs set (``cudnn.benchmark``, ``cuda.matmul.allow_tf32``)."""
from types import SimpleNamespace

cudnn = SimpleNamespace(benchmark=False, deterministic=False, enabled=True, allow_tf32=True,
                        is_available=lambda: False)
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=lambda: False)
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
