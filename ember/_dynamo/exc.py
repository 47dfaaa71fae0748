"""``torch._dynamo.exc``: the exception classes libraries catch around compiled code."""
from __future__ import annotations

import enum
from typing import Any


class TorchDynamoException(RuntimeError):
    pass


class InternalTorchDynamoError(TorchDynamoException):
    pass


class CompileFallbackError(InternalTorchDynamoError):
    """A fallback of compilation under ``EMBER_COMPILE_STRICT=1`` (Note [Compile fallbacks] in utils.py)."""


class RestartAnalysis(TorchDynamoException):
    pass


class SkipFrame(TorchDynamoException):
    pass


class TorchRuntimeError(TorchDynamoException):
    pass


class InvalidBackend(TorchDynamoException):
    pass


class ResetRequired(TorchDynamoException):
    pass


class BackendCompilerFailed(TorchDynamoException):
    pass


class Unsupported(TorchDynamoException):
    def __init__(self, msg: str = "", *, case_name: str | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        self.case_name = case_name


class UserErrorType(enum.Enum):
    DYNAMIC_CONTROL_FLOW = enum.auto()
    ANTI_PATTERN = enum.auto()
    STANDARD_LIBRARY = enum.auto()
    CONSTRAINT_VIOLATION = enum.auto()
    DYNAMIC_DIM = enum.auto()
    INVALID_INPUT = enum.auto()
    INVALID_OUTPUT = enum.auto()
    UNSUPPORTED_ALIASED_MUTATED_DYNAMIC_INPUTS = enum.auto()


class UserError(Unsupported):
    """An error in how the program or the call was written (``export``'s checks, ``fullgraph`` breaks);
    ``UserError(error_type, msg)`` as PyTorch's, or ``UserError(msg)``."""

    def __init__(self, error_type: Any, msg: str = "", case_name: str | None = None) -> None:
        if not isinstance(error_type, UserErrorType):
            error_type, msg = None, str(error_type)
        super().__init__(msg, case_name=case_name)
        self.error_type = error_type


class UncapturedHigherOrderOpError(TorchDynamoException):
    pass


class ObservedException(TorchDynamoException):
    pass


class RecompileError(TorchDynamoException):
    """A recompilation while ``config.error_on_recompile`` is set."""


class FailOnRecompileLimitHit(TorchDynamoException):
    """The recompile limit was hit while ``config.fail_on_recompile_limit_hit`` is set."""
