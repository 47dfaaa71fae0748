"""``torch._dynamo.exc``: the exception classes libraries catch around compiled code."""
from __future__ import annotations


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


class UserError(Unsupported):
    pass


class UncapturedHigherOrderOpError(TorchDynamoException):
    pass


class ObservedException(TorchDynamoException):
    pass


class RecompileError(TorchDynamoException):
    """A recompilation while ``config.error_on_recompile`` is set."""


class FailOnRecompileLimitHit(TorchDynamoException):
    """The recompile limit was hit while ``config.fail_on_recompile_limit_hit`` is set."""
