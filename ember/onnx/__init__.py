"""``ember.onnx`` (``torch.onnx``): ``export`` writes a model as an ONNX file that onnxruntime (or any ONNX
runtime) runs, built with the ``onnx`` package (the optional extra ``ember[onnx]``); see ``docs/tools.md``."""
from __future__ import annotations

import enum

from ember.onnx import errors
from ember.onnx._custom import register_custom_op_symbolic, unregister_custom_op_symbolic
from ember.onnx._exporter import export, is_in_onnx_export

__all__ = ["export", "is_in_onnx_export", "errors", "TrainingMode", "OperatorExportTypes", "TensorProtoDataType",
           "register_custom_op_symbolic", "unregister_custom_op_symbolic"]


class TrainingMode(enum.IntEnum):
    """The mode a model is exported in (``training=``): EVAL (the default), PRESERVE (as it is) or TRAINING."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class OperatorExportTypes(enum.IntEnum):
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TensorProtoDataType(enum.IntEnum):
    """ONNX's element types (``onnx.TensorProto``'s numbers), for ``Cast``'s ``to`` in symbolic functions."""
    UNDEFINED = 0
    FLOAT = 1
    UINT8 = 2
    INT8 = 3
    UINT16 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    STRING = 8
    BOOL = 9
    FLOAT16 = 10
    DOUBLE = 11
    UINT32 = 12
    UINT64 = 13
    COMPLEX64 = 14
    COMPLEX128 = 15
    BFLOAT16 = 16
