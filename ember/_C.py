"""The few ``torch._C`` names that Python programs use directly (the rest of PyTorch's C extension is ember's
Python packages): the ``__torch_function__`` switches."""
from ember.aten.torch_function import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                                   _disabled_torch_function_impl, _get_current_function_mode_stack,
                                   _is_torch_function_all_disabled, _is_torch_function_enabled,
                                   _is_torch_function_mode_enabled, _len_torch_function_stack)
