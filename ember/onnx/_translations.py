"""ATen operators to ONNX nodes (opset 17 and newer): ``TRANSLATIONS`` maps an operator's qualified name
(``aten::addmm``, or with its overload, ``aten::add.Tensor``) to a function ``(ctx, node, *args, **kwargs)`` that
adds the ONNX nodes computing it and returns their output name (a list for an operator with several outputs).
Arguments arrive with tensors replaced by ONNX value names and sizes that depend on dynamic axes by ``Dyn``
integers (``ctx.ints`` turns a size list into a tensor either way)."""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ember.onnx._graph import op_name
from ember.onnx.errors import OnnxExporterError

TRANSLATIONS: dict[str, Callable[..., Any]] = {}


def _register(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            TRANSLATIONS[n] = fn
        return fn
    return deco


def _np_dtype(node: Any) -> Any:
    val = node.meta.get("val")
    name = val.dtype.name if val is not None else "float32"
    return {"bfloat16": np.float32}.get(name, np.dtype(name) if name != "bool" else np.bool_)


def _rank(node: Any, i: int = 0) -> int:
    arg = node.args[i]
    return int(arg.meta["val"].dim())


def _operand(ctx: Any, node: Any, v: Any) -> str:
    """A tensor operand, or a Python number as a constant of the node's dtype."""
    return v if isinstance(v, str) else ctx.const(np.asarray(v, dtype=_np_dtype(node)), hint="scalar")


def _unary(op: str) -> Callable[..., Any]:
    return lambda ctx, node, x, *rest, **kw: ctx.add(op, [x])


for _aten, _onnx in {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log",
                     "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs", "erf": "Erf", "reciprocal": "Reciprocal",
                     "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil"}.items():
    TRANSLATIONS[f"aten::{_aten}"] = _unary(_onnx)


@_register("aten::rsqrt")
def _rsqrt(ctx: Any, node: Any, x: str) -> str:
    return ctx.add("Reciprocal", [ctx.add("Sqrt", [x], name_hint="sqrt")])


@_register("aten::clone", "aten::alias", "aten::detach", "aten::lift_fresh_copy", "aten::contiguous",
           "aten::_assert_tensor_metadata")
def _identity(ctx: Any, node: Any, x: str, *rest: Any, **kw: Any) -> str:
    return ctx.add("Identity", [x])


@_register("aten::_to_copy")
def _to_copy(ctx: Any, node: Any, x: str, **kw: Any) -> str:
    from ember.onnx._graph import _onnx_type
    if kw.get("dtype") is None:
        return ctx.add("Identity", [x])
    return ctx.add("Cast", [x], to=_onnx_type(kw["dtype"]))


def _binary(op: str) -> Callable[..., Any]:
    def fn(ctx: Any, node: Any, a: Any, b: Any, *rest: Any, alpha: Any = 1, **kw: Any) -> str:
        if rest:
            alpha = rest[0]
        b_name = _operand(ctx, node, b)
        if alpha != 1:
            b_name = ctx.add("Mul", [b_name, _operand(ctx, node, alpha)], name_hint="scaled")
        return ctx.add(op, [_operand(ctx, node, a), b_name])
    return fn


for _aten, _onnx in {"add": "Add", "sub": "Sub"}.items():
    TRANSLATIONS[f"aten::{_aten}.Tensor"] = TRANSLATIONS[f"aten::{_aten}.Scalar"] = _binary(_onnx)


@_register("aten::rsub.Scalar", "aten::rsub.Tensor")
def _rsub(ctx: Any, node: Any, a: Any, b: Any, alpha: Any = 1) -> str:
    return _binary("Sub")(ctx, node, b, a) if alpha == 1 else \
        ctx.add("Sub", [_operand(ctx, node, b), ctx.add("Mul", [_operand(ctx, node, a),
                                                                _operand(ctx, node, alpha)])])


@_register("aten::mul.Tensor", "aten::mul.Scalar")
def _mul(ctx: Any, node: Any, a: Any, b: Any) -> str:
    return ctx.add("Mul", [_operand(ctx, node, a), _operand(ctx, node, b)])


@_register("aten::div.Tensor", "aten::div.Scalar")
def _div(ctx: Any, node: Any, a: Any, b: Any) -> str:
    return ctx.add("Div", [_operand(ctx, node, a), _operand(ctx, node, b)])


@_register("aten::pow.Tensor_Scalar", "aten::pow.Tensor_Tensor")
def _pow(ctx: Any, node: Any, a: Any, b: Any) -> str:
    return ctx.add("Pow", [_operand(ctx, node, a), _operand(ctx, node, b)])


@_register("aten::addmm")
def _addmm(ctx: Any, node: Any, bias: str, a: str, b: str, beta: Any = 1, alpha: Any = 1) -> str:
    """Gemm; a linear layer's ``addmm(b, x, t(w))`` reads ``w`` itself with ``transB`` (the weight keeps its
    name and layout, as in PyTorch's exports)."""
    src = node.args[2]
    trans_b = 0
    if getattr(src, "op", None) == "call_function" and op_name(src.target) == "aten::t" and \
            src.args[0].meta["val"].dim() == 2:
        b, trans_b = ctx.value_of(src.args[0]), 1
    return ctx.add("Gemm", [a, b, bias], alpha=float(alpha), beta=float(beta), transB=trans_b)


@_register("aten::mm", "aten::bmm", "aten::matmul")
def _matmul(ctx: Any, node: Any, a: str, b: str) -> str:
    return ctx.add("MatMul", [a, b])


@_register("aten::t", "aten::t_")
def _t(ctx: Any, node: Any, x: str) -> str:
    return ctx.add("Transpose", [x], perm=[1, 0]) if _rank(node) == 2 else ctx.add("Identity", [x])


@_register("aten::transpose.int", "aten::transpose_")
def _transpose(ctx: Any, node: Any, x: str, d0: int, d1: int) -> str:
    r = _rank(node)
    perm = list(range(r))
    perm[d0 % r], perm[d1 % r] = perm[d1 % r], perm[d0 % r]
    return ctx.add("Transpose", [x], perm=perm)


@_register("aten::permute")
def _permute(ctx: Any, node: Any, x: str, dims: Any) -> str:
    r = _rank(node)
    return ctx.add("Transpose", [x], perm=[int(d) % r for d in dims])


@_register("aten::view", "aten::_unsafe_view", "aten::reshape")
def _view(ctx: Any, node: Any, x: str, shape: Any) -> str:
    return ctx.add("Reshape", [x, ctx.ints(shape)])


@_register("aten::expand")
def _expand(ctx: Any, node: Any, x: str, size: Any, implicit: bool = False) -> str:
    return ctx.add("Expand", [x, ctx.ints([1 if (not hasattr(s, "kind") and int(s) == -1) else s for s in size])])


@_register("aten::unsqueeze", "aten::unsqueeze_")
def _unsqueeze(ctx: Any, node: Any, x: str, dim: int) -> str:
    return ctx.add("Unsqueeze", [x, ctx.const([int(dim) % (_rank(node) + 1)], np.int64, "axes")])


@_register("aten::squeeze.dim", "aten::squeeze.dims", "aten::squeeze", "aten::squeeze_.dim", "aten::squeeze_.dims",
           "aten::squeeze_")
def _squeeze(ctx: Any, node: Any, x: str, dims: Any = None) -> str:
    shape = list(node.args[0].meta["val"].shape)
    if dims is None:
        dims = [i for i, s in enumerate(shape) if s == 1]
    dims = [int(d) % len(shape) for d in (dims if isinstance(dims, (list, tuple)) else [dims])]
    dims = [d for d in dims if shape[d] == 1]
    if not dims:
        return ctx.add("Identity", [x])
    return ctx.add("Squeeze", [x, ctx.const(dims, np.int64, "axes")])


@_register("aten::gelu")
def _gelu(ctx: Any, node: Any, x: str, approximate: str = "none") -> str:
    if ctx.opset >= 20:
        return ctx.add("Gelu", [x], approximate=approximate)
    dt = _np_dtype(node)
    half = ctx.const(np.asarray(0.5, dt), hint="half")
    one = ctx.const(np.asarray(1.0, dt), hint="one")
    if approximate == "tanh":
        cube = ctx.add("Mul", [ctx.add("Mul", [x, x]), x])
        inner = ctx.add("Add", [x, ctx.add("Mul", [cube, ctx.const(np.asarray(0.044715, dt))])])
        t = ctx.add("Tanh", [ctx.add("Mul", [inner, ctx.const(np.asarray(math.sqrt(2 / math.pi), dt))])])
    else:
        t = ctx.add("Erf", [ctx.add("Mul", [x, ctx.const(np.asarray(1 / math.sqrt(2), dt))])])
    return ctx.add("Mul", [ctx.add("Mul", [x, half]), ctx.add("Add", [t, one])])


@_register("aten::hardtanh")
def _hardtanh(ctx: Any, node: Any, x: str, lo: float = -1.0, hi: float = 1.0) -> str:
    dt = _np_dtype(node)
    return ctx.add("Clip", [x, ctx.const(np.asarray(lo, dt)), ctx.const(np.asarray(hi, dt))])


@_register("aten::convolution")
def _convolution(ctx: Any, node: Any, x: str, w: str, b: Any, stride: Any, padding: Any, dilation: Any,
                 transposed: bool, output_padding: Any, groups: int) -> str:
    inputs = [x, w] + ([b] if b is not None else [])
    pads = [int(p) for p in padding] * 2
    if transposed:
        return ctx.add("ConvTranspose", inputs, strides=[int(s) for s in stride], pads=pads,
                       dilations=[int(d) for d in dilation], group=int(groups),
                       output_padding=[int(p) for p in output_padding])
    return ctx.add("Conv", inputs, strides=[int(s) for s in stride], pads=pads,
                   dilations=[int(d) for d in dilation], group=int(groups))


def _bn(ctx: Any, node: Any, x: str, w: Any, b: Any, rm: Any, rv: Any, eps: float) -> list[Any]:
    if rm is None or rv is None:
        raise OnnxExporterError("ONNX export: batch norm without running statistics (track_running_stats=False) "
                                "normalizes with batch statistics, which ONNX's BatchNormalization does not")
    c = int(node.args[0].meta["val"].shape[1])
    dt = _np_dtype(node.args[0]) if hasattr(node.args[0], "meta") else np.float32
    w = w if w is not None else ctx.const(np.ones(c, dt), hint="bn_weight")
    b = b if b is not None else ctx.const(np.zeros(c, dt), hint="bn_bias")
    return [ctx.add("BatchNormalization", [x, w, b, rm, rv], epsilon=float(eps)), None, None]


@_register("aten::native_batch_norm", "aten::_native_batch_norm_legit_functional")
def _native_batch_norm(ctx: Any, node: Any, x: str, w: Any, b: Any, rm: Any, rv: Any, training: bool,
                       momentum: float, eps: float) -> list[Any]:
    if training or rm is None:           # the batch's own statistics (a model exported in training mode, or
        return _batch_statistics_norm(ctx, node, x, w, b, eps)     # instance norm): running stats not updated
    return _bn(ctx, node, x, w, b, rm, rv, eps)


@_register("aten::_native_batch_norm_legit_no_training")
def _bn_no_training(ctx: Any, node: Any, x: str, w: Any, b: Any, rm: Any, rv: Any, momentum: float,
                    eps: float) -> list[Any]:
    return _bn(ctx, node, x, w, b, rm, rv, eps)


def _pool_attrs(kernel: Any, stride: Any, padding: Any, n: int) -> dict[str, Any]:
    k = [int(v) for v in kernel] * (n if len(kernel) == 1 else 1)
    s = [int(v) for v in stride] if stride else k
    s = s * (n if len(s) == 1 else 1)
    p = [int(v) for v in padding] * (n if len(padding) == 1 else 1)
    return {"kernel_shape": k, "strides": s, "pads": p * 2}


@_register("aten::max_pool2d_with_indices", "aten::max_pool1d_with_indices", "aten::max_pool3d_with_indices")
def _max_pool(ctx: Any, node: Any, x: str, kernel: Any, stride: Any = (), padding: Any = (0,), dilation: Any = (1,),
              ceil_mode: bool = False) -> list[Any]:
    n = _rank(node) - 2
    attrs = _pool_attrs(kernel, stride, padding, n)
    d = [int(v) for v in dilation] * (n if len(dilation) == 1 else 1)
    return [ctx.add("MaxPool", [x], dilations=d, ceil_mode=int(ceil_mode), **attrs), None]


@_register("aten::avg_pool2d", "aten::avg_pool1d", "aten::avg_pool3d")
def _avg_pool(ctx: Any, node: Any, x: str, kernel: Any, stride: Any = (), padding: Any = (0,),
              ceil_mode: bool = False, count_include_pad: bool = True, divisor_override: Any = None) -> str:
    if divisor_override is not None:
        raise OnnxExporterError("ONNX export: avg_pool with divisor_override has no ONNX form")
    return ctx.add("AveragePool", [x], ceil_mode=int(ceil_mode), count_include_pad=int(count_include_pad),
                   **_pool_attrs(kernel, stride, padding, _rank(node) - 2))


@_register("aten::_adaptive_avg_pool2d", "aten::adaptive_avg_pool2d", "aten::_adaptive_avg_pool3d",
           "aten::adaptive_avg_pool1d")
def _adaptive_avg_pool(ctx: Any, node: Any, x: str, output_size: Any) -> str:
    shape = list(node.args[0].meta["val"].shape)[2:]
    out = [int(o) for o in output_size]
    if all(o == 1 for o in out):
        return ctx.add("GlobalAveragePool", [x])
    if any(s % o for s, o in zip(shape, out)):
        raise OnnxExporterError(f"ONNX export: adaptive average pooling from {shape} to {out} (sizes that do not "
                                "divide) has no ONNX form")
    k = [s // o for s, o in zip(shape, out)]
    return ctx.add("AveragePool", [x], kernel_shape=k, strides=k)


def _axes_reduce(op: str) -> Callable[..., Any]:
    def fn(ctx: Any, node: Any, x: str, dims: Any = None, keepdim: bool = False, **kw: Any) -> str:
        r = _rank(node)
        if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
            dims = list(range(r))
        dims = [int(d) % r for d in (dims if isinstance(dims, (list, tuple)) else [dims])]
        if op == "ReduceSum" or ctx.opset >= 18:
            return ctx.add(op, [x, ctx.const(dims, np.int64, "axes")], keepdims=int(keepdim))
        return ctx.add(op, [x], axes=dims, keepdims=int(keepdim))
    return fn


TRANSLATIONS["aten::mean.dim"] = _axes_reduce("ReduceMean")
TRANSLATIONS["aten::sum.dim_IntList"] = _axes_reduce("ReduceSum")
TRANSLATIONS["aten::amax"] = _axes_reduce("ReduceMax")
TRANSLATIONS["aten::amin"] = _axes_reduce("ReduceMin")


@_register("aten::mean.default", "aten::sum.default", "aten::mean", "aten::sum")
def _reduce_all(ctx: Any, node: Any, x: str, dtype: Any = None) -> str:
    op = "ReduceMean" if "mean" in str(node.target) else "ReduceSum"
    return _axes_reduce(op)(ctx, node, x, None, False)


@_register("aten::embedding")
def _embedding(ctx: Any, node: Any, weight: str, indices: str, *rest: Any) -> str:
    return ctx.add("Gather", [weight, indices], axis=0)


@_register("aten::_softmax", "aten::softmax.int")
def _softmax(ctx: Any, node: Any, x: str, dim: int, *rest: Any) -> str:
    return ctx.add("Softmax", [x], axis=int(dim))


@_register("aten::_log_softmax", "aten::log_softmax.int")
def _log_softmax(ctx: Any, node: Any, x: str, dim: int, *rest: Any) -> str:
    return ctx.add("LogSoftmax", [x], axis=int(dim))


@_register("aten::native_layer_norm")
def _layer_norm(ctx: Any, node: Any, x: str, normalized_shape: Any, w: Any, b: Any, eps: float) -> list[Any]:
    n = len(normalized_shape)
    dt = _np_dtype(node.args[0])
    shape = [int(s) for s in normalized_shape]
    w = w if w is not None else ctx.const(np.ones(shape, dt), hint="ln_weight")
    inputs = [x, w] + ([b] if b is not None else [])
    return ctx.add("LayerNormalization", inputs, outputs=3, axis=-n, epsilon=float(eps))


@_register("aten::cat")
def _cat(ctx: Any, node: Any, tensors: Any, dim: int = 0) -> str:
    return ctx.add("Concat", list(tensors), axis=int(dim))


@_register("aten::slice.Tensor")
def _slice(ctx: Any, node: Any, x: str, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> str:
    big = 2 ** 63 - 1
    start = 0 if start is None else start
    end = big if end is None or (not hasattr(end, "kind") and int(end) >= big) else end
    return ctx.add("Slice", [x, ctx.ints([start]), ctx.ints([end]), ctx.const([int(dim)], np.int64, "axes"),
                             ctx.const([int(step)], np.int64, "steps")])


@_register("aten::select.int")
def _select(ctx: Any, node: Any, x: str, dim: int, index: Any) -> str:
    return ctx.add("Gather", [x, ctx.const(np.asarray(int(index), np.int64), hint="index")], axis=int(dim))


@_register("aten::where.self")
def _where(ctx: Any, node: Any, cond: str, a: Any, b: Any) -> str:
    return ctx.add("Where", [cond, _operand(ctx, node, a), _operand(ctx, node, b)])


def _fill(value_of: Callable[..., Any]) -> Callable[..., Any]:
    def fn(ctx: Any, node: Any, size: Any, *rest: Any, **kw: Any) -> str:
        value = np.asarray([value_of(rest)], dtype=_np_dtype(node))
        return ctx.add("ConstantOfShape", [ctx.ints(size)], value=_tensor_value(value))
    return fn


TRANSLATIONS["aten::zeros"] = _fill(lambda rest: 0)
TRANSLATIONS["aten::ones"] = _fill(lambda rest: 1)
TRANSLATIONS["aten::full"] = _fill(lambda rest: rest[0])


def _in_dtype(node: Any, i: int = 0) -> Any:
    arg = node.args[i]
    return _np_dtype(arg) if hasattr(arg, "meta") else np.float32


def _compare(op: str, negate: bool = False) -> Callable[..., Any]:
    def fn(ctx: Any, node: Any, a: Any, b: Any) -> str:
        dt = _in_dtype(node)
        b_name = b if isinstance(b, str) else ctx.const(np.asarray(b, dt), hint="scalar")
        out = ctx.add(op, [a, b_name])
        return ctx.add("Not", [out]) if negate else out
    return fn


for _aten, (_onnx, _neg) in {"eq": ("Equal", False), "ne": ("Equal", True), "lt": ("Less", False),
                             "gt": ("Greater", False), "le": ("LessOrEqual", False),
                             "ge": ("GreaterOrEqual", False)}.items():
    TRANSLATIONS[f"aten::{_aten}.Scalar"] = TRANSLATIONS[f"aten::{_aten}.Tensor"] = _compare(_onnx, _neg)


@_register("aten::logical_not", "aten::bitwise_not")
def _not(ctx: Any, node: Any, x: str) -> str:
    return ctx.add("Not", [x])


@_register("aten::masked_fill.Scalar", "aten::masked_fill.Tensor")
def _masked_fill(ctx: Any, node: Any, x: str, mask: str, value: Any) -> str:
    dt = _np_dtype(node)
    v = value if isinstance(value, str) else ctx.const(np.asarray(value, dt), hint="fill")
    return ctx.add("Where", [mask, v, x])


@_register("aten::split.Tensor", "aten::split_with_sizes")
def _split(ctx: Any, node: Any, x: str, split: Any, dim: int = 0) -> list[str]:
    sizes = [int(v.shape[int(dim)]) for v in node.meta["val"]]
    if len(sizes) == 1:
        return [ctx.add("Identity", [x])]
    out = ctx.add("Split", [x, ctx.const(sizes, np.int64, "split")], outputs=len(sizes), axis=int(dim))
    return list(out)


@_register("aten::_reshape_alias")
def _reshape_alias(ctx: Any, node: Any, x: str, size: Any, stride: Any) -> str:
    return ctx.add("Reshape", [x, ctx.ints(size)])


@_register("aten::stack")
def _stack(ctx: Any, node: Any, tensors: Any, dim: int = 0) -> str:
    r = int(node.meta["val"].dim())
    axes = ctx.const([int(dim) % r], np.int64, "axes")
    return ctx.add("Concat", [ctx.add("Unsqueeze", [t, axes], name_hint="unsqueeze") for t in tensors],
                   axis=int(dim) % r)


@_register("aten::arange.start_step", "aten::arange.start", "aten::arange.default", "aten::arange")
def _arange(ctx: Any, node: Any, *args: Any, **kw: Any) -> str:
    nums = [a for a in args if not isinstance(a, str)]
    start, end, step = (0, nums[0], 1) if len(nums) == 1 else (nums[0], nums[1], nums[2] if len(nums) > 2 else 1)
    dt = _np_dtype(node)
    if dt == np.int64:
        parts = [ctx.scalar(v) for v in (start, end, step)]
    else:
        parts = [ctx.add("Cast", [ctx.scalar(v)], to=1 if dt == np.float32 else 11) for v in (start, end, step)]
    return ctx.add("Range", parts)


@_register("aten::_scaled_dot_product_flash_attention_for_cpu", "aten::scaled_dot_product_attention",
           "aten::_scaled_dot_product_attention_math")
def _sdpa(ctx: Any, node: Any, q: str, k: str, v: str, dropout_p: float = 0.0, is_causal: bool = False,
          attn_mask: Any = None, scale: Any = None, **kw: Any) -> Any:
    """softmax(q k^T * scale + mask) v, the causal mask a lower-triangular band of the (L, S) scores."""
    if "attn_mask" in kw:
        attn_mask = kw["attn_mask"]
    qv = node.args[0].meta["val"]
    dt = _np_dtype(node.args[0])
    r = qv.dim()
    e = int(qv.shape[-1])
    scale = 1.0 / math.sqrt(e) if scale is None else float(scale)
    perm = list(range(r))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    scores = ctx.add("MatMul", [q, ctx.add("Transpose", [k], perm=perm)], name_hint="scores")
    scores = ctx.add("Mul", [scores, ctx.const(np.asarray(scale, dt), hint="scale")], name_hint="scores")
    if is_causal:
        size = ctx.add("Concat", [ctx.dim_of(q, r - 2), ctx.dim_of(k, r - 2)], axis=0, name_hint="mask_shape")
        ones = ctx.add("ConstantOfShape", [size], value=_tensor_value(np.asarray([True])))
        band = ctx.add("Trilu", [ctx.add("Cast", [ones], to=7)], upper=0)
        scores = ctx.add("Where", [ctx.add("Cast", [band], to=9), scores,
                                   ctx.const(np.asarray(-np.inf, dt), hint="neg_inf")], name_hint="scores")
    if attn_mask is not None:
        mask_val = node.args[3].meta["val"] if len(node.args) > 3 and hasattr(node.args[3], "meta") else None
        if mask_val is not None and mask_val.dtype.name == "bool":
            scores = ctx.add("Where", [attn_mask, scores, ctx.const(np.asarray(-np.inf, dt), hint="neg_inf")])
        else:
            scores = ctx.add("Add", [scores, attn_mask])
    out = ctx.add("MatMul", [ctx.add("Softmax", [scores], axis=-1, name_hint="weights"), v])
    return [out, None] if "flash" in str(node.target) else out


def _tensor_value(arr: np.ndarray) -> Any:
    from onnx import numpy_helper
    return numpy_helper.from_array(arr, "value")


_GATES = {"LSTM": (4, [0, 3, 1, 2]), "GRU": (3, [1, 0, 2])}   # PyTorch's gate blocks in ONNX's order (iofc, zrh)


@_register("aten::_rnn_layer")
def _rnn_layer(ctx: Any, node: Any, x: str, batch_sizes: Any, h0: str, c0: Any, w_ih: str, w_hh: str, b_ih: Any,
               b_hh: Any, w_hr: Any, mode: str, reverse: bool) -> list[Any]:
    """One layer and direction as ONNX's LSTM / GRU / RNN over (T, B, I): weights reordered to ONNX's gate order,
    biases concatenated (zeros when absent)."""
    if w_hr is not None:
        raise OnnxExporterError("ONNX export: LSTM with proj_size has no ONNX form")
    if len({int(b) for b in batch_sizes}) > 1:
        raise OnnxExporterError("ONNX export: packed sequences of different lengths are not supported; export "
                                "the padded batch")
    hidden = int(node.args[2].meta["val"].shape[-1])
    n_in = int(node.args[0].meta["val"].shape[-1])
    dt = _in_dtype(node)
    gates, order = _GATES.get(mode, (1, [0]))

    def reorder(w: str) -> str:
        joined = reorder_vec(ctx, w, hidden, gates, order) if gates > 1 else w
        return ctx.add("Unsqueeze", [joined, ctx.const([0], np.int64, "axes")], name_hint="rnn_weight")
    W, R = reorder(w_ih), reorder(w_hh)
    def zeros() -> str:
        return ctx.const(np.zeros(gates * hidden, dt), hint="rnn_bias")
    bias = ctx.add("Concat", [b_ih if b_ih is not None else zeros(), b_hh if b_hh is not None else zeros()], axis=0)
    if gates > 1:
        halves = ctx.add("Split", [bias, ctx.const([gates * hidden] * 2, np.int64, "split")], outputs=2, axis=0)
        bias = ctx.add("Concat", [reorder_vec(ctx, h, hidden, gates, order) for h in halves], axis=0)
    B = ctx.add("Unsqueeze", [bias, ctx.const([0], np.int64, "axes")], name_hint="rnn_bias")
    batch = ctx.dim_of(h0, 0)
    seq_shape = ctx.add("Concat", [ctx.const([-1], np.int64, "ints"), batch, ctx.const([n_in], np.int64, "ints")],
                        axis=0)
    X = ctx.add("Reshape", [x, seq_shape], name_hint="rnn_input")
    axes0 = ctx.const([0], np.int64, "axes")
    inputs = [X, W, R, B, "", ctx.add("Unsqueeze", [h0, axes0], name_hint="h0")]
    attrs: dict[str, Any] = {"hidden_size": hidden, "direction": "reverse" if reverse else "forward"}
    if mode == "LSTM":
        inputs.append(ctx.add("Unsqueeze", [c0, axes0], name_hint="c0"))
        y, yh, yc = ctx.add("LSTM", inputs, outputs=3, **attrs)
    elif mode == "GRU":
        y, yh = ctx.add("GRU", inputs, outputs=2, linear_before_reset=1, **attrs)
        yc = None
    else:
        y, yh = ctx.add("RNN", inputs, outputs=2, activations=["Tanh" if mode == "RNN_TANH" else "Relu"], **attrs)
        yc = None
    flat = ctx.add("Reshape", [y, ctx.const([-1, hidden], np.int64, "ints")], name_hint="rnn_output")
    h = ctx.add("Squeeze", [yh, axes0], name_hint="h_n")
    c = ctx.add("Squeeze", [yc, axes0], name_hint="c_n") if yc is not None else None
    return [flat, h, c, None]


def reorder_vec(ctx: Any, v: str, hidden: int, gates: int, order: list[int]) -> str:
    """The gate blocks (rows of ``hidden``) of a weight or bias in ONNX's order."""
    blocks = ctx.add("Split", [v, ctx.const([hidden] * gates, np.int64, "split")], outputs=gates, axis=0)
    return ctx.add("Concat", [blocks[i] for i in order], axis=0)


# ---------------------------------------------------------------------------------------------- more activations
@_register("aten::silu")
def _silu(ctx: Any, node: Any, x: str) -> str:
    return ctx.add("Mul", [x, ctx.add("Sigmoid", [x], name_hint="sigmoid")])


@_register("aten::leaky_relu")
def _leaky_relu(ctx: Any, node: Any, x: str, slope: float = 0.01) -> str:
    return ctx.add("LeakyRelu", [x], alpha=float(slope))


@_register("aten::elu")
def _elu(ctx: Any, node: Any, x: str, alpha: float = 1.0, scale: float = 1.0, input_scale: float = 1.0) -> str:
    if scale != 1 or input_scale != 1:                   # selu and friends: scale * elu(input_scale * x)
        dt = _np_dtype(node)
        x = ctx.add("Mul", [x, ctx.const(np.asarray(input_scale, dt))]) if input_scale != 1 else x
        return ctx.add("Mul", [ctx.add("Elu", [x], alpha=float(alpha)), ctx.const(np.asarray(scale, dt))])
    return ctx.add("Elu", [x], alpha=float(alpha))


@_register("aten::hardswish")
def _hardswish(ctx: Any, node: Any, x: str) -> str:
    return ctx.add("HardSwish", [x])


@_register("aten::hardsigmoid")
def _hardsigmoid(ctx: Any, node: Any, x: str) -> str:
    return ctx.add("HardSigmoid", [x], alpha=1.0 / 6, beta=0.5)


@_register("aten::softplus")
def _softplus(ctx: Any, node: Any, x: str, beta: float = 1.0, threshold: float = 20.0) -> str:
    """log(1 + e^(beta x)) / beta, and x itself where beta x > threshold (PyTorch's linear tail)."""
    dt = _np_dtype(node)
    bx = x if beta == 1 else ctx.add("Mul", [x, ctx.const(np.asarray(beta, dt))])
    soft = ctx.add("Softplus", [bx])
    soft = soft if beta == 1 else ctx.add("Div", [soft, ctx.const(np.asarray(beta, dt))])
    return ctx.add("Where", [ctx.add("Greater", [bx, ctx.const(np.asarray(threshold, dt))]), x, soft])


@_register("aten::mish")
def _mish(ctx: Any, node: Any, x: str) -> str:
    return ctx.add("Mul", [x, ctx.add("Tanh", [ctx.add("Softplus", [x])])])


@_register("aten::log_sigmoid_forward")
def _log_sigmoid(ctx: Any, node: Any, x: str) -> list[Any]:
    return [ctx.add("Neg", [ctx.add("Softplus", [ctx.add("Neg", [x])])]), None]


@_register("aten::glu")
def _glu(ctx: Any, node: Any, x: str, dim: int = -1) -> str:
    a, b = ctx.add("Split", [x], outputs=2, axis=int(dim), num_outputs=2)
    return ctx.add("Mul", [a, ctx.add("Sigmoid", [b])])


@_register("aten::_prelu_kernel", "aten::prelu")
def _prelu(ctx: Any, node: Any, x: str, w: str) -> str:
    r, wr = _rank(node), int(node.args[1].meta["val"].dim())
    if r > 2 and wr == 1:                                # the weight runs along the channel axis (1)
        w = ctx.add("Reshape", [w, ctx.const([-1] + [1] * (r - 2), np.int64, "ints")])
    return ctx.add("PRelu", [x, w])


@_register("aten::clamp", "aten::clip")
def _clamp(ctx: Any, node: Any, x: str, lo: Any = None, hi: Any = None) -> str:
    dt = _np_dtype(node)
    return ctx.add("Clip", [x, "" if lo is None else _operand(ctx, node, np.asarray(lo, dt)),
                            "" if hi is None else _operand(ctx, node, np.asarray(hi, dt))])


@_register("aten::clamp_min")
def _clamp_min(ctx: Any, node: Any, x: str, lo: Any) -> str:
    return ctx.add("Max", [x, _operand(ctx, node, lo)])


@_register("aten::clamp_max")
def _clamp_max(ctx: Any, node: Any, x: str, hi: Any) -> str:
    return ctx.add("Min", [x, _operand(ctx, node, hi)])


for _aten, _onnx in {"maximum": "Max", "minimum": "Min", "sign": "Sign", "round": "Round"}.items():
    TRANSLATIONS[f"aten::{_aten}"] = (lambda op: lambda ctx, node, *xs: ctx.add(op, [_operand(ctx, node, v)
                                                                                    for v in xs]))(_onnx)


# ---------------------------------------------------------------------------------------------- shapes and indexing
@_register("aten::constant_pad_nd")
def _pad(ctx: Any, node: Any, x: str, pad: Any, value: float = 0.0) -> str:
    r = _rank(node)
    begins, ends = [0] * r, [0] * r
    for i in range(len(pad) // 2):                      # PyTorch's pairs start at the last dimension
        begins[r - 1 - i], ends[r - 1 - i] = int(pad[2 * i]), int(pad[2 * i + 1])
    return ctx.add("Pad", [x, ctx.const(begins + ends, np.int64, "pads"),
                           ctx.const(np.asarray(value, _np_dtype(node)), hint="pad_value")], mode="constant")


@_register("aten::flip")
def _flip(ctx: Any, node: Any, x: str, dims: Any) -> str:
    r = _rank(node)
    dims = [int(d) % r for d in dims]
    n = len(dims)
    return ctx.add("Slice", [x, ctx.const([-1] * n, np.int64, "starts"), ctx.const([-(2 ** 63)] * n, np.int64, "ends"),
                             ctx.const(dims, np.int64, "axes"), ctx.const([-1] * n, np.int64, "steps")])


@_register("aten::index_select")
def _index_select(ctx: Any, node: Any, x: str, dim: int, index: str) -> str:
    return ctx.add("Gather", [x, index], axis=int(dim))


@_register("aten::gather")
def _gather(ctx: Any, node: Any, x: str, dim: int, index: str, sparse_grad: bool = False) -> str:
    return ctx.add("GatherElements", [x, index], axis=int(dim))


@_register("aten::repeat")
def _repeat(ctx: Any, node: Any, x: str, repeats: Any) -> str:
    r = _rank(node)
    if len(repeats) > r:                                 # new leading dimensions of size 1 first
        x = ctx.add("Unsqueeze", [x, ctx.const(list(range(len(repeats) - r)), np.int64, "axes")])
    return ctx.add("Tile", [x, ctx.const([int(v) for v in repeats], np.int64, "repeats")])


@_register("aten::pixel_shuffle")
def _pixel_shuffle(ctx: Any, node: Any, x: str, r: int) -> str:
    return ctx.add("DepthToSpace", [x], blocksize=int(r), mode="CRD")


@_register("aten::scalar_tensor")
def _scalar_tensor(ctx: Any, node: Any, v: Any, **kw: Any) -> str:
    return ctx.const(np.asarray(v, _np_dtype(node)), hint="scalar")


@_register("aten::cumsum")
def _cumsum(ctx: Any, node: Any, x: str, dim: int, dtype: Any = None) -> str:
    return ctx.add("CumSum", [x, ctx.const(np.asarray(int(dim), np.int64), hint="axis")])


# ---------------------------------------------------------------------------------------------- reductions
@_register("aten::argmax", "aten::argmin")
def _argmax(ctx: Any, node: Any, x: str, dim: Any = None, keepdim: bool = False) -> str:
    op = "ArgMax" if "argmax" in str(node.target) else "ArgMin"
    if dim is None:
        return ctx.add(op, [ctx.add("Reshape", [x, ctx.const([-1], np.int64, "ints")])], axis=0, keepdims=0)
    return ctx.add(op, [x], axis=int(dim), keepdims=int(keepdim))


@_register("aten::max.dim", "aten::min.dim")
def _max_dim(ctx: Any, node: Any, x: str, dim: int, keepdim: bool = False) -> list[str]:
    biggest = "max" in str(node.target)
    values = _axes_reduce("ReduceMax" if biggest else "ReduceMin")(ctx, node, x, [dim], keepdim)
    return [values, ctx.add("ArgMax" if biggest else "ArgMin", [x], axis=int(dim), keepdims=int(keepdim))]


@_register("aten::max.default", "aten::min.default", "aten::max", "aten::min")
def _max_all(ctx: Any, node: Any, x: str) -> str:
    return _axes_reduce("ReduceMax" if "max" in str(node.target) else "ReduceMin")(ctx, node, x, None, False)


@_register("aten::topk")
def _topk(ctx: Any, node: Any, x: str, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> list[str]:  # noqa: A002
    return ctx.add("TopK", [x, ctx.const([int(k)], np.int64, "k")], outputs=2, axis=int(dim), largest=int(largest),
                   sorted=int(sorted))


def _moments(ctx: Any, node: Any, x: str, dims: Any, correction: float, keepdim: bool) -> tuple[str, str]:
    """(mean, variance with ``correction``) over ``dims`` (all when None)."""
    shape = list(node.args[0].meta["val"].shape)
    r = len(shape)
    dims = list(range(r)) if not dims else [int(d) % r for d in (dims if isinstance(dims, (list, tuple)) else [dims])]
    n = 1
    for d in dims:
        n *= int(shape[d])
    axes = ctx.const(dims, np.int64, "axes")
    dt = _in_dtype(node)
    mean = ctx.add("ReduceMean", [x, axes], keepdims=1, name_hint="mean") if ctx.opset >= 18 else \
        ctx.add("ReduceMean", [x], axes=dims, keepdims=1, name_hint="mean")
    diff = ctx.add("Sub", [x, mean])
    sq = ctx.add("ReduceSum", [ctx.add("Mul", [diff, diff]), axes], keepdims=int(keepdim), name_hint="sq")
    var = ctx.add("Div", [sq, ctx.const(np.asarray(max(n - correction, 0), dt))], name_hint="var")
    if not keepdim:
        mean = ctx.add("Squeeze", [mean, axes], name_hint="mean")
    return mean, var


@_register("aten::var.correction", "aten::var.dim")
def _var(ctx: Any, node: Any, x: str, dims: Any = None, *rest: Any, correction: Any = None,
         keepdim: bool = False) -> str:
    corr, keepdim = _correction(node, rest, correction, keepdim)
    return _moments(ctx, node, x, dims, corr, keepdim)[1]


@_register("aten::std.correction", "aten::std.dim")
def _std(ctx: Any, node: Any, x: str, dims: Any = None, *rest: Any, correction: Any = None,
         keepdim: bool = False) -> str:
    corr, keepdim = _correction(node, rest, correction, keepdim)
    return ctx.add("Sqrt", [_moments(ctx, node, x, dims, corr, keepdim)[1]])


def _correction(node: Any, rest: tuple[Any, ...], correction: Any, keepdim: bool) -> tuple[float, bool]:
    if "dim" in str(node.target).rsplit(".", 1)[-1]:     # var.dim(x, dims, unbiased, keepdim)
        unbiased = rest[0] if rest else True
        return (1.0 if unbiased else 0.0), bool(rest[1]) if len(rest) > 1 else keepdim
    return (1.0 if correction is None else float(correction)), keepdim


@_register("aten::linalg_vector_norm")
def _vector_norm(ctx: Any, node: Any, x: str, ord: Any = 2, dim: Any = None, keepdim: bool = False,  # noqa: A002
                 **kw: Any) -> str:
    if ord == 2:
        return ctx.add("Sqrt", [_axes_reduce("ReduceSumSquare")(ctx, node, x, dim, keepdim)])
    if ord == 1:
        return _axes_reduce("ReduceL1")(ctx, node, x, dim, keepdim)
    if ord == math.inf:
        return _axes_reduce("ReduceMax")(ctx, node, ctx.add("Abs", [x]), dim, keepdim)
    raise OnnxExporterError(f"ONNX export: vector norm of order {ord} is not supported")


# ---------------------------------------------------------------------------------------------- normalization
@_register("aten::native_group_norm")
def _group_norm(ctx: Any, node: Any, x: str, w: Any, b: Any, n: Any, c: int, hw: Any, group: int,
                eps: float) -> list[Any]:
    """(x reshaped to N x G x rest, normalized over rest) reshaped back, times weight plus bias per channel."""
    shape = list(node.args[0].meta["val"].shape)
    r, dt = len(shape), _in_dtype(node)
    grouped = ctx.add("Reshape", [x, ctx.ints([0, int(group), -1])], name_hint="grouped")
    mean, var = _moments_axes(ctx, grouped, [2], dt)
    normed = ctx.add("Div", [ctx.add("Sub", [grouped, mean]),
                             ctx.add("Sqrt", [ctx.add("Add", [var, ctx.const(np.asarray(eps, dt))])])])
    y = ctx.add("Reshape", [normed, ctx.add("Shape", [x])], name_hint="normed")
    per_channel = [-1] + [1] * (r - 2)
    if w is not None:
        y = ctx.add("Mul", [y, ctx.add("Reshape", [w, ctx.const(per_channel, np.int64, "ints")])])
    if b is not None:
        y = ctx.add("Add", [y, ctx.add("Reshape", [b, ctx.const(per_channel, np.int64, "ints")])])
    return [y, None, None]


def _moments_axes(ctx: Any, x: str, axes: list[int], dt: Any) -> tuple[str, str]:
    """Mean and biased variance over ``axes``, kept as size-1 dimensions."""
    ax = ctx.const(axes, np.int64, "axes")
    if ctx.opset >= 18:
        mean = ctx.add("ReduceMean", [x, ax], keepdims=1, name_hint="mean")
        diff = ctx.add("Sub", [x, mean])
        var = ctx.add("ReduceMean", [ctx.add("Mul", [diff, diff]), ax], keepdims=1, name_hint="var")
    else:
        mean = ctx.add("ReduceMean", [x], axes=axes, keepdims=1, name_hint="mean")
        diff = ctx.add("Sub", [x, mean])
        var = ctx.add("ReduceMean", [ctx.add("Mul", [diff, diff])], axes=axes, keepdims=1, name_hint="var")
    return mean, var


def _batch_statistics_norm(ctx: Any, node: Any, x: str, w: Any, b: Any, eps: float) -> list[Any]:
    """Batch norm with the batch's own statistics (training mode, or no running statistics: instance norm)."""
    r, dt = _rank(node), _in_dtype(node)
    mean, var = _moments_axes(ctx, x, [0] + list(range(2, r)), dt)
    y = ctx.add("Div", [ctx.add("Sub", [x, mean]),
                        ctx.add("Sqrt", [ctx.add("Add", [var, ctx.const(np.asarray(eps, dt))])])])
    per_channel = ctx.const([-1] + [1] * (r - 2), np.int64, "ints")
    if w is not None:
        y = ctx.add("Mul", [y, ctx.add("Reshape", [w, per_channel])])
    if b is not None:
        y = ctx.add("Add", [y, ctx.add("Reshape", [b, per_channel])])
    return [y, None, None]


# ---------------------------------------------------------------------------------------------- resampling, pooling
def _resize(mode: str) -> Callable[..., Any]:
    def fn(ctx: Any, node: Any, x: str, output_size: Any, *rest: Any) -> str:
        in_shape = list(node.args[0].meta["val"].shape)
        out_shape = list(node.meta["val"].shape)
        align = bool(rest[0]) if mode == "linear" and rest and isinstance(rest[0], bool) else False
        scales = [1.0, 1.0] + [o / i for o, i in zip(out_shape[2:], in_shape[2:])]
        attrs: dict[str, Any] = {"mode": mode}
        if mode == "nearest":
            attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
        else:
            attrs["coordinate_transformation_mode"] = "align_corners" if align else "pytorch_half_pixel"
        return ctx.add("Resize", [x, "", ctx.const(np.asarray(scales, np.float32), hint="scales")], **attrs)
    return fn


for _n in ("1d", "2d", "3d"):
    TRANSLATIONS[f"aten::upsample_nearest{_n}"] = _resize("nearest")
    TRANSLATIONS[f"aten::upsample_bilinear{_n}" if _n == "2d" else f"aten::upsample_linear{_n}"] = _resize("linear")
TRANSLATIONS["aten::upsample_trilinear3d"] = _resize("linear")


@_register("aten::adaptive_max_pool2d", "aten::adaptive_max_pool1d")
def _adaptive_max_pool(ctx: Any, node: Any, x: str, output_size: Any) -> list[Any]:
    shape = list(node.args[0].meta["val"].shape)[2:]
    out = [int(o) for o in output_size]
    if all(o == 1 for o in out):
        return [ctx.add("GlobalMaxPool", [x]), None]
    if any(s % o for s, o in zip(shape, out)):
        raise OnnxExporterError(f"ONNX export: adaptive max pooling from {shape} to {out} (sizes that do not "
                                "divide) has no ONNX form")
    k = [s // o for s, o in zip(shape, out)]
    return [ctx.add("MaxPool", [x], kernel_shape=k, strides=k), None]
