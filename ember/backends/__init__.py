"""``ember.backends``: switches PyTorch programs set (``cudnn.benchmark``, ``cuda.matmul.allow_tf32``), and what a
CPU build of PyTorch reports about its backends (``mkldnn.is_available()``, ``mps.is_available()``, ...)."""
import contextlib
import importlib.util
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

    @contextlib.contextmanager
    def flags(self, enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
        """Set the switches for a block (``torch.backends.cudnn.flags``); the previous values come back after."""
        saved = (self.enabled, self.benchmark, self.deterministic, self.allow_tf32)
        self.enabled, self.benchmark, self.deterministic, self.allow_tf32 = enabled, benchmark, deterministic, \
            allow_tf32
        try:
            yield
        finally:
            self.enabled, self.benchmark, self.deterministic, self.allow_tf32 = saved


class _MkldnnModule:
    """``torch.backends.mkldnn``: a CPU build of PyTorch has oneDNN and reports it available and enabled. ember's
    CPU kernels are its own, but where PyTorch's oneDNN path gives a result of another dtype (an LSTM under
    autocast), ember follows ``enabled`` as PyTorch does."""

    @staticmethod
    def is_available():
        return True

    @property
    def enabled(self):
        return global_context.user_enabled_mkldnn

    @enabled.setter
    def enabled(self, value):
        global_context.user_enabled_mkldnn = bool(value)

    deterministic = False
    allow_tf32 = False

    @contextlib.contextmanager
    def flags(self, enabled=False, deterministic=False):
        saved = self.enabled, self.deterministic
        self.enabled, self.deterministic = enabled, deterministic
        try:
            yield
        finally:
            self.enabled, self.deterministic = saved

    @contextlib.contextmanager
    def verbose(self, level):
        """oneDNN's verbose log: ember runs no oneDNN primitives, so there is nothing to log."""
        yield


class _QuantizedModule:
    """``torch.backends.quantized``: the quantized engine (``x86`` on x86 CPUs, as PyTorch picks)."""

    supported_engines = ["qnnpack", "none", "onednn", "x86", "fbgemm"]

    def __init__(self):
        self._engine = "x86"

    @property
    def engine(self):
        return self._engine

    @engine.setter
    def engine(self, value):
        if value not in self.supported_engines:
            raise RuntimeError("quantized engine NoQEngine is not supported" if value == "none" else
                               f"quantized engine {str(value).upper()} is not supported")
        self._engine = value


class _FlagsModule:
    """A backend with an ``enabled`` switch and ``set_flags`` / ``flags`` (nnpack)."""

    def __init__(self, available):
        self._available = available
        self.enabled = available

    def is_available(self):
        return self._available

    def set_flags(self, _enabled):
        previous = (self.enabled,)
        self.enabled = bool(_enabled)
        return previous

    @contextlib.contextmanager
    def flags(self, enabled=False):
        previous = self.set_flags(enabled)
        try:
            yield
        finally:
            self.set_flags(*previous)


class _OptEinsumModule:
    """``torch.backends.opt_einsum``: PyTorch's switch for searching ``einsum``'s contraction order with the
    opt_einsum package. ember's ``einsum`` always lets NumPy search the order (``optimize=True``); the switch is
    reported as PyTorch reports it."""

    def __init__(self):
        self.enabled = True
        self.strategy = "auto" if self.is_available() else None

    @staticmethod
    def is_available():
        return importlib.util.find_spec("opt_einsum") is not None

    @staticmethod
    def get_opt_einsum():
        import opt_einsum
        return opt_einsum


cudnn = _CudnnModule()
mkldnn = _MkldnnModule()
quantized = _QuantizedModule()
nnpack = _FlagsModule(True)
opt_einsum = _OptEinsumModule()
openmp = SimpleNamespace(is_available=lambda: True)
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False), is_built=lambda: False)
cpu = SimpleNamespace(get_cpu_capability=_cpu_capability.get_cpu_capability)
mps = SimpleNamespace(is_available=lambda: False, is_built=lambda: False,
                      is_macos_or_newer=lambda major, minor: False, is_macos13_or_newer=lambda minor=0: False)
