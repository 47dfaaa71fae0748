"""The ``profiler::`` operators (``torch.ops.profiler``): a ``record_function`` range opened and closed as operator
calls, so that a traced graph can hold one (pytorch/examples' fx ``profiling_tracer.py`` records
``_record_function_enter`` / ``_record_function_exit`` nodes and runs the graph under the profiler).

``_record_function_enter`` answers an opaque handle tensor (uint8; PyTorch's holds the range's address), and
``_record_function_enter_new`` a ``_RecordFunction`` object; ``_record_function_exit`` takes either and closes the
range. The ranges are the ``record_function`` ranges of ``ember.autograd.profiler``: a profile records them as
``user_annotation`` events.
"""
from __future__ import annotations

import itertools
from typing import Any

import ember
from ember._python_arg_parser import SCRIPT_CLASSES
from ember.autograd import profiler as _profiler_module
from ember.autograd.profiler import record_function
from ember.library import Library

_lib = Library("profiler", "DEF")
_lib.define("_record_function_enter(str name, str? args=None) -> Tensor")
_lib.define("_record_function_enter_new(str name, str? args=None) -> __torch__.torch.classes.profiler._RecordFunction")
_lib.define("_record_function_exit(Tensor handle) -> ()")
_lib.define("_record_function_exit._RecordFunction(__torch__.torch.classes.profiler._RecordFunction record) -> ()")


class _RecordFunction:
    """An open range (what ``_record_function_enter_new`` answers)."""

    def __init__(self, rf: record_function) -> None:
        self.rf = rf

    def __repr__(self) -> str:
        return "ScriptObject <__torch__.torch.classes.profiler._RecordFunction>"


SCRIPT_CLASSES["__torch__.torch.classes.profiler._RecordFunction"] = _RecordFunction


_open_ranges: dict[int, record_function] = {}      # handle number -> its open range
_numbers = itertools.count(1)


def _enter(name: str, args: str | None = None) -> Any:
    rf = record_function(name, args)
    rf._open()
    n = next(_numbers)
    _open_ranges[n] = rf
    return ember.tensor(list(n.to_bytes(8, "little")), dtype=ember.uint8)


def _enter_new(name: str, args: str | None = None) -> _RecordFunction:
    rf = record_function(name, args)
    rf._open()
    return _RecordFunction(rf)


def _exit(handle: Any) -> None:
    if not isinstance(handle, ember.Tensor) or handle.dtype is not ember.uint8 or handle.numel() != 8:
        raise RuntimeError("_record_function_exit: the handle is not one _record_function_enter returned")
    rf = _open_ranges.pop(int.from_bytes(bytes(handle.tolist()), "little"), None)
    if rf is None:
        raise RuntimeError("_record_function_exit: the range of this handle is not open (closed twice?)")
    rf._close()


def _exit_record(record: _RecordFunction) -> None:
    record.rf._close()


_lib.impl("_record_function_enter", _enter, "CompositeExplicitAutograd")
_lib.impl("_record_function_enter_new", _enter_new, "CompositeExplicitAutograd")
_lib.impl("_record_function_exit", _exit, "CompositeExplicitAutograd")
_lib.impl("_record_function_exit._RecordFunction", _exit_record, "CompositeExplicitAutograd")

_profiler_module._ops_route[:] = [ember.ops.profiler._record_function_enter_new,
                                  ember.ops.profiler._record_function_exit._RecordFunction]
