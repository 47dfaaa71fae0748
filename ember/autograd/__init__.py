"""``ember.autograd`` (mirrors ``torch/autograd/__init__.py``): ``backward``, ``grad``, grad modes,
custom ``Function``, ``gradcheck`` and the graph classes."""
from __future__ import annotations

from typing import Any

from ember.c10 import compile_state as _cs
from ember._generated import aten
from ember.aten.wrap import tensor_like
from ember.c10.memory_format import preserve_format
from ember.aten.torch_function import handle_torch_function, has_torch_function, is_tensor_like  # noqa: F401
from ember.autograd import anomaly_mode, graph  # noqa: F401
from ember.autograd.graph import SavedTensor  # noqa: F401
from ember.autograd.anomaly_mode import detect_anomaly, is_anomaly_enabled, set_detect_anomaly  # noqa: F401
from ember.autograd.engine import is_checkpoint_valid as _is_checkpoint_valid  # noqa: F401
from ember.autograd.engine import run_backward
from ember.autograd.function import Function, FunctionCtx, once_differentiable  # noqa: F401
from ember.autograd.grad_mode import (  # noqa: F401
    is_multithreading_enabled,
    is_view_replay_enabled,
    set_multithreading_enabled,
    enable_grad,
    enforce_grad_layout_policy,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd.visualize import graph_dot, graph_text, render_graph  # noqa: F401
from ember.c10.tensor_impl import TensorImpl


def _tensor_list(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _make_grads(outputs: Any, grad_outputs: Any, is_grads_batched: Any = False) -> Any:
    out: list[Any] = []
    grad_outputs = grad_outputs if grad_outputs is not None else [None] * len(outputs)
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one gradient per output: got {len(grad_outputs)} gradients for "
                           f"{len(outputs)} outputs")
    for t, g in zip(outputs, grad_outputs):
        if g is None:
            if t.requires_grad:
                if t.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not t.dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got "
                                       f"{t.dtype}")
                g = aten.ones_like(t, pin_memory=False, memory_format=preserve_format)
        elif not isinstance(g, TensorImpl):
            g = tensor_like(g, t)
        elif tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{len(out)}] has a shape of {tuple(g.shape)} and "
                               f"output[{len(out)}] has a shape of {tuple(t.shape)}.".replace("(", "torch.Size([")
                               .replace(")", "])"))
        out.append(g)
    return out


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: Any = None, create_graph: Any = False,
             grad_variables: Any = None, inputs: Any = None) -> None:
    """Accumulate the gradients of ``tensors`` into the ``.grad`` of the leaves of their graph."""
    capture = _cs.state.capturing
    if capture is not None:
        capture.backward_started(bool(create_graph))
    if grad_variables is not None:
        grad_tensors = grad_variables
    tensors = _tensor_list(tensors)
    grads = _make_grads(tensors, _tensor_list(grad_tensors))
    if retain_graph is None:
        retain_graph = create_graph
    inputs = _tensor_list(inputs)
    if inputs is not None and len(inputs) == 0:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    run_backward(tensors, grads, retain_graph, create_graph, inputs, allow_unused=True, accumulate_grad=True)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: Any = None, create_graph: Any = False,
         only_inputs: Any = True, allow_unused: Any = None, is_grads_batched: Any = False,
         materialize_grads: Any = False) -> Any:
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is accumulated into ``.grad``)."""
    _cs.graph_break("autograd.grad()", "A compiled region ran autograd.grad; the graph ends before it.")
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
                         "allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _tensor_list(outputs)
    inputs = _tensor_list(inputs)
    grads = _make_grads(outputs, _tensor_list(grad_outputs))
    if retain_graph is None:
        retain_graph = create_graph
    res = run_backward(outputs, grads, retain_graph, create_graph, inputs, allow_unused, accumulate_grad=False)
    if materialize_grads:
        res = [aten.zeros_like(i) if r is None else r for r, i in zip(res, inputs)]
    return tuple(res)


class _ImperativeEngine:
    """``Variable._execution_engine``: what code outside autograd asks of the engine."""

    @staticmethod
    def queue_callback(callback: Any) -> None:
        from ember.autograd.engine import queue_callback
        queue_callback(callback)


class Variable:
    """Deprecated alias kept for old code: ``Variable(t)`` returns ``t``."""

    _execution_engine = _ImperativeEngine()

    def __new__(cls, data: Any, requires_grad: Any = False) -> Any:
        if requires_grad:
            data.requires_grad_(True)
        return data


# after backward and grad: these modules use them
from ember.autograd import functional  # noqa: E402,F401
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402,F401


def variable(*args: Any, **kwargs: Any) -> Any:
    """The long-deprecated ``torch.autograd.variable(...)``: refused with PyTorch's message."""
    raise RuntimeError("torch.autograd.variable(...) is deprecated, use torch.tensor(...) instead")
from ember.autograd import profiler, profiler_util  # noqa: E402,F401
from ember.autograd.profiler import ProfilerActivity, kineto_available  # noqa: E402,F401
