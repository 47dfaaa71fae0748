"""``ember._dynamo.utils`` (``torch/_dynamo/utils.py``): the helpers libraries import from it."""
from __future__ import annotations

import collections
import logging
import os
from typing import Any, NamedTuple

from ember._dynamo import exc
from ember.c10.device import canonical


def is_compile_supported(device_type: Any) -> bool:
    """Whether ``ember.compile`` compiles for ``device_type`` ("cpu", "cuda", a device): the CPU always; CUDA when
    CuPy is installed (the generated code calls the same array kernels on its arrays)."""
    from ember._dynamo import is_dynamo_supported
    kind = canonical(device_type).type
    if kind == "cpu":
        return is_dynamo_supported()
    if kind == "cuda":
        import importlib.util
        return is_dynamo_supported() and importlib.util.find_spec("cupy") is not None
    return False



# Note [Compile fallbacks]
# Where compilation cannot do what it set out to do, ember takes a slower path that gives the eager result: a
# capture that raised on fake tensors runs the function eagerly (when the eager run succeeds, the failure was
# ember's), AOT autograd that gave up runs the captured graph through the dispatcher, a failed probe of a second
# size keeps one graph per size. None of these is an error, but each is a place where ember fell short, so each is
# recorded: counted in ``counters["fallbacks"]`` (PyTorch's ``torch._dynamo.utils.counters``), kept in
# ``recent_fallbacks`` with its cause and the user's source line, logged (a warning under ``EMBER_LOGS=fallbacks``,
# else at INFO), and with ``EMBER_COMPILE_STRICT=1`` raised as ``CompileFallbackError`` -- the test suite runs its
# compile tests that way.
def logs() -> set[str]:
    """The artifacts ``EMBER_LOGS`` (or PyTorch's ``TORCH_LOGS``) asks to print: graph_code, output_code, ..."""
    return {s.strip().lstrip("+") for s in os.environ.get("EMBER_LOGS", os.environ.get("TORCH_LOGS", "")).split(",")
            if s.strip()}


counters: collections.defaultdict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
recent_fallbacks: list[Fallback] = []
_log = logging.getLogger("ember._dynamo")


class Fallback(NamedTuple):
    kind: str       # "graph break", "AOT autograd", "dynamic sizes"
    cause: str
    where: str      # "file:line in function" of the user's code, or ""


def compile_strict() -> bool:
    """Whether ``EMBER_COMPILE_STRICT`` asks for every fallback to be an error."""
    return os.environ.get("EMBER_COMPILE_STRICT", "") not in ("", "0")


def record_fallback(kind: str, cause: str, where: str = "", error: BaseException | None = None) -> None:
    """Note [Compile fallbacks]: count, keep and log one fallback; raise it under ``EMBER_COMPILE_STRICT=1``."""
    fb = Fallback(kind, cause.split("\n")[0], where)
    counters["fallbacks"][kind] += 1
    recent_fallbacks.append(fb)
    del recent_fallbacks[:-100]
    text = f"{fb.kind}: {fb.cause}" + (f" (at {fb.where})" if fb.where else "")
    if compile_strict():
        raise exc.CompileFallbackError(f"compile fell back: {text}. EMBER_COMPILE_STRICT=1 makes every fallback "
                                       "an error.") from error
    _log.log(logging.WARNING if "fallbacks" in logs() else logging.INFO, "compile fell back: %s", text)
