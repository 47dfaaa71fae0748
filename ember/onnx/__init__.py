"""``ember.onnx`` (``torch.onnx``): ``export`` writes a model as an ONNX file that onnxruntime (or any ONNX
runtime) runs, built with the ``onnx`` package (the optional extra ``ember[onnx]``); see ``docs/tools.md``."""
from __future__ import annotations

import enum

from ember.onnx import errors
from ember.onnx._exporter import export, is_in_onnx_export

__all__ = ["export", "is_in_onnx_export", "errors", "TrainingMode", "OperatorExportTypes"]


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
