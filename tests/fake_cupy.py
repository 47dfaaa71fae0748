"""A NumPy-backed stand-in for CuPy, for the tests only: with it installed as ``cupy`` (``install``), ember's
CUDA code paths run on a machine without a GPU.

Its arrays (``ndarray``) live on a pretend device and behave as CuPy's do where the device matters: NumPy
never converts them implicitly (``np.asarray(a)`` raises, as for a CuPy array), a host (NumPy) array passed to a
device function raises ``TypeError``, ``.get()`` copies to the host, ``cupy.asarray`` copies to the device, and
``a.data + offset`` / ``cupy.ndarray(shape, dtype, memptr, strides)`` make views. What runs inside is NumPy, so
numbers are CPU numbers: the stand-in tests the device plumbing (placement, array-module selection, copies,
mixed-device errors), not GPU kernels."""
from __future__ import annotations

import contextlib
import sys
import types

import numpy as np

_HOST_OK = {"asarray", "array", "ascontiguousarray", "asanyarray"}  # explicit host -> device copies


class _MemPtr:
    """``a.data``: a pointer into the root allocation (CuPy's ``MemoryPointer``)."""

    __slots__ = ("root", "offset")

    def __init__(self, root, offset):
        self.root, self.offset = root, offset

    def __add__(self, n):
        return _MemPtr(self.root, self.offset + int(n))

    @property
    def ptr(self) -> int:
        return self.root.__array_interface__["data"][0] + self.offset


class _View:
    """Memory described by address (the array interface), keeping the root allocation alive: a view of any
    root, even one NumPy made by striding (whose ``base`` chain ends before a contiguous buffer)."""

    def __init__(self, memptr, shape, dtype, strides):
        self.root = memptr.root
        self.__array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str, "version": 3,
                                    "data": (memptr.ptr, False),
                                    "strides": None if strides is None else tuple(strides)}


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def _host_error(x):
    return TypeError(f"Unsupported type {type(x)}")


def _unwrap(x, host_ok=False):
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, np.ndarray) and not host_ok:
        raise _host_error(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_unwrap(y, host_ok) for y in x)
    if isinstance(x, dict):
        return {k: _unwrap(v, host_ok) for k, v in x.items()}
    return x


def _wrap(x):
    if isinstance(x, np.ndarray):
        return ndarray._of(x)
    if isinstance(x, np.generic):  # CuPy's reductions give 0-d arrays, never host scalars
        return ndarray._of(np.asarray(x))
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_wrap(y) for y in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_wrap(y) for y in x)
    return x


def _device_call(fn, name=""):
    host_ok = name in _HOST_OK
    refused = _NO_KEYWORDS.get(name, set())

    def call(*args, **kwargs):
        for k in refused & kwargs.keys():
            raise TypeError(f"{name}() got an unexpected keyword argument '{k}'")
        return _wrap(fn(*_unwrap(args, host_ok), **_unwrap(kwargs, host_ok)))
    call.__name__ = name or getattr(fn, "__name__", "call")
    return call


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, c, f, own):
        object.__setattr__(self, "c_contiguous", c)
        object.__setattr__(self, "f_contiguous", f)
        object.__setattr__(self, "owndata", own)

    def __setattr__(self, name, value):
        raise AttributeError(f"'Flags' object has no attribute '{name}'")

    def __getitem__(self, key):
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous, "OWNDATA": self.owndata}[key]


class ndarray:
    """A device array: a NumPy array that NumPy will not take for a host array."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100
    __hash__ = None

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        if memptr is None:
            self._a = np.empty(shape, dtype, order=order)
        else:
            self._a = np.asarray(_View(memptr, shape, dtype, strides))

    @classmethod
    def _of(cls, a):
        obj = object.__new__(cls)
        obj._a = a
        return obj

    # -- what makes it a device array ------------------------------------------------------------------
    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
                        "NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        out = kwargs.get("out")
        res = getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs))
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(res)

    def __array_function__(self, func, types_, args, kwargs):
        return _wrap(func(*_unwrap(args), **_unwrap(kwargs)))

    def get(self, stream=None, order="C", out=None):
        return np.array(self._a, order=order)

    @property
    def data(self):
        root = _root(self._a)
        return _MemPtr(root, self._a.__array_interface__["data"][0] - root.__array_interface__["data"][0])

    @property
    def base(self):
        return None if self._a.base is None else _wrap(self._a.base)

    @property
    def device(self):
        return cuda.Device(0)

    @property
    def flags(self):
        """CuPy's flags: the layout only (no ``writeable``, ``aligned``, ...: device arrays are always writable)."""
        f = self._a.flags
        return _Flags(f.c_contiguous, f.f_contiguous, f.owndata)

    # -- everything else is NumPy's, on device arrays ------------------------------------------------------
    def __getattr__(self, name):
        if name.startswith("__"):  # no __array_interface__ / buffer: NumPy must not read device memory
            raise AttributeError(name)
        attr = getattr(self._a, name)
        if callable(attr):
            return _device_call(attr, name)
        return _wrap(attr)

    def __setattr__(self, name, value):
        if name == "_a":
            object.__setattr__(self, name, value)
        else:  # ``a.real = b``, as CuPy allows
            setattr(self._a, name, _unwrap(value))

    def __getitem__(self, idx):
        return _wrap(self._a[_unwrap(idx, host_ok=True)])

    def __setitem__(self, idx, value):
        self._a[_unwrap(idx, host_ok=True)] = _unwrap(value)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(x) for x in self._a)

    def __repr__(self):
        return "array(" + repr(self._a)[6:] if repr(self._a).startswith("array(") else repr(self._a)

    def __bool__(self):
        return bool(self._a)

    def __float__(self):
        return float(self._a)

    def __int__(self):
        return int(self._a)

    def __index__(self):
        return self._a.__index__()

    def __complex__(self):
        return complex(self._a)


def _dunder(name):
    def method(self, *args):
        return _wrap(getattr(self._a, name)(*_unwrap(args)))
    method.__name__ = name
    return method


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "rfloordiv", "mod",
              "rmod", "pow", "rpow", "matmul", "rmatmul", "and", "rand", "or", "ror", "xor", "rxor", "lshift",
              "rshift", "lt", "le", "gt", "ge", "eq", "ne", "neg", "pos", "abs", "invert", "iadd", "isub", "imul",
              "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor", "divmod"):
    setattr(ndarray, f"__{_name}__", _dunder(f"__{_name}__"))


# What CuPy 14 lacks of NumPy's API, as a GPU run found it (2026-11-29, CuPy 14.2 on an H200) and its documentation
# says: ``ufunc.at`` only for these ufuncs, ``ufunc.reduce`` only for these, and keyword arguments its functions
# do not take. The stand-in refuses them as CuPy does, so the CPU-only tests catch their use.
_AT = {"add", "maximum", "minimum"}
_REDUCE = {"add", "multiply", "maximum", "minimum"}
_NO_KEYWORDS = {"indices": {"sparse"}, "lexsort": {"axis"}}


class _DeviceUfunc:
    """A ufunc on device arrays: calls and ``reduce`` / ``outer`` / ``at`` (for the ufuncs CuPy has them)."""

    def __init__(self, ufunc):
        self._u = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _device_call(self._u, self.__name__)(*args, **kwargs)

    def __getattr__(self, name):
        if name in ("at", "reduce", "accumulate", "reduceat") and \
                self.__name__ not in {"at": _AT, "reduce": _REDUCE}.get(name, ()):
            raise NotImplementedError(f"`cupy_{self.__name__}.{name}` is not supported yet")
        attr = getattr(self._u, name)
        return _device_call(attr, name) if callable(attr) else attr


class _DeviceModule(types.ModuleType):
    """A namespace whose functions run NumPy's on device arrays (``cupy.linalg``, ``cupy.fft``, ...)."""

    def __init__(self, name, numpy_module):
        super().__init__(name)
        self._np = numpy_module

    def __getattr__(self, name):
        attr = getattr(self._np, name)
        if isinstance(attr, type) or not callable(attr):
            return attr
        fn = _DeviceUfunc(attr) if isinstance(attr, np.ufunc) else _device_call(attr, name)
        setattr(self, name, fn)
        return fn


class _Device:
    def __init__(self, index=0):
        self.id = int(index)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass


class _Runtime:
    @staticmethod
    def getDeviceCount():
        return 1

    @staticmethod
    def getDevice():
        return 0

    @staticmethod
    def getDeviceProperties(i):
        return {"name": b"CuPy stand-in (NumPy)", "major": 0, "minor": 0, "totalGlobalMem": 1 << 30,
                "multiProcessorCount": 1}

    @staticmethod
    def memGetInfo():
        return 1 << 30, 1 << 30


class _MemoryPool:
    def free_all_blocks(self):
        pass

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0


class _Random(_DeviceModule):
    def seed(self, s=None):
        np.random.seed(None if s is None else int(s) % 2 ** 32)


cuda = types.SimpleNamespace(Device=_Device, runtime=_Runtime())


def _module():
    m = _DeviceModule("cupy", np)
    m.ndarray = ndarray
    m.cuda = cuda
    m.linalg = _DeviceModule("cupy.linalg", np.linalg)
    m.fft = _DeviceModule("cupy.fft", np.fft)
    m.lib = _DeviceModule("cupy.lib", np.lib)
    m.lib.stride_tricks = _DeviceModule("cupy.lib.stride_tricks", np.lib.stride_tricks)  # as_strided, ...
    m.random = _Random("cupy.random", np.random)
    m.get_default_memory_pool = _MemoryPool
    m.asnumpy = lambda a, stream=None: a.get() if isinstance(a, ndarray) else np.asarray(a)
    m.__file__ = __file__
    return m


@contextlib.contextmanager
def install():
    """``cupy`` is the stand-in inside the block (ember's CUDA paths import it lazily)."""
    import ember.cuda
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = _module()
    ember.cuda._cupy.cache_clear()
    try:
        yield sys.modules["cupy"]
    finally:
        if saved is None:
            sys.modules.pop("cupy", None)
        else:
            sys.modules["cupy"] = saved
        ember.cuda._cupy.cache_clear()
