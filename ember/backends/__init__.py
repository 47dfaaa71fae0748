"""``ember.backends``: switches PyTorch programs set (``cudnn.benchmark``, ``cuda.matmul.allow_tf32``)."""
from types import SimpleNamespace

from ember import _cpu_capability
from ember.aten.context import global_context



class _CudnnModule:
    """``torch.backends.cudnn``.  ``benchmark = True`` makes every convolution time its algorithms once per
    shape key and keep the fastest (``ember/aten/kernels/conv_algos.py``), on every backend."""

    enabled = True
    allow_tf32 = True

    @property
    def benchmark(self):
        return global_context.benchmark_cudnn

    @benchmark.setter
    def benchmark(self, value):
        global_context.benchmark_cudnn = bool(value)

    @property
    def deterministic(self):
        return global_context.deterministic_cudnn

    @deterministic.setter
    def deterministic(self, value):
        global_context.deterministic_cudnn = bool(value)

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
