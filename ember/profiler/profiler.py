"""``torch.profiler.profile`` and its schedule (``torch/profiler/profiler.py``).

A profile runs in steps (``prof.step()`` at the end of each training iteration). Its ``schedule`` maps the step
number to an action: NONE (not recording), WARMUP (recording starts, results dropped), RECORD, and
RECORD_AND_SAVE on a window's last step. The transitions are PyTorch's: a window starts when the action leaves
NONE, its trace is handed to ``on_trace_ready`` when RECORD_AND_SAVE ends (or when the profiler stops inside a
window), and with a schedule each step is a ``ProfilerStep#<n>`` range. Without a schedule every step records
and ``on_trace_ready`` is called once, on ``stop()``."""
from __future__ import annotations

import enum
import os
import socket
import time
import warnings
from functools import partial
from typing import Any, Callable, Iterable

from ember.autograd import profiler as _prof
from ember.autograd.profiler import ProfilerActivity
from ember.autograd.profiler_util import EventList, write_chrome_trace

__all__ = ["ProfilerAction", "ProfilerActivity", "schedule", "profile", "supported_activities",
           "tensorboard_trace_handler", "_KinetoProfile"]


def supported_activities() -> set[ProfilerActivity]:
    """The activities this build can record: the CPU."""
    return {ProfilerActivity.CPU}


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0) -> Callable[[int], ProfilerAction]:
    """Skip ``skip_first`` steps, then cycle: ``wait`` steps idle, ``warmup`` warming up, ``active`` recording
    (the last one RECORD_AND_SAVE), ``repeat`` times (0: until the end). ``skip_first_wait`` skips the first
    cycle's wait."""
    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise AssertionError(f"Step must be non-negative. Got {step}.")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait != 0:
            step += wait
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return ProfilerAction.NONE
        mod_step = step % num_steps
        if mod_step < wait:
            return ProfilerAction.NONE
        if mod_step < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod_step < num_steps - 1 else ProfilerAction.RECORD_AND_SAVE

    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments. Got wait={wait} (need >= 0), warmup={warmup} "
                             f"(need >= 0), active={active} (need > 0), repeat={repeat} (need >= 0), "
                             f"skip_first={skip_first} (need >= 0).")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    return schedule_fn


_WARNINGS_SHOWN: set[str] = set()


def _warn_once(msg: str) -> None:
    if msg not in _WARNINGS_SHOWN:
        _WARNINGS_SHOWN.add(msg)
        warnings.warn(msg, UserWarning, stacklevel=3)


def _default_schedule_fn(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


def tensorboard_trace_handler(dir_name: str, worker_name: str | None = None, use_gzip: bool = False,
                              use_python_export: bool = False) -> Callable[[Any], None]:
    """An ``on_trace_ready`` that writes each window's trace to ``dir_name/<worker>.<time_ns>.pt.trace.json(.gz)``,
    where TensorBoard's profile plugin finds it (``worker`` defaults to ``<host>_<pid>``)."""
    def handler_fn(prof: Any) -> None:
        nonlocal worker_name
        if not os.path.isdir(dir_name):
            try:
                os.makedirs(dir_name, exist_ok=True)
            except Exception as e:
                raise RuntimeError("Can't create directory: " + dir_name) from e
        if not worker_name:
            worker_name = f"{socket.gethostname()}_{os.getpid()}"
        file_name = f"{worker_name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else "")
        prof.export_chrome_trace(os.path.join(dir_name, file_name))
    return handler_fn


class _KinetoProfile:
    """The recording part of ``profile``: start / stop, the events of the last window, their summaries, the
    trace export."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, custom_trace_id_callback: Any = None) -> None:
        self.activities = set(activities) if activities else supported_activities()
        for a in self.activities:
            if not isinstance(a, ProfilerActivity):
                raise AssertionError(f"Invalid profiler activity: {a}")
        if self.activities - supported_activities():
            warnings.warn(f"Profiler activities {sorted(a.name for a in self.activities - supported_activities())} "
                          "are not available in this build: only CPU activity is recorded", stacklevel=3)
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.acc_events = acc_events
        self.profiler: _prof.profile | None = None
        self._metadata: dict[str, str] = {}
        self._rec: _prof._Recorder | None = None
        self._events: list[Any] = []

    def start(self) -> None:
        self.prepare_trace()
        self.start_trace()

    def stop(self) -> None:
        self.stop_trace()

    def prepare_trace(self) -> None:
        if self.profiler is not None and not self.acc_events:
            _warn_once("Warning: Profiler clears events at the end of each cycle. Only events from the current cycle "
                       "will be reported. To keep events across cycles, set acc_events=True.")
        if not self.acc_events:
            self._events = []

    def start_trace(self) -> None:
        self._rec = _prof._Recorder(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops)
        _prof._start(self._rec)

    def stop_trace(self) -> None:
        if self._rec is None:
            return
        if _prof.recorder is self._rec:
            _prof._stop()
        self._events = self._events + list(self._rec.events)
        self.profiler = _prof.profile(record_shapes=self.record_shapes, profile_memory=self.profile_memory,
                                      with_stack=self.with_stack, with_flops=self.with_flops)
        self.profiler._rec = self._rec
        self.profiler.function_events = self.events()

    def events(self) -> EventList:
        """The ranges of the last window (all windows with ``acc_events``), in order of start."""
        return EventList(sorted(self._events, key=lambda e: (e.start_us, -e.end_us)),
                         profile_memory=self.profile_memory, with_flops=self.with_flops)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0,
                     group_by_overload_name: bool = False) -> EventList:
        """Ranges of one name added up; by input shapes too with ``group_by_input_shape`` (needs
        ``record_shapes``), by the innermost ``group_by_stack_n`` frames (needs ``with_stack``)."""
        return self.events().key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def export_chrome_trace(self, path: str) -> None:
        """The trace as JSON (gzip for a ``.gz`` path) that Perfetto, chrome://tracing and TensorBoard open."""
        base = self._rec.base_ns if self._rec is not None else 0
        write_chrome_trace(path, list(self.events()), base, host_name=socket.gethostname(),
                           record_shapes=self.record_shapes)

    def export_stacks(self, path: str, metric: str = "self_cpu_time_total") -> None:
        if not self.with_stack:
            raise AssertionError("export_stacks() requires with_stack=True")
        self.events().export_stacks(path, metric)

    def add_metadata(self, key: str, value: str) -> None:
        self._metadata[key] = '"' + value.replace('"', '\\"') + '"'

    def add_metadata_json(self, key: str, value: str) -> None:
        self._metadata[key] = value


class profile(_KinetoProfile):
    """The profiler context manager (``torch.profiler.profile``); see the module's docstring for schedules."""

    def __init__(self, *, activities: Iterable[ProfilerActivity] | None = None,
                 schedule: Callable[[int], ProfilerAction] | None = None,
                 on_trace_ready: Callable[[Any], Any] | None = None, record_shapes: bool = False,
                 profile_memory: bool = False, with_stack: bool = False, with_flops: bool = False,
                 with_modules: bool = False, experimental_config: Any = None, execution_trace_observer: Any = None,
                 acc_events: bool = False, use_cuda: bool | None = None, custom_trace_id_callback: Any = None,
                 post_processing_timeout_s: Any = None) -> None:
        if use_cuda is not None:
            warnings.warn("`use_cuda` is deprecated, use `activities` argument instead", FutureWarning,
                          stacklevel=2)
        super().__init__(activities=activities, record_shapes=record_shapes, profile_memory=profile_memory,
                         with_stack=with_stack, with_flops=with_flops, with_modules=with_modules,
                         acc_events=acc_events)
        if schedule is not None:
            self.schedule, self.record_steps = schedule, True
        else:
            self.schedule, self.record_steps = _default_schedule_fn, False
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self.step_rec_fn: _prof.record_function | None = None
        none, warm, rec, save = (ProfilerAction.NONE, ProfilerAction.WARMUP, ProfilerAction.RECORD,
                                 ProfilerAction.RECORD_AND_SAVE)
        self.action_map: dict[tuple[ProfilerAction, ProfilerAction | None], list[Any]] = {
            (none, none): [], (none, warm): [self.prepare_trace], (none, rec): [self.prepare_trace, self.start_trace],
            (none, save): [self.prepare_trace, self.start_trace],
            (warm, none): [partial(warnings.warn, "Incorrect schedule: WARMUP followed by NONE"), self.start_trace,
                           self.stop_trace],
            (warm, warm): [], (warm, rec): [self.start_trace], (warm, save): [self.start_trace],
            (rec, none): [partial(warnings.warn, "Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (rec, warm): [partial(warnings.warn, "Incorrect schedule: RECORD followed by WARMUP"), self.stop_trace],
            (rec, rec): [], (rec, save): [],
            (save, none): [self.stop_trace, self._trace_ready],
            (save, warm): [self.stop_trace, self._trace_ready, self.prepare_trace],
            (save, rec): [self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            (save, save): [self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            (warm, None): [self.start_trace, self.stop_trace], (rec, None): [self.stop_trace, self._trace_ready],
            (save, None): [self.stop_trace, self._trace_ready]}

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        self._transit_action(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = _prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def stop(self) -> None:
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
        self._transit_action(self.current_action, None)

    def step(self) -> None:
        """Signal the end of a step: move to the schedule's next action."""
        if self.record_steps and self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
        prev_action = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit_action(prev_action, self.current_action)
        if self.record_steps:
            self.step_rec_fn = _prof.record_function("ProfilerStep#" + str(self.step_num))
            self.step_rec_fn.__enter__()

    def _trace_ready(self) -> None:
        if self.on_trace_ready:
            self.on_trace_ready(self)

    def _transit_action(self, prev_action: ProfilerAction, current_action: ProfilerAction | None) -> None:
        for action in self.action_map.get((prev_action, current_action)) or []:
            action()
