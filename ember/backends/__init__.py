"""``ember.backends``: switches PyTorch programs set (``cudnn.benchmark``, ``cuda.matmul.allow_tf32``)."""
from types import SimpleNamespace

from ember import _cpu_capability



class _CudnnModule:
    """``torch.backends.cudnn``.  ``benchmark = True`` makes every convolution time its algorithms once per
    shape key and keep the fastest (``ember/aten/kernels/conv_algos.py``), on every backend."""

    deterministic = False
    enabled = True
    allow_tf32 = True

    @property
    def benchmark(self):
        from ember.aten.kernels import conv_algos
        return conv_algos.benchmark

    @benchmark.setter
    def benchmark(self, value):
        from ember.aten.kernels import conv_algos
        conv_algos.benchmark = bool(value)

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def version():
        return None


cudnn = _CudnnModule()
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=lambda: False)
cpu = SimpleNamespace(get_cpu_capability=_cpu_capability.get_cpu_capability)
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
