"""``torch.autograd.profiler``: the recorder under both profiler APIs, ``record_function``, and the legacy
``profile`` context manager (``ember.profiler.profile`` is the current one).

Note [RecordFunction]
PyTorch times every operator call at the dispatcher (``RecordFunction``), and autograd and the optimizers open
ranges of their own. ember does the same in three places:

- the dispatcher: while a profiler records, ``OperatorHandle.call`` -- the entry of every operator call, which
  the generated bindings and every kernel that calls another operator go through -- is replaced by a version
  that opens an ``aten::<name>`` range around the call (``redispatch``, the step from one dispatch key to the
  next inside one call, is not a new range, as in PyTorch). When no profiler records, the class has its plain
  method back: an operator call costs exactly what it costs without a profiler (no flag is even read);
- the autograd engine: each node it runs is ``autograd::engine::evaluate_function: <Node>`` around the node's
  own range ``<Node>`` (``AddmmBackward0``, ``torch::autograd::AccumulateGrad``); there it reads one module
  global per node;
- ``Optimizer.step`` / ``zero_grad``: ``Optimizer.step#SGD.step``, ``Optimizer.zero_grad#SGD.zero_grad``; and
  ``record_function`` blocks, ``ProfilerStep#<n>`` of ``profiler.step()``.

Ranges nest per thread: a range's parent is the one open on its thread when it starts. With ``record_shapes`` each
operator range keeps its arguments' shapes (``[]`` for what is not a tensor); with ``profile_memory`` the bytes of
each tensor an operator returns that owns fresh memory count for that operator, and the bytes of a profiled tensor
freed while a range is open count against that range; with ``with_stack`` the caller's Python frames outside ember;
with ``with_flops`` PyTorch's FLOP formulas: 2 M K N for ``mm`` / ``addmm`` (times the batch for ``bmm`` /
``baddbmm``), 2 N H_out W_out C_out C_in/groups k_h k_w for a 2-d ``convolution`` (PyTorch counts it on
``aten::conv2d``, which is not an operator of ember's), and the first argument's element count for ``mul`` /
``add``.
"""
from __future__ import annotations

import enum
import itertools
import sys
import threading
import time
import weakref
from typing import Any, Callable

from ember.aten import torch_function as _torch_function
from ember.autograd.profiler_util import EventList, FunctionEvent, FunctionEventAvg  # noqa: F401
from ember.c10.tensor_impl import TensorImpl as Tensor

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "kineto_available",
           "ProfilerActivity"]

recorder: _Recorder | None = None        # the recording profiler; read by the engine and the optimizers
_plain_call: Any = None                   # OperatorHandle.call while it is replaced


class ProfilerActivity(enum.Enum):
    """What a profile records (``torch.profiler.ProfilerActivity``): CPU ranges (operators, user annotations);
    device activities need the device's tracing library, which ember does not have."""
    CPU = 0
    XPU = 1
    MTIA = 2
    CUDA = 3
    HPU = 4
    PrivateUse1 = 5


def kineto_available() -> bool:
    """Whether the trace-producing profiler is there (ember's own exporter writes the traces)."""
    return True


class _Recorder:
    """Collects the ranges of one recording window (Note [RecordFunction])."""

    def __init__(self, record_shapes: bool = False, profile_memory: bool = False, with_stack: bool = False,
                 with_flops: bool = False) -> None:
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.events: list[FunctionEvent] = []
        self._ids = itertools.count(1)
        self._local = threading.local()
        self._tracked: set[int] = set()
        self.base_ns = time.time_ns() - time.perf_counter_ns()    # perf_counter to the epoch

    def _stack(self) -> list[FunctionEvent]:
        s = getattr(self._local, "stack", None)
        if s is None:
            s = self._local.stack = []
        return s

    def _now_us(self) -> float:
        return (time.perf_counter_ns() + self.base_ns) / 1000.0

    def enter(self, name: str, args: tuple[Any, ...] | None = None, category: str = "cpu_op",
              overload: str = "") -> FunctionEvent:
        shapes: list[Any] | None = None
        types: list[str] | None = None
        if args is not None and (self.record_shapes or self.with_flops):
            shapes, types = _shapes(args)
        ev = FunctionEvent(next(self._ids), name, threading.get_native_id(), self._now_us(), 0.0,
                           input_shapes=shapes if self.record_shapes else None,
                           stack=_python_stack() if self.with_stack and category == "cpu_op" else None,
                           flops=_flops(name, shapes, args) if self.with_flops and shapes is not None else 0,
                           category=category, overload_name=overload,
                           input_types=types if self.record_shapes else None)
        stack = self._stack()
        if stack:
            ev.cpu_parent = stack[-1]
        stack.append(ev)
        return ev

    def exit(self, ev: FunctionEvent, out: Any = None, args: tuple[Any, ...] = ()) -> None:
        if self.profile_memory and out is not None:
            self._allocated(ev, out, args)
        ev.end_us = self._now_us()
        stack = self._stack()
        while stack and stack[-1] is not ev:        # a range left open by an exception inside it
            stack.pop()
        if stack:
            stack.pop()
        ev.cpu_memory_usage = ev.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in ev.cpu_children)
        if ev.cpu_parent is not None:
            ev.cpu_parent.cpu_children.append(ev)
        self.events.append(ev)

    def _allocated(self, ev: FunctionEvent, out: Any, args: tuple[Any, ...]) -> None:
        """Count the fresh memory of the tensors an operator returns, once each, and watch for its release."""
        outs = out if isinstance(out, (tuple, list)) else (out,)
        inputs = {id(a) for a in args if isinstance(a, Tensor)}
        for t in outs:
            if not isinstance(t, Tensor) or id(t) in inputs or id(t) in self._tracked:
                continue
            arr = t._data
            if getattr(arr, "base", None) is not None or not hasattr(arr, "nbytes"):
                continue                              # a view: no memory of its own
            nbytes = int(arr.nbytes)
            self._tracked.add(id(t))
            ev.self_cpu_memory_usage += nbytes
            weakref.finalize(t, self._freed, nbytes, id(t))

    def _freed(self, nbytes: int, key: int) -> None:
        self._tracked.discard(key)
        if recorder is not self:
            return
        stack = self._stack()
        if stack:
            stack[-1].self_cpu_memory_usage -= nbytes

    def close_open(self) -> None:
        """End the ranges still open on this thread (a window that ends inside a ``record_function`` block)."""
        stack = self._stack()
        while stack:
            self.exit(stack[-1])


def _shapes(args: tuple[Any, ...]) -> tuple[list[Any], list[str]]:
    shapes: list[Any] = []
    types: list[str] = []
    for a in args:
        if isinstance(a, Tensor):
            shapes.append(list(a.shape))
            types.append(a.dtype.name.replace("float32", "float").replace("int64", "long"))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(x, Tensor) for x in a):
            shapes.append([])                     # PyTorch records no shapes for a list of tensors
            types.append("TensorList")
        else:
            shapes.append([])
            types.append("Scalar" if isinstance(a, (int, float, bool)) else "")
    return shapes, types


def _flops(name: str, shapes: list[Any], args: Any) -> int:
    """PyTorch's FLOP counts (``torch/csrc/profiler/util.cpp``), Note [RecordFunction]."""
    def numel(s: Any) -> int:
        n = 1
        for d in s:
            n *= int(d)
        return n
    try:
        if name in ("aten::mm", "aten::addmm"):
            a, b = (shapes[0], shapes[1]) if name == "aten::mm" else (shapes[1], shapes[2])
            return int(2 * a[0] * a[1] * b[1])
        if name in ("aten::bmm", "aten::baddbmm"):
            a, b = (shapes[0], shapes[1]) if name == "aten::bmm" else (shapes[1], shapes[2])
            return int(2 * a[0] * a[1] * a[2] * b[2])
        if name in ("aten::mul", "aten::add"):
            return numel(shapes[0]) if shapes[0] else 0
        if name == "aten::convolution" and len(shapes[0]) == 4 and not args[6]:
            (n, _, h, w), (co, ci, kh, kw) = shapes[0], shapes[1]
            stride, padding, dilation = args[3], args[4], args[5]
            oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
            ow = (w + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
            return int(2 * n * oh * ow * co * ci * kh * kw)
    except (IndexError, TypeError, ValueError):
        return 0
    return 0


def _python_stack() -> list[str]:
    """The calling Python frames outside ember, innermost first, as ``file(line): function``."""
    import os
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep     # ember's own directory
    out = []
    f: Any = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(pkg):
            out.append(f"{name}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


def _profiled_call(self: Any, ks: int, *args: Any) -> Any:
    """``OperatorHandle.call`` while a profiler records: the call inside an ``aten::<name>`` range."""
    rec = recorder
    if rec is None or self.namespace == "profiler":     # the record_function operators are not ranges themselves
        return _plain_call(self, ks, *args)
    ev = rec.enter(f"{self.namespace}::{self.name}", args, overload=self.overload_name)
    out = None
    try:
        out = _plain_call(self, ks, *args)
        return out
    finally:
        rec.exit(ev, out, args)


def _start(rec: _Recorder) -> None:
    """Make ``rec`` the recording profiler (one at a time, as in PyTorch) and route operator calls through it."""
    global recorder, _plain_call
    from ember.aten.dispatcher import OperatorHandle
    if recorder is not None:
        raise RuntimeError("Profiler is already enabled on this thread")
    if _plain_call is None:
        _plain_call = OperatorHandle.call
        OperatorHandle.call = _profiled_call      # type: ignore[method-assign]
    recorder = rec


def _stop() -> None:
    """Stop recording and give operator calls their plain entry back."""
    global recorder, _plain_call
    from ember.aten.dispatcher import OperatorHandle
    rec, recorder = recorder, None
    if rec is not None:
        rec.close_open()
    if _plain_call is not None:
        OperatorHandle.call = _plain_call         # type: ignore[method-assign]
        _plain_call = None


# (``_record_function_enter_new``, ``_record_function_exit._RecordFunction``): the operators, once the frontend
# has defined them (``ember/profiler/_ops.py``)
_ops_route: list[Any] = []


class record_function:
    """A labelled range in the profile (``with record_function("forward"):`` or as a decorator); nothing when no
    profiler records. With a torch function mode active the range is opened and closed through the ``profiler::``
    operators (``ember/profiler/_ops.py``), so that the mode sees the calls PyTorch's sees."""

    def __init__(self, name: str, args: str | None = None) -> None:
        self.name = name
        self.args = args
        self.record: Any = None
        self._ev: FunctionEvent | None = None
        self._rec: _Recorder | None = None

    def __enter__(self) -> record_function:
        if _torch_function._modes and not _torch_function._disabled[1] and _ops_route:
            self.record = _ops_route[0](self.name, self.args)
        else:
            self._open()
        return self

    def __exit__(self, *exc: Any) -> None:
        record, self.record = self.record, None
        if record is not None:
            _ops_route[1](record)
        else:
            self._close()

    def _open(self) -> None:
        rec = recorder
        if rec is not None:
            self._rec, self._ev = rec, rec.enter(self.name, category="user_annotation")
            if self.name.startswith("ProfilerStep#"):     # summaries add the steps up under one name
                self._ev.trace_name, self._ev.name = self.name, "ProfilerStep*"

    def _close(self) -> None:
        if self._ev is not None and self._rec is not None and self._rec is recorder:
            self._rec.exit(self._ev)
        self._ev = self._rec = None

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with record_function(self.name, self.args):
                return fn(*args, **kwargs)
        return wrapper


class _Range:
    """A range opened on ``rec`` for a ``with`` block (the engine's ranges around and inside a node)."""

    def __init__(self, rec: _Recorder, name: str, args: tuple[Any, ...] | None = None) -> None:
        self.rec, self.name, self.args = rec, name, args

    def __enter__(self) -> None:
        self.ev = self.rec.enter(self.name, self.args)

    def __exit__(self, *exc: Any) -> None:
        if self.rec is recorder:
            self.rec.exit(self.ev)


def _node_apply(node: Any, grads: Any, name: str) -> Any:
    """``node.apply(grads)`` inside the node's own range (its name, the incoming gradients' shapes)."""
    rec = recorder
    if rec is None:
        return node.apply(grads)
    with _Range(rec, name, tuple(grads)):
        return node.apply(grads)


class profile:
    """The legacy profiler (``torch.autograd.profiler.profile``): records CPU ranges while the block runs;
    ``function_events``, ``key_averages()``, ``table()``, ``export_chrome_trace()``, ``total_average()``,
    ``self_cpu_time_total`` after it."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config: Any = None, acc_events: bool = False,
                 custom_trace_id_callback: Any = None) -> None:
        self.enabled = enabled
        if not enabled:
            return
        if use_cuda:
            import warnings
            warnings.warn("The attribute `use_cuda` will be deprecated soon, please use ``use_device = 'cuda'`` "
                          "instead.", FutureWarning, stacklevel=2)
        self.use_device = "cuda" if use_cuda else use_device
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.entered = False
        self.function_events: EventList | None = None
        self._rec: _Recorder | None = None
        self._collected: list[FunctionEvent] = []

    def __enter__(self) -> profile:
        if not self.enabled:
            return self
        if self.entered:
            raise RuntimeError("Profiler context manager is not reentrant")
        self.entered = True
        self._start_trace()
        return self

    def _start_trace(self) -> None:
        self._rec = _Recorder(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops)
        _start(self._rec)

    def __exit__(self, *exc: Any) -> None:
        if not self.enabled:
            return
        self._stop_trace()
        self.entered = False

    def _stop_trace(self) -> None:
        if self._rec is None:
            return
        if recorder is self._rec:
            _stop()
        events = list(self._rec.events)
        self._collected = self._collected + events if self.acc_events else events
        self.function_events = EventList(sorted(self._collected, key=lambda e: (e.start_us, -e.end_us)),
                                         use_device=self.use_device, profile_memory=self.profile_memory,
                                         with_flops=self.with_flops)

    def _check_finish(self) -> None:
        if self.function_events is None:
            raise RuntimeError("Profiler didn't finish running")

    def __repr__(self) -> str:
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return repr(self.function_events)

    def __str__(self) -> str:
        if self.function_events is None:
            return "<unfinished torch.autograd.profile>"
        return self.table()

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path: str) -> None:
        from ember.autograd.profiler_util import write_chrome_trace
        self._check_finish()
        assert self.function_events is not None and self._rec is not None
        write_chrome_trace(path, list(self.function_events), self._rec.base_ns, record_shapes=self.record_shapes)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        self._check_finish()
        assert self.function_events is not None
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.function_events.export_stacks(path, metric)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def total_average(self) -> FunctionEventAvg:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        self._check_finish()
        assert self.function_events is not None
        return self.function_events.self_cpu_time_total
