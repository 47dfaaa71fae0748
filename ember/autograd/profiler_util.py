"""The profiler's events and their summaries (``torch/autograd/profiler_util.py``): :class:`FunctionEvent` (one
timed range: an operator call, a ``record_function`` block, an autograd node, an optimizer step),
:class:`FunctionEventAvg` (events of one name, and input shapes or stack if grouped by them, added up),
:class:`EventList` with ``key_averages``, ``table`` (PyTorch's layout, column for column) and
``export_chrome_trace`` (the Chrome trace-event JSON that Perfetto and chrome://tracing open).

Times are microseconds, as PyTorch keeps them. An event's total time is its duration; its self time is that minus
the total times of the events directly inside it. Memory is bytes: an event's ``cpu_memory_usage`` is what was
allocated minus what was freed while it ran (its children included), ``self_cpu_memory_usage`` the same without
its children."""
from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from typing import Any, NamedTuple

__all__ = ["FunctionEvent", "FunctionEventAvg", "EventList"]


def _format_time(time_us: float) -> str:
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


def _format_time_share(time_us: float, total_time_us: float) -> str:
    if total_time_us == 0:
        if time_us != 0:
            raise AssertionError(f"Expected time_us == 0 but got {time_us}")
        return "NaN"
    return f"{time_us * 100.0 / total_time_us:.2f}%"


def _format_memory(nbytes: int) -> str:
    kb, mb, gb = 1024, 1024 ** 2, 1024 ** 3
    if abs(nbytes) >= gb:
        return f"{nbytes * 1.0 / gb:.2f} GB"
    if abs(nbytes) >= mb:
        return f"{nbytes * 1.0 / mb:.2f} MB"
    if abs(nbytes) >= kb:
        return f"{nbytes * 1.0 / kb:.2f} KB"
    return str(nbytes) + " B"


class Interval(NamedTuple):
    """An event's time range, microseconds."""
    start: float
    end: float
    elapsed_us: float


class _Times:
    """The ``*_str`` forms of the times and ``cpu_time`` (the average over calls)."""

    cpu_time_total: float
    self_cpu_time_total: float
    count: int

    @property
    def cpu_time(self) -> float:
        return 0.0 if self.count == 0 else self.cpu_time_total / self.count

    @property
    def cpu_time_str(self) -> str:
        return _format_time(self.cpu_time)

    @property
    def cpu_time_total_str(self) -> str:
        return _format_time(self.cpu_time_total)

    @property
    def self_cpu_time_total_str(self) -> str:
        return _format_time(self.self_cpu_time_total)

    # the device columns exist for PyTorch's API; without a GPU profiler they stay zero
    device_time_total = self_device_time_total = 0.0
    device_memory_usage = self_device_memory_usage = 0
    cuda_time_total = self_cuda_time_total = 0.0

    @property
    def device_time(self) -> float:
        return 0.0


class FunctionEvent(_Times):
    """One profiled range. ``cpu_parent`` / ``cpu_children`` are the ranges around / directly inside it on its
    thread; ``input_shapes`` (with ``record_shapes``) one list per argument (a tensor's shape, ``[]`` for anything
    else); ``stack`` (with ``with_stack``) the Python frames that called it, innermost first, as ``file(line):
    function``; ``flops`` (with ``with_flops``) the floating-point operations of a matrix product, convolution,
    addition or multiplication."""

    def __init__(self, id: int, name: str, thread: int, start_us: float, end_us: float,  # noqa: A002
                 input_shapes: list[Any] | None = None, stack: list[str] | None = None, flops: int = 0,
                 category: str = "cpu_op", sequence_nr: int = -1, overload_name: str = "",
                 concrete_inputs: list[Any] | None = None, input_types: list[str] | None = None) -> None:
        self.id = id
        self.node_id = -1
        self.name = name
        self.trace_name: str | None = None     # the name in traces, where it differs (``ProfilerStep#3``)
        self.overload_name = overload_name
        self.thread = thread
        self.fwd_thread = 0
        self.start_us = start_us
        self.end_us = end_us
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_types = input_types if input_types is not None else []
        self.concrete_inputs = concrete_inputs if concrete_inputs is not None else []
        self.stack = stack if stack is not None else []
        self.flops = flops
        self.category = category
        self.sequence_nr = sequence_nr
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.count = 1
        self.is_async = False
        self.is_legacy = False
        self.is_user_annotation = category == "user_annotation"
        self.device_type = "CPU"
        self.use_device = None
        self.scope = 0
        self.kernels: list[Any] = []

    @property
    def key(self) -> str:
        return self.name

    @property
    def time_range(self) -> Interval:
        return Interval(self.start_us, self.end_us, self.end_us - self.start_us)

    @property
    def cpu_time_total(self) -> float:  # type: ignore[override]
        return self.end_us - self.start_us

    @property
    def self_cpu_time_total(self) -> float:  # type: ignore[override]
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    def append_cpu_child(self, child: FunctionEvent) -> None:
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent: FunctionEvent) -> None:
        self.cpu_parent = parent

    def __repr__(self) -> str:
        return (f"<FunctionEvent id={self.id} name={self.name} overload_name={self.overload_name} "
                f"cpu_time={self.cpu_time_str} start_us={self.start_us} end_us={self.end_us} "
                f"cpu_children={[c.id for c in self.cpu_children]} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage} is_async={self.is_async} thread={self.thread}>")


class FunctionEventAvg(_Times):
    """Events added up: counts, times, memory and FLOPs summed."""

    def __init__(self) -> None:
        self.key: str | None = None
        self.count = 0
        self.node_id = 0
        self.is_async = False
        self.is_legacy = False
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.input_shapes: Any = None
        self.overload_name: str | None = None
        self.stack: list[str] | None = None
        self.scope: int | None = None
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.cpu_parent: Any = None
        self.device_type = "CPU"
        self.is_user_annotation = False
        self.use_device = None
        self.flops = 0

    def add(self, other: Any) -> FunctionEventAvg:
        if self.key is None:
            self.key = other.key
            self.node_id = other.node_id
            self.is_async = other.is_async
            self.cpu_parent = other.cpu_parent
            self.input_shapes = other.input_shapes
            self.overload_name = other.overload_name
            self.stack = other.stack
            self.scope = other.scope
            self.device_type = other.device_type
            self.is_user_annotation = other.is_user_annotation
        if not isinstance(other, (FunctionEvent, FunctionEventAvg)):
            raise AssertionError("Expected other to be a FunctionEvent or FunctionEventAvg")
        if other.key != self.key:
            raise AssertionError(f"Expected keys to match, but got {other.key} vs {self.key}")
        return self._accumulate(other)

    def _accumulate(self, other: Any) -> FunctionEventAvg:
        """Add ``other``'s times, memory, calls and FLOPs."""
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.count += other.count
        self.flops += other.flops
        return self

    def __iadd__(self, other: Any) -> FunctionEventAvg:
        return self.add(other)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total_str} "
                f"cpu_time={self.cpu_time_str}  input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


class EventList(list):  # type: ignore[type-arg]
    """A list of events with PyTorch's summaries."""

    def __init__(self, *args: Any, use_device: str | None = None, profile_memory: bool = False,
                 with_flops: bool = False) -> None:
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops

    @property
    def self_cpu_time_total(self) -> float:
        return float(sum(e.self_cpu_time_total for e in self))

    def table(self, sort_by: str | None = None, row_limit: int = 100, max_src_column_width: int = 75,
              max_name_column_width: int = 55, max_shapes_column_width: int = 80, header: str | None = None,
              top_level_events_only: bool = False, time_unit: str | None = None) -> str:
        """The events as PyTorch's text table, sorted by ``sort_by`` (an attribute: ``cpu_time_total``,
        ``self_cpu_time_total``, ``cpu_memory_usage``, ``count``, ``flops``...) in decreasing order."""
        return _build_table(self, sort_by=sort_by, header=header, row_limit=row_limit,
                            max_src_column_width=max_src_column_width, max_name_column_width=max_name_column_width,
                            max_shapes_column_width=max_shapes_column_width, with_flops=self._with_flops,
                            profile_memory=self._profile_memory, top_level_events_only=top_level_events_only,
                            time_unit=time_unit)

    def key_averages(self, group_by_input_shapes: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Events of one name added up (and of one input-shape list / innermost ``group_by_stack_n`` frames / overload
        when asked), in order of first appearance."""
        stats: dict[tuple[Any, ...], FunctionEventAvg] = defaultdict(FunctionEventAvg)
        for evt in self:
            key: tuple[Any, ...] = (evt.key, evt.node_id)
            if group_by_input_shapes:
                key += (str(evt.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(evt.stack[:group_by_stack_n])
            if group_by_overload_name:
                key += (evt.overload_name,)
            stats[key].add(evt)
        avg_list = EventList(stats.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                             with_flops=self._with_flops)
        for evt in avg_list:
            evt.stack = evt.stack[:group_by_stack_n] if evt.stack else []
            if not group_by_input_shapes:
                evt.input_shapes = ""
            if not group_by_overload_name:
                evt.overload_name = ""
        return avg_list

    def total_average(self) -> FunctionEventAvg:
        total = FunctionEventAvg()
        for evt in self:
            total._accumulate(evt)
        total.key = "Total"
        return total

    def export_chrome_trace(self, path: str) -> None:
        """The events as Chrome trace-event JSON: one complete ("X") event per range on its thread's track, with
        the metadata events that name the process and threads."""
        write_chrome_trace(path, list(self), base_ns=0)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        """One line per event with a stack: ``frame;frame;...;name value`` (flame-graph input), outermost frame
        first, the metric in microseconds."""
        with open(path, "w") as f:
            for evt in self:
                if evt.stack:
                    frames = ";".join(reversed([s.replace(" ", "_") for s in evt.stack]))
                    f.write(f"{frames};{evt.name} {int(getattr(evt, metric))}\n")


def write_chrome_trace(path: str, events: list[FunctionEvent], base_ns: int, host_name: str = "",
                       record_shapes: bool = False) -> None:
    """The trace file PyTorch's (Kineto's) exporter writes, CPU part: ``traceEvents`` with metadata events naming
    the process and each thread, then one "X" event per range (category ``cpu_op`` for operators,
    ``user_annotation`` for ``record_function`` blocks and profiler steps), ``ts`` / ``dur`` in microseconds; a
    ``.gz`` path is gzip-compressed."""
    pid = os.getpid()
    first_ts = min((e.start_us for e in events), default=0.0)
    trace: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "ts": first_ts, "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"ph": "M", "name": "process_labels", "ts": first_ts, "pid": pid, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_sort_index", "ts": first_ts, "pid": pid, "tid": 0, "args": {"sort_index": pid}}]
    for tid in sorted({e.thread for e in events}):
        trace.append({"ph": "M", "name": "thread_name", "ts": first_ts, "pid": pid, "tid": tid,
                      "args": {"name": f"thread {tid} (python)"}})
        trace.append({"ph": "M", "name": "thread_sort_index", "ts": first_ts, "pid": pid, "tid": tid,
                      "args": {"sort_index": tid}})
    for i, e in enumerate(sorted(events, key=lambda e: (e.start_us, -e.end_us))):
        args: dict[str, Any] = {"External id": e.id, "Record function id": 0}
        if e.category == "cpu_op":
            args["Sequence number"] = max(e.sequence_nr, 0)
            args["Fwd thread id"] = e.fwd_thread
            if e.input_shapes:
                args["Concrete Inputs"] = e.concrete_inputs or [""] * len(e.input_shapes)
                args["Input type"] = e.input_types or [""] * len(e.input_shapes)
                args["Input Dims"] = e.input_shapes
        args["Ev Idx"] = i
        trace.append({"ph": "X", "cat": e.category, "name": e.trace_name or e.name, "pid": pid, "tid": e.thread,
                      "ts": round(e.start_us, 3), "dur": round(e.end_us - e.start_us, 3), "args": args})
    doc = {"schemaVersion": 1, "deviceProperties": [], "record_shapes": int(record_shapes), "host_name": host_name,
           "displayTimeUnit": "ms", "baseTimeNanoseconds": base_ns, "traceEvents": trace, "traceName": path}
    data = json.dumps(doc, indent=1).encode()
    tmp = path + ".tmp"
    if path.endswith(".gz"):
        import gzip
        with gzip.open(tmp, "wb") as f:
            f.write(data)
    else:
        with open(tmp, "wb") as f:
            f.write(data)
    os.replace(tmp, path)


def _build_table(events: Any, sort_by: str | None = None, header: str | None = None, row_limit: int = 100,
                 max_src_column_width: int = 75, max_name_column_width: int = 55, max_shapes_column_width: int = 80,
                 with_flops: bool = False, profile_memory: bool = False, top_level_events_only: bool = False,
                 time_unit: str | None = None) -> str:
    """PyTorch's table: a name column (at most ``max_name_column_width`` wide), then 12-wide columns of self and
    total CPU time with their shares of the summed self time, the average, memory (``profile_memory``), the call
    count, input shapes (when recorded), FLOPs scaled to one unit (``with_flops``) and the source location (with
    stacks), each column separated by two spaces, and the summed self CPU time at the foot."""
    if len(events) == 0:
        return ""
    has_input_shapes = any(e.input_shapes is not None and len(e.input_shapes) > 0 for e in events)
    has_overload_names = any(e.overload_name is not None and len(e.overload_name) > 0 for e in events)
    if sort_by is not None:
        events = EventList(sorted(events, key=lambda e: getattr(e, sort_by.replace("cuda", "device")),
                                  reverse=True), profile_memory=profile_memory, with_flops=with_flops)
    name_width = max(len(e.key) for e in events) + 4
    if max_name_column_width is not None:
        name_width = min(name_width, max_name_column_width)
    shapes_width = max(len(str(e.input_shapes)) for e in events) + 4
    if max_shapes_column_width is not None:
        shapes_width = min(shapes_width, max_shapes_column_width)
    width = 12
    stacks = [e.stack for e in events if e.stack is not None and len(e.stack) > 0]
    src_width = None
    if stacks:
        src_width = max(max(len(s) for s in stack) for stack in stacks) + 4
        if max_src_column_width is not None:
            src_width = min(src_width, max_src_column_width)
    headers = ["Name"] + (["Overload Name"] if has_overload_names else []) + [
        "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
    headers.append("# of Calls")
    row_format, header_sep, line_length = "", "", -2

    def add_column(padding: int, text_dir: str = ">") -> None:
        nonlocal row_format, header_sep, line_length
        row_format += "{: " + text_dir + str(padding) + "}" + "  "
        header_sep += "-" * padding + "  "
        line_length += padding + 2

    add_column(name_width)
    if has_overload_names:
        add_column(name_width)
    for _ in headers[1 + has_overload_names:]:
        add_column(width)
    if has_input_shapes:
        headers.append("Input Shapes")
        add_column(shapes_width)
    if stacks:
        headers.append("Source Location")
        add_column(src_width or 0, text_dir="<")
    flops_scale, flops_header = 1.0, ""
    if with_flops:
        raw = [e.flops for e in events if e.flops > 0]
        if raw:
            units = ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"]
            log = max(0.0, min(math.log10(min(raw)) / 3, float(len(units) - 1)))
            flops_scale, flops_header = pow(10, math.floor(log) * -3.0), units[int(log)]
            headers.append(f"Total {flops_header}")
            add_column(width)
        else:
            with_flops = False
    result: list[str] = []

    def append(s: str) -> None:
        result.append(s)
        result.append("\n")

    total_self = sum(e.self_cpu_time_total for e in events)
    if header is not None:
        append("=" * line_length)
        append(header)
    if top_level_events_only:
        append("=" * line_length)
        append("This report only display top-level ops statistics")
    append(header_sep)
    append(row_format.format(*headers))
    append(header_sep)

    def trim_path(path: str, limit: int) -> str:
        if len(path) > limit:
            path = path[len(path) - limit:]
            if len(path) > 3:
                path = "..." + path[3:]
        return path

    def unit(time_us: float, default: str) -> str:
        if time_unit == "s":
            return f"{time_us / 1e6:.3f}s"
        if time_unit == "ms":
            return f"{time_us / 1e3:.3f}ms"
        if time_unit == "us":
            return f"{time_us:.3f}us"
        return default

    shown = 0
    for e in events:
        if shown == row_limit:
            break
        if top_level_events_only and e.cpu_parent is not None:
            continue
        shown += 1
        name = e.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row: list[Any] = [name]
        if has_overload_names:
            overload = e.overload_name or ""
            if max_name_column_width is not None and len(overload) >= max_name_column_width - 3:
                overload = overload[:max_name_column_width - 3] + "..."
            row.append(overload)
        row += [_format_time_share(e.self_cpu_time_total, total_self), unit(e.self_cpu_time_total,
                                                                             e.self_cpu_time_total_str),
                _format_time_share(e.cpu_time_total, total_self) if not e.is_async else 0,
                unit(e.cpu_time_total, e.cpu_time_total_str), unit(e.cpu_time, e.cpu_time_str)]
        if profile_memory:
            row += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
        row.append(e.count)
        if has_input_shapes:
            row.append(str(e.input_shapes)[:shapes_width])
        if with_flops:
            row.append("--" if e.flops <= 0 else f"{e.flops * flops_scale:8.3f}")
        if stacks:
            row.append(trim_path(e.stack[0], src_width or 0) if e.stack else "")
        append(row_format.format(*row))
        if stacks:
            empty = [""] * (len(headers) - 1)
            for entry in (e.stack or [])[1:]:
                append(row_format.format(*(empty + [trim_path(entry, src_width or 0)])))
            empty.append("")
            append(row_format.format(*empty))
    append(header_sep)
    append(f"Self CPU time total: {unit(total_self, _format_time(total_self))}")
    return "".join(result)
