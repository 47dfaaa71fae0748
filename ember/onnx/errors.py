"""The exporter's errors (``torch.onnx.errors``)."""
from __future__ import annotations

__all__ = ["OnnxExporterError", "UnsupportedOperatorError"]


class OnnxExporterError(RuntimeError):
    """The model cannot be exported as asked."""


class UnsupportedOperatorError(OnnxExporterError):
    """An ATen operator of the model has no ONNX translation: the message names it and the model's source line."""

    def __init__(self, name: str, version: int, supported_version: int | None = None, where: str = "") -> None:
        msg = f"Exporting the operator '{name}' to ONNX opset version {version} is not supported."
        if supported_version is not None:
            msg += f" Support for this operator was added in version {supported_version}, try exporting with this " \
                   "version."
        if where:
            msg += f" It is called at {where}."
        super().__init__(msg)
