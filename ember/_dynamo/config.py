"""``torch._dynamo.config``: settings scripts read and write (kept; nothing compiles yet, issue 18)."""
from __future__ import annotations

cache_size_limit = 8
recompile_limit = 8
accumulated_cache_size_limit = 256
accumulated_recompile_limit = 256
suppress_errors = False
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
force_parameter_static_shapes = True
inline_inbuilt_nn_modules = True
optimize_ddp = True
allow_unspec_int_on_nn_module = False
error_on_recompile = False
replay_record_enabled = False
