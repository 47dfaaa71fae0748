"""``ember.profiler`` (``torch.profiler``): ``profile`` with activities, schedules and trace handlers, over the
recorder of ``ember.autograd.profiler`` (Note [RecordFunction])."""
from ember.autograd.profiler import record_function
from ember.profiler import _ops  # noqa: F401  (the profiler:: operators)
from ember.profiler.profiler import (ProfilerAction, ProfilerActivity, _KinetoProfile, profile, schedule,
                                     supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "record_function", "_KinetoProfile"]
