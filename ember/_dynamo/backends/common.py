"""``torch._dynamo.backends.common``: what a custom backend is built from.

``aot_autograd(fw_compiler=..., bw_compiler=...)`` makes a backend that splits the captured graph into a forward
and a backward graph (Note [AOT autograd] in ``ember/_functorch/aot_autograd.py``) and hands each to the given
compiler, as PyTorch's does; the compilers receive ATen graphs and example inputs and return callables.
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["aot_autograd", "AotAutograd", "device_from_inputs", "dtype_from_inputs"]


class AotAutograd:
    """A backend (``gm, example_inputs -> callable``) compiling the forward and backward graphs of AOT autograd
    with ``fw_compiler`` / ``bw_compiler`` (``inference_compiler`` for graphs that need no gradient)."""

    def __init__(self, **kwargs: Any) -> None:
        if "fw_compiler" not in kwargs:
            raise TypeError("aot_autograd() missing required keyword argument 'fw_compiler'")
        self.kwargs = kwargs

    def __call__(self, gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
        from ember._dynamo.output_graph import lower_to_aten
        gm, example_inputs, adapt = lower_to_aten(gm, example_inputs)    # a torch-level graph: traced to ATen
        return adapt(self._compile(gm, example_inputs))

    def _compile(self, gm: Any, example_inputs: Any) -> Callable[..., Any]:
        from ember._functorch.aot_autograd import aot_module_simplified
        from ember._inductor.compile_fx import needs_autograd
        fw = self.kwargs["fw_compiler"]
        bw = self.kwargs.get("bw_compiler") or fw
        if not needs_autograd(gm):
            inference = self.kwargs.get("inference_compiler") or fw
            return inference(gm, list(example_inputs))      # type: ignore[no-any-return]
        run = aot_module_simplified(gm, list(example_inputs), fw, bw)
        if run is None:
            raise NotImplementedError("aot_autograd: a graph that aliases or writes its inputs cannot be split into "
                                      "forward and backward graphs by ember yet")
        return run


def aot_autograd(**kwargs: Any) -> AotAutograd:
    """A backend that compiles AOT autograd's forward and backward graphs (``fw_compiler``, ``bw_compiler``,
    ``inference_compiler``; ``decompositions`` and ``partition_fn`` are accepted)."""
    return AotAutograd(**kwargs)


def device_from_inputs(example_inputs: Any) -> Any:
    """The device of the first tensor among the inputs."""
    for x in example_inputs:
        if hasattr(x, "device"):
            return x.device
    return None


def dtype_from_inputs(example_inputs: Any) -> Any:
    """The dtype of the first tensor among the inputs."""
    for x in example_inputs:
        if hasattr(x, "dtype"):
            return x.dtype
    return None
