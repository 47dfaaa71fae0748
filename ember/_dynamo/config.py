"""``torch._dynamo.config``: the settings of graph capture. ``cache_size_limit`` is the old name of
``recompile_limit`` (and ``accumulated_cache_size_limit`` of ``accumulated_recompile_limit``): both names read
and write one setting, as in PyTorch."""
from __future__ import annotations

import sys
import types

recompile_limit = 8              # graphs one compiled function keeps before it runs eagerly with a warning
accumulated_recompile_limit = 256
fail_on_recompile_limit_hit = False
error_on_recompile = False
disable = False                  # every compiled function runs eagerly
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
replay_record_enabled = False

_ALIASES = {"cache_size_limit": "recompile_limit", "accumulated_cache_size_limit": "accumulated_recompile_limit"}


class _ConfigModule(types.ModuleType):
    def __getattr__(self, name: str) -> object:
        if name in _ALIASES:
            return getattr(self, _ALIASES[name])
        raise AttributeError(f"module 'torch._dynamo.config' has no attribute '{name}'")

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(_ALIASES.get(name, name), value)


sys.modules[__name__].__class__ = _ConfigModule
