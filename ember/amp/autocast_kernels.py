"""Autocast's kernels and thread-local state (mirrors ``aten/src/ATen/autocast_mode.cpp`` / ``.h``).

Note [Autocast]
Autocast is a pair of dispatch keys, ``AutocastCPU`` and ``AutocastCUDA``, above the autograd keys (Note [Autocast
keys] in ember/aten/dispatcher.py says how they are switched on). Every operator falls through them except those on
the device's op lists below, whose kernel applies a *cast policy* to the arguments and calls the operator again with
autocast excluded:

- ``lower_precision_fp``: floating-point tensors of the device (not float64) are cast to the autocast dtype
  (bfloat16 on the CPU, float16 on CUDA by default): GEMMs, convolutions, attention;
- ``fp32``: they are cast to float32: losses, norms, reductions, linear algebra, FFTs on the lists;
- ``fp32_set_opt_dtype``: when the first argument is eligible, a ``dtype=None`` argument becomes float32
  (softmax, sum, cumsum on CUDA): the op reads the low-precision input and computes in float32;
- ``fp32_append_dtype``: ``norm`` overloads without a dtype compute in float32 (ember casts the input);
- ``promote``: all eligible tensors are cast to the widest of their types (``cat``, ``stack``, ``addcmul``).

Because the casts are ordinary ``_to_copy`` calls made above autograd, backward flows through them and the inputs an
op saves for backward are the low-precision copies. The cast of a float32 leaf that requires grad (a weight) to the
autocast dtype is cached until the outermost autocast region exits, so a weight used many times in one forward pass
is cast once.

ember writes ``F.conv1d`` / ``conv2d`` / ``conv3d`` / ``conv_transpose*`` in ``aten::convolution`` rather than as
operators of their own, so on the CPU ``convolution`` carries their ``lower_precision_fp`` entry.
"""
from __future__ import annotations

from typing import Any, Callable

import threading
import weakref

from ember._ops import FunctionSchema
from ember.aten.dispatcher import Dispatcher, tls
from ember.c10 import dtype as dt
from ember.c10.dispatch_key import AUTOCAST_MASK, DispatchKey

_KEY_OF_DEVICE = {"cpu": DispatchKey.AutocastCPU, "cuda": DispatchKey.AutocastCUDA}
# PyTorch's devices with an autocast key; ember runs two of them (the others have no backend here)
AUTOCAST_DEVICES = ("cpu", "cuda", "xpu", "mps", "hpu", "xla", "mtia", "maia", "ipu", "privateuseone")


class _State(threading.local):
    def __init__(self) -> None:
        self.dtype = {"cpu": dt.bfloat16, "cuda": dt.float16}
        self.cache_enabled = True
        self.nesting = 0


state = _State()
# (weakref to the float32 weight, its cast): one cache for the process, as PyTorch's (guarded by a lock)
_cached_casts: dict[int, tuple[Any, Any]] = {}
_cache_lock = threading.Lock()


def key_bit(device_type: str) -> int:
    return 1 << _KEY_OF_DEVICE[device_type]


def is_enabled(device_type: str) -> bool:
    return device_type in _KEY_OF_DEVICE and bool(tls.keys[1] & key_bit(device_type))


def set_enabled(device_type: str, enabled: bool) -> None:
    if device_type not in _KEY_OF_DEVICE:
        return
    inc, keep = tls.keys
    bit = key_bit(device_type)
    tls.keys = (inc, keep | bit if enabled else keep & ~bit)


def clear_cache() -> None:
    with _cache_lock:
        _cached_casts.clear()


def _eligible(t: Any, device_type: str) -> bool:
    d = t.dtype
    return d.is_floating_point and d is not dt.float64 and t._device.type == device_type


def cached_cast(to: Any, arg: Any, device_type: str) -> Any:
    """``arg`` cast to ``to`` when it is an eligible tensor of another dtype (a list: each element)."""
    if type(arg) is list or type(arg) is tuple:
        return [cached_cast(to, a, device_type) for a in arg]
    if not hasattr(arg, "_ks") or arg.dtype is to or not _eligible(arg, device_type):
        return arg
    if (to is state.dtype[device_type] and arg.dtype is dt.float32 and arg.requires_grad and arg.is_leaf
            and arg._base is None and state.cache_enabled):
        with _cache_lock:
            hit = _cached_casts.get(id(arg))
            if hit is not None and hit[0]() is arg:
                return hit[1]
            cast = _to(arg, to)
            _cached_casts[id(arg)] = (weakref.ref(arg), cast)
            return cast
    return _to(arg, to)


def _to(t: Any, to: Any) -> Any:
    from ember._generated import aten
    return aten._to_copy(t, dtype=to)


def _promote_type(device_type: str, args: tuple[Any, ...]) -> Any:
    """The widest floating type among the eligible tensors, starting from the autocast dtype
    (``at::autocast::prioritize``): float32 wins over it, float64 tensors are left out."""
    lower = current = state.dtype[device_type]
    for a in args:
        for t in (a if type(a) is list or type(a) is tuple else (a,)):
            if not hasattr(t, "_ks") or not (t.dtype.is_floating_point and t._device.type == device_type):
                continue
            if t.dtype is dt.float64:
                continue
            if current is dt.float32 or t.dtype is dt.float32:
                current = dt.float32
            elif current is lower and t.dtype is lower:
                current = lower
            else:
                raise RuntimeError("Unexpected floating ScalarType in at::autocast::prioritize")
    return current


def _excluded(run: Callable[[], Any]) -> Any:
    prev = inc, keep = tls.keys
    tls.keys = (inc, keep & ~AUTOCAST_MASK)
    try:
        return run()
    finally:
        tls.keys = prev


def _make_kernel(op: Any, policy: str, device_type: str) -> Any:
    schema = FunctionSchema(op.schema)
    tensor_pos = [i for i, a in enumerate(schema.arguments) if a.type.startswith("Tensor")]
    dtype_pos = next((i for i, a in enumerate(schema.arguments) if a.name == "dtype"), None)

    def cast_all(to: Any, args: tuple[Any, ...]) -> list[Any]:
        new = list(args)
        for i in tensor_pos:
            if new[i] is not None:
                new[i] = cached_cast(to, new[i], device_type)
        return new

    def first_eligible(args: tuple[Any, ...]) -> bool:
        first = args[tensor_pos[0]] if tensor_pos else None
        return hasattr(first, "_ks") and _eligible(first, device_type)

    if policy == "lower_precision_fp":
        def kernel(ks: int, *args: Any) -> Any:
            return _excluded(lambda: op.call(ks, *cast_all(state.dtype[device_type], args)))
    elif policy in ("fp32", "fp32_append_dtype"):
        def kernel(ks: int, *args: Any) -> Any:
            if policy == "fp32_append_dtype" and not first_eligible(args):
                return _excluded(lambda: op.call(ks, *args))
            return _excluded(lambda: op.call(ks, *cast_all(dt.float32, args)))
    elif policy == "fp32_set_opt_dtype":
        assert dtype_pos is not None, op.schema

        def kernel(ks: int, *args: Any) -> Any:
            new = list(args)
            if first_eligible(args) and new[dtype_pos] is None:
                new[dtype_pos] = dt.float32
            return _excluded(lambda: op.call(ks, *new))
    elif policy == "promote":
        def kernel(ks: int, *args: Any) -> Any:
            return _excluded(lambda: op.call(ks, *cast_all(_promote_type(device_type, args), args)))
    elif policy == "fp32_then_lower":
        def kernel(ks: int, *args: Any) -> Any:
            out = _excluded(lambda: op.call(ks, *cast_all(dt.float32, args)))
            return cached_cast(state.dtype[device_type], out, device_type) if first_eligible(args) else out
    elif policy == "matrix_power":
        def kernel(ks: int, *args: Any) -> Any:
            a, n = args
            if n < 0:                 # PyTorch inverts first, in float32 (linalg_inv is on the fp32 list)
                from ember._generated import aten
                a, n = _excluded(lambda: aten.linalg_inv(cached_cast(dt.float32, a, device_type))), -n
            if n <= 1:                # I, A or inv(A): no product, no cast
                return _excluded(lambda: op.call(ks, a, n))
            return _excluded(lambda: op.call(ks, cached_cast(state.dtype[device_type], a, device_type), n))
    elif policy == "rnn":
        return _make_rnn_kernel(op, device_type)
    elif policy == "banned":
        def kernel(ks: int, *args: Any) -> Any:
            raise RuntimeError(
                "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
                "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
                "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
                "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
                "safe to autocast.")
    else:
        raise ValueError(policy)
    kernel.__qualname__ = f"autocast_{device_type}_{policy}[{op.qualified_name}]"
    return kernel


def _onednn_lstm(device_type: str, low: Any) -> bool:
    """Whether PyTorch would run an LSTM layer under CPU autocast through oneDNN (``use_mkldnn`` in its RNN.cpp:
    oneDNN enabled, and the CPU computing in ``low`` there; for float16 only without grad mode)."""
    from ember.aten.context import global_context
    from ember.c10.cpu_capability import onednn_supports
    from ember.autograd.grad_mode import state as grad_state
    if device_type != "cpu" or not global_context.user_enabled_mkldnn or not onednn_supports(low.name):
        return False
    return low.name == "bfloat16" or not grad_state.enabled


def _make_rnn_kernel(op: Any, device_type: str) -> Any:
    """``_rnn_layer`` (one layer of ember's fused RNN / GRU / LSTM) with the dtypes of PyTorch's native cells, which
    are written in ``linear`` (low precision) and elementwise ops: an RNN's state passes only through ``linear``, so
    everything is low precision; a GRU's / LSTM's state also enters elementwise updates, so it keeps its dtype
    (an LSTM projection, a ``linear``, makes the output and h low precision again). The inputs and weights are
    rounded to the low precision, as the cells' ``linear`` rounds them."""
    def kernel(ks: int, x: Any, batch_sizes: Any, h0: Any, c0: Any, *rest: Any) -> Any:
        low = state.dtype[device_type]
        mode = rest[5]
        if not _eligible(x, device_type):
            return _excluded(lambda: op.call(ks, x, batch_sizes, h0, c0, *rest))
        if mode.startswith("RNN"):
            new = [cached_cast(low, a, device_type) if a is not None and hasattr(a, "_ks") else a
                   for a in (x, h0, c0) + rest]
            return _excluded(lambda: op.call(ks, new[0], batch_sizes, *new[1:]))
        if mode == "LSTM" and rest[4] is None and _onednn_lstm(device_type, low):
            # PyTorch's CPU LSTM takes oneDNN's kernel here, which autocast runs wholly in low precision
            new = [cached_cast(low, a, device_type) if a is not None and hasattr(a, "_ks") else a
                   for a in (x, h0, c0) + rest]
            return _excluded(lambda: op.call(ks, new[0], batch_sizes, *new[1:]))
        keep = h0.dtype if _eligible(h0, device_type) else dt.float32

        def rounded(a: Any) -> Any:
            return a if a is None or not hasattr(a, "_ks") else \
                cached_cast(keep, cached_cast(low, a, device_type), device_type)

        def run() -> Any:
            w = [rounded(a) for a in rest[:5]]
            out, hn, cn, ws = op.call(ks, rounded(x), batch_sizes, cached_cast(keep, h0, device_type),
                                      cached_cast(keep, c0, device_type), *w, *rest[5:])
            if rest[4] is not None:           # an LSTM projection: h = linear(h, w_hr) is low precision
                out, hn = cached_cast(low, out, device_type), cached_cast(low, hn, device_type)
            return out, hn, cn, ws
        return _excluded(run)

    kernel.__qualname__ = f"autocast_{device_type}_rnn[{op.qualified_name}]"
    return kernel


# -- the op lists (PyTorch's, as ``overload`` names; ops ember lacks are left out when registering)
_CPU_LOWER = """convolution conv1d conv1d.padding conv2d conv2d.padding conv3d conv3d.padding bmm mm linalg_vecdot
    baddbmm addmm _addmm_activation addbmm linear _convolution.deprecated matmul conv_tbc mkldnn_rnn_layer
    conv_transpose1d conv_transpose2d.input conv_transpose3d.input prelu scaled_dot_product_attention
    _native_multi_head_attention"""
_CPU_FP32 = """avg_pool3d binary_cross_entropy grid_sampler polar prod prod.dim_int prod.dim_Dimname quantile
    quantile.scalar nanquantile nanquantile.scalar stft stft.center cdist grid_sampler_2d
    _grid_sampler_2d_cpu_fallback grid_sampler_3d trace view_as_complex cholesky cholesky_inverse cholesky_solve
    inverse lu_solve orgqr ormqr pinverse max_pool3d max_unpool2d max_unpool3d adaptive_avg_pool3d
    reflection_pad1d reflection_pad2d replication_pad1d replication_pad2d replication_pad3d mse_loss
    cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss poisson_nll_loss smooth_l1_loss
    cross_entropy_loss l1_loss huber_loss margin_ranking_loss soft_margin_loss triplet_margin_loss
    multi_margin_loss ctc_loss.IntList ctc_loss.Tensor kl_div multilabel_margin_loss
    binary_cross_entropy_with_logits fft_fft fft_ifft fft_fft2 fft_ifft2 fft_fftn fft_ifftn fft_rfft fft_irfft
    fft_rfft2 fft_irfft2 fft_rfftn fft_irfftn fft_hfft fft_ihfft linalg_cond linalg_cond.p_str linalg_matrix_rank
    linalg_matrix_rank.tol_tensor linalg_matrix_rank.atol_rtol_tensor linalg_matrix_rank.atol_rtol_float
    linalg_solve linalg_cholesky linalg_svdvals linalg_eigvals linalg_eigvalsh linalg_inv
    linalg_householder_product linalg_tensorinv linalg_tensorsolve fake_quantize_per_tensor_affine geqrf
    _lu_with_info qr svd triangular_solve fractional_max_pool2d fractional_max_pool3d adaptive_max_pool3d
    multilabel_margin_loss_forward linalg_qr linalg_cholesky_ex linalg_svd linalg_eig linalg_eigh linalg_lstsq
    linalg_inv_ex"""
_CPU_PROMOTE = "stack cat index_copy index_copy.dimname"

_CUDA_LOWER = """_convolution.deprecated _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d
    conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr matmul einsum mm mv
    linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot _thnn_fused_lstm_cell
    _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell _scaled_dot_product_flash_attention
    scaled_dot_product_attention cudnn_convolution cudnn_convolution_transpose"""
_CUDA_FP32 = """acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan pow.Tensor_Scalar
    pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm group_norm frobenius_norm.dim nuclear_norm
    nuclear_norm.dim cosine_similarity poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d
    hinge_embedding_loss kl_div l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss
    multilabel_margin_loss soft_margin_loss triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits
    dist pdist cdist renorm logsumexp upsample_nearest1d _upsample_nearest_exact1d upsample_nearest2d
    _upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d upsample_linear1d upsample_bilinear2d
    _upsample_bilinear2d_aa upsample_trilinear3d upsample_bicubic2d _upsample_bicubic2d_aa"""
_CUDA_SET_OPT_DTYPE = """prod prod.dim_int prod.dim_Dimname softmax.int softmax.Dimname log_softmax.int
    log_softmax.Dimname cumprod cumprod.dimname cumsum cumsum.dimname linalg_vector_norm linalg_matrix_norm
    linalg_matrix_norm.str_ord sum sum.dim_IntList sum.dim_DimnameList"""
_CUDA_APPEND_DTYPE = "norm.Scalar norm.ScalarOpt_dim norm.names_ScalarOpt_dim"
_CUDA_PROMOTE = "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add"

# Ops whose dtype under autocast follows from how PyTorch writes them: composites there (their inner GEMMs are
# autocast) that are kernels in ember.
_AS_PYTORCH_WRITES_THEM = [("tensordot", "lower_precision_fp"),
                           ("affine_grid_generator", "lower_precision_fp"), ("linalg_matrix_power", "matrix_power"),
                           ("linalg_pinv.atol_rtol_tensor", "fp32_then_lower"), ("_rnn_layer", "rnn")]

POLICIES: dict[str, list[tuple[str, str]]] = {
    "cpu": [(n, p) for p, names in (("lower_precision_fp", _CPU_LOWER), ("fp32", _CPU_FP32),
                                    ("promote", _CPU_PROMOTE)) for n in names.split()] + _AS_PYTORCH_WRITES_THEM,
    "cuda": [(n, p) for p, names in (("lower_precision_fp", _CUDA_LOWER), ("fp32", _CUDA_FP32),
                                     ("fp32_set_opt_dtype", _CUDA_SET_OPT_DTYPE),
                                     ("fp32_append_dtype", _CUDA_APPEND_DTYPE), ("promote", _CUDA_PROMOTE),
                                     ("banned", "binary_cross_entropy")) for n in names.split()]
    + [e for e in _AS_PYTORCH_WRITES_THEM if e[0] != "tensordot"],
}


def register() -> None:
    for device_type, table in POLICIES.items():
        key = _KEY_OF_DEVICE[device_type]
        for name, policy in table:
            op = Dispatcher.ops.get("aten::" + name)
            if op is not None:
                op.register(key, _make_kernel(op, policy, device_type))
