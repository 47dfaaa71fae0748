"""Which module sequences fuse into what (mirrors ``torch/ao/quantization/fuser_method_mappings.py``): for
post-training quantization batch norm is folded into the preceding convolution / linear layer; for QAT the sequence
is kept as a fused module."""
from __future__ import annotations

from typing import Any, Callable

from ember import nn
import ember.ao.nn.intrinsic as nni
from ember.nn.utils.fusion import fuse_conv_bn_eval, fuse_linear_bn_eval

__all__ = ["fuse_conv_bn", "fuse_conv_bn_relu", "fuse_linear_bn", "get_fuser_method"]


def fuse_conv_bn(is_qat: bool, conv: Any, bn: Any) -> Any:
    """Conv + BatchNorm: one convolution with the normalisation folded in (evaluation), or ``ConvBn*d``
    (QAT)."""
    if conv.training != bn.training:
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    fused_class = {nn.Conv1d: nni.ConvBn1d, nn.Conv2d: nni.ConvBn2d, nn.Conv3d: nni.ConvBn3d}
    if is_qat:
        if bn.num_features != conv.out_channels:
            raise AssertionError("Output channel of Conv2d must match num_features of BatchNorm2d")
        if not bn.affine:
            raise AssertionError("Only support fusing BatchNorm2d with affine set to True")
        if not bn.track_running_stats:
            raise AssertionError("Only support fusing BatchNorm2d with tracking_running_stats set to True")
        cls = fused_class.get(type(conv))
        if cls is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn)}")
        return cls(conv, bn)
    return fuse_conv_bn_eval(conv, bn)


def fuse_conv_bn_relu(is_qat: bool, conv: Any, bn: Any, relu: Any) -> Any:
    """Conv + BatchNorm + ReLU: ``ConvReLU*d`` over the folded convolution (evaluation), or ``ConvBnReLU*d``."""
    if not (conv.training == bn.training == relu.training):
        raise AssertionError("Conv and BN both must be in the same mode (train or eval).")
    if is_qat:
        cls = {nn.Conv1d: nni.ConvBnReLU1d, nn.Conv2d: nni.ConvBnReLU2d, nn.Conv3d: nni.ConvBnReLU3d}.get(type(conv))
        if bn.num_features != conv.out_channels:
            raise AssertionError("Output channel of Conv must match num_features of BatchNorm")
        if not bn.affine:
            raise AssertionError("Only support fusing BatchNorm with affine set to True")
        if not bn.track_running_stats:
            raise AssertionError("Only support fusing BatchNorm with tracking_running_stats set to True")
        if cls is None:
            raise NotImplementedError(f"Cannot fuse train modules: {(conv, bn, relu)}")
        return cls(conv, bn, relu)
    cls = {nn.Conv1d: nni.ConvReLU1d, nn.Conv2d: nni.ConvReLU2d, nn.Conv3d: nni.ConvReLU3d}.get(type(conv))
    if cls is None:
        raise NotImplementedError(f"Cannot fuse eval modules: {(conv, bn, relu)}")
    return cls(fuse_conv_bn_eval(conv, bn), relu)


def fuse_linear_bn(is_qat: bool, linear: Any, bn: Any) -> Any:
    if linear.training != bn.training:
        raise AssertionError("Linear and BN both must be in the same mode (train or eval).")
    if is_qat:
        if bn.num_features != linear.out_features:
            raise AssertionError("Output features of Linear must match num_features of BatchNorm1d")
        if not bn.affine:
            raise AssertionError("Only support fusing BatchNorm1d with affine set to True")
        if not bn.track_running_stats:
            raise AssertionError("Only support fusing BatchNorm1d with tracking_running_stats set to True")
        return nni.LinearBn1d(linear, bn)
    return fuse_linear_bn_eval(linear, bn)


def _sequential_wrapper2(sequential: type) -> Callable[..., Any]:
    def fuser_method(is_qat: bool, m1: Any, m2: Any) -> Any:
        return sequential(m1, m2)
    return fuser_method


_DEFAULT_OP_LIST_TO_FUSER_METHOD: dict[tuple[Any, ...], Callable[..., Any]] = {
    (nn.Conv1d, nn.BatchNorm1d): fuse_conv_bn,
    (nn.Conv1d, nn.BatchNorm1d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv2d, nn.BatchNorm2d): fuse_conv_bn,
    (nn.Conv2d, nn.BatchNorm2d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv3d, nn.BatchNorm3d): fuse_conv_bn,
    (nn.Conv3d, nn.BatchNorm3d, nn.ReLU): fuse_conv_bn_relu,
    (nn.Conv1d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU1d),
    (nn.Conv2d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU2d),
    (nn.Conv3d, nn.ReLU): _sequential_wrapper2(nni.ConvReLU3d),
    (nn.Linear, nn.BatchNorm1d): fuse_linear_bn,
    (nn.Linear, nn.ReLU): _sequential_wrapper2(nni.LinearReLU),
    (nn.BatchNorm2d, nn.ReLU): _sequential_wrapper2(nni.BNReLU2d),
    (nn.BatchNorm3d, nn.ReLU): _sequential_wrapper2(nni.BNReLU3d),
}


def get_fuser_method(op_list: tuple[Any, ...], additional_fuser_method_mapping: Any = None) -> Callable[..., Any]:
    all_mappings = {**_DEFAULT_OP_LIST_TO_FUSER_METHOD, **(additional_fuser_method_mapping or {})}
    fuser_method = all_mappings.get(op_list, None)
    if fuser_method is None:
        raise AssertionError(f"did not find fuser method for: {op_list} ")
    return fuser_method
