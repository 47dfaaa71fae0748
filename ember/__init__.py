"""ember: PyTorch rebuilt in Python — the same public API on NumPy (CPU) and CuPy (GPU).

``import ember as torch`` gives tensors, the operator library (generated from
``ember/aten/native_functions.yaml``), dtypes, devices and random numbers that match PyTorch's.
"""
from __future__ import annotations

import builtins as _builtins
import importlib as _importlib

from ember import _startup  # noqa: F401 - first: picks OpenBLAS's kernels before NumPy loads, tunes malloc
from ember.c10 import dtype as _dtype_mod
from ember.c10.dtype import (bfloat16, cdouble, cfloat, complex64, complex128, double, dtype, finfo, float16,
                             float32, float64, get_default_dtype, half, iinfo, int8, int16, int32, int64, long,
                             short, uint8)
from ember.c10.dtype import (float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz,  # noqa: F401
                             float8_e8m0fnu, uint16, uint32, uint64)
from ember.c10.dtype import qint8, qint32, quint8  # noqa: F401
from ember.c10.qscheme import (per_channel_affine, per_channel_affine_float_qparams,  # noqa: F401
                               per_channel_symmetric, per_tensor_affine, per_tensor_symmetric, qscheme)
from ember.c10.dtype import bool_ as bool  # noqa: A001
from ember.c10.dtype import float32 as float  # noqa: A001
from ember.c10.dtype import int32 as int  # noqa: A001
from ember.c10.device import device
from ember.c10.generator import Generator, default_generator
from ember.c10.dispatch_key import DispatchKey, DispatchKeySet
from ember.c10.size import Size
from ember.c10.storage import UntypedStorage
from ember._tensor import Tensor
from ember._tensor_types import *  # noqa: F401,F403 - FloatTensor, LongTensor, ...
from ember import return_types
from ember._ops import ops
from ember._creation import as_tensor, asarray, from_dlpack, from_numpy, frombuffer, tensor
from ember._generated.functions import *  # noqa: F401,F403
from ember._generated import aten as _aten_ops
from ember.random import get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from ember._functional import *  # noqa: F401,F403
from ember._functional import _assert  # noqa: F401
from ember._removed_linalg import eig, lstsq, matrix_rank, solve, symeig  # noqa: F401
from ember._tensor_str import set_printoptions
from ember.aten.parallel import get_num_interop_threads, get_num_threads, set_num_interop_threads, set_num_threads
from ember.aten.parallel import quiet_blas_workers as _quiet_blas_workers
from ember import cuda, linalg, special, fft, nn  # noqa: F401
from ember import backends, overrides, _C  # noqa: F401
from ember.aten.torch_function import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: F401
from ember import _indexing
from ember import autograd
from ember._settings import *  # noqa: F401,F403
from ember.autograd.grad_mode import (enable_grad, inference_mode, is_grad_enabled,
                                      is_inference_mode_enabled, no_grad, set_grad_enabled)
from ember import optim, utils  # noqa: F401 - the frontend needs the grad modes above
from ember import serialization
from ember import distributions, testing  # noqa: F401
from ember import accelerator, compiler, distributed, futures, fx, jit, library, version, _dynamo  # noqa: F401
from ember.utils.dlpack import to_dlpack  # noqa: F401
from ember._torch_shim import install_as_torch  # noqa: F401
from ember import func  # noqa: F401
from ember.func import vmap  # noqa: F401
from ember.serialization import load, save  # noqa: F401
from ember import amp  # noqa: F401
from ember import ao, quantization  # noqa: F401
from ember import onnx, profiler  # noqa: F401
import ember.nn.quantized  # noqa: F401
import ember.nn.intrinsic  # noqa: F401
import ember.nn.qat  # noqa: F401
from ember.amp import GradScaler, autocast  # noqa: F401
from ember.amp.autocast_mode import (autocast_decrement_nesting, autocast_increment_nesting,  # noqa: F401
                                     clear_autocast_cache, get_autocast_cpu_dtype, get_autocast_dtype,
                                     get_autocast_gpu_dtype, is_autocast_cache_enabled, is_autocast_cpu_enabled,
                                     is_autocast_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype,
                                     set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled,
                                     set_autocast_gpu_dtype)
import ember.cpu.amp  # noqa: F401
import ember.cuda.amp  # noqa: F401

__version__ = "0.1.0"


from ember.c10.memory_format import (channels_last, channels_last_3d, contiguous_format,  # noqa: F401
                                     layout, legacy_contiguous_format, memory_format, preserve_format, strided,
                                     sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr)
from ember import sparse  # noqa: F401
from ember.sparse import (sparse_bsc_tensor, sparse_bsr_tensor, sparse_compressed_tensor,  # noqa: F401
                          sparse_coo_tensor, sparse_csc_tensor, sparse_csr_tensor)
from ember import storage
from ember.storage import TypedStorage  # noqa: F401
from ember.c10.storage import StorageBase  # noqa: F401
from ember._misc import *  # noqa: F401,F403
from ember._lowrank import pca_lowrank, svd_lowrank  # noqa: F401
from ember._lobpcg import lobpcg  # noqa: F401
from ember.random import thread_safe_generator  # noqa: F401
from ember import cpu, functional, multiprocessing, quasirandom, signal, types, torch_version  # noqa: F401
from ember.signal import windows  # noqa: F401

# functions of torch.* that are nn.functional's (the same builtins in PyTorch: ``torch.conv2d is F.conv2d``)
from ember.nn.functional import (bilinear, conv1d, conv2d, conv3d, conv_transpose1d, conv_transpose2d,
                                 conv_transpose3d, max_pool1d_with_indices, pdist)
from ember._initialize import initialize as _initialize


def __getattr__(name):
    # ``torch.export`` without its import cost for programs that never export
    if name == "export":
        return _importlib.import_module("ember.export")
    if name in ("cond", "while_loop"):
        return getattr(_importlib.import_module("ember._higher_order_ops"), name)
    raise AttributeError(f"module 'ember' has no attribute '{name}'")


def __dir__():
    return sorted(set(globals()) | {"export", "cond", "while_loop"})


def set_default_dtype(d) -> None:
    """Set the dtype of floating-point factories and of Python floats (float32 by default)."""
    _dtype_mod.set_default_dtype(d)


def promote_types(type1, type2):
    """The dtype both promote to: the operator ``aten::promote_types`` (a dispatch mode sees it, as PyTorch's)."""
    _check_dtype_args("promote_types", ("type1", type1), ("type2", type2))
    return _aten_ops.promote_types(type1, type2)


def can_cast(from_, to) -> _builtins.bool:
    """Whether type promotion may cast ``from_`` to ``to``: the operator ``aten::can_cast``."""
    _check_dtype_args("can_cast", ("from_", from_), ("to", to))
    return _aten_ops.can_cast(from_, to)


def _check_dtype_args(fn, *named):
    for i, (name, value) in enumerate(named):
        if not isinstance(value, dtype):
            raise TypeError(f"{fn}(): argument '{name}' (position {i + 1}) must be torch.dtype, not "
                            f"{type(value).__name__}")


def result_type(tensor1, tensor2):
    """The dtype of an elementwise op on these operands (tensors or Python numbers)."""
    ops_ = [t._data if isinstance(t, Tensor) else t for t in (tensor1, tensor2)]
    return _dtype_mod.result_type_of(ops_)


def is_tensor(obj) -> _builtins.bool:
    return isinstance(obj, Tensor)


def is_floating_point(input) -> _builtins.bool:
    return input.is_floating_point()


def is_complex(input) -> _builtins.bool:
    return input.is_complex()


def numel(input) -> _builtins.int:
    return input.numel()


def get_default_device():
    """The device factories use by default, with its index as the tensors made there report it (``cuda:0``)."""
    from ember.c10 import _state
    d = _state.default_device
    if d.type == "cuda" and d.index is None:
        return device("cuda", cuda.current_device())
    return d


def set_default_device(d) -> None:
    from ember.c10 import _state
    from ember.c10.device import canonical
    _state.default_device = canonical("cpu" if d is None else d)


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """Capture ``model`` (a function or module) as graphs run by ``backend`` (``ember/_dynamo``, Note [Capture])."""
    from ember._dynamo.eval_frame import compile as _compile
    return _compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                    disable=disable)


# the legacy storage classes (``torch.FloatStorage``, ...)
for _cls in storage._LEGACY_CLASSES.values():
    globals()[_cls.__name__] = _cls
Storage = storage._LEGACY_CLASSES["float32"]  # PyTorch binds torch.Storage to the default type's class at import


def _pool(nd):
    from ember.nn import functional as F

    def pool(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):  # noqa: A002
        return F._max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, False, nd)
    pool.__name__ = pool.__qualname__ = f"max_pool{nd}d"
    from ember.aten.torch_function import overridable
    return overridable(pool, as_given=True)      # a builtin in PyTorch: a mode sees the call as made


max_pool1d, max_pool2d, max_pool3d = _pool(1), _pool(2), _pool(3)


_initialize()   # registers every kernel, fallback and Tensor method, in the order Note [Initialization] states
_quiet_blas_workers()   # an OpenBLAS loaded before ember (NumPy imported first): its idle workers spin briefly too
