"""The few ``torch._C`` names that Python programs use directly (the rest of PyTorch's C extension is ember's
Python packages): the ``__torch_function__`` switches."""
from ember.aten.torch_function import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                                   _disabled_torch_function_impl, _get_current_function_mode_stack,
                                   _is_torch_function_all_disabled, _is_torch_function_enabled,
                                   _is_torch_function_mode_enabled, _len_torch_function_stack)


class _NN:
    """``torch._C._nn``: the ``nn.functional`` functions PyTorch implements in C (fx prints them by this name)."""

    NAMES = frozenset({"avg_pool2d", "avg_pool3d", "elu_", "gelu", "hardtanh_", "leaky_relu_", "linear", "logsigmoid",
                       "one_hot", "scaled_dot_product_attention", "softplus", "softshrink"})

    def __getattr__(self, name: str) -> object:
        if name not in self.NAMES:
            raise AttributeError(f"module 'torch._C._nn' has no attribute '{name}'")
        from ember.nn import functional
        return getattr(functional, name)


_nn = _NN()


def _set_grad_enabled(mode: bool) -> None:
    """Turn grad mode on or off for this thread (what ``set_grad_enabled`` and ``no_grad`` do underneath)."""
    from ember.c10.grad_mode import state
    state.enabled = bool(mode)


def is_grad_enabled() -> bool:
    from ember.c10.grad_mode import state
    return state.enabled

