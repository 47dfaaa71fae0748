"""The few ``torch._C`` names that Python programs use directly (the rest of PyTorch's C extension is ember's
Python packages): the ``__torch_function__`` switches."""
from ember.aten.torch_function import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                                   _disabled_torch_function_impl, _get_current_function_mode_stack,
                                   _is_torch_function_all_disabled, _is_torch_function_enabled,
                                   _is_torch_function_mode_enabled, _len_torch_function_stack)
from ember.c10.generator import Generator  # noqa: F401  (torch._C.Generator)
from ember.c10.grad_mode import state


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
    state.enabled = bool(mode)


def is_grad_enabled() -> bool:
    return state.enabled



# -- the dispatcher's Python surface (libraries register kernels with these: torchvision's autocast registrations)
from ember.c10.dispatch_key import DispatchKey, DispatchKeySet  # noqa: E402,F401
from ember.aten.dispatcher import ExcludeDispatchKeyGuard as _ExcludeDispatchKeyGuard  # noqa: E402,F401
from ember.aten.dispatcher import IncludeDispatchKeyGuard as _IncludeDispatchKeyGuard  # noqa: E402,F401


def _dispatch_has_kernel_for_dispatch_key(name: str, dispatch: object) -> bool:
    """Whether operator ``name`` ("ns::op[.overload]") has a kernel registered for ``dispatch`` itself."""
    from ember.aten.dispatcher import Dispatcher
    handle = Dispatcher.ops.get(name if "::" in name else f"aten::{name}")
    if handle is None:
        raise RuntimeError(f"operator {name} does not exist")
    key = DispatchKey[dispatch] if isinstance(dispatch, str) else dispatch
    return handle.has_kernel_for(key)


def _dispatch_has_kernel(name: str) -> bool:
    """Whether operator ``name`` exists and has any kernel."""
    from ember.aten.dispatcher import Dispatcher
    handle = Dispatcher.ops.get(name if "::" in name else f"aten::{name}")
    return handle is not None and bool(handle.kernels)


def _log_api_usage_once(event: str) -> None:
    """PyTorch reports API usage to a logger a deployment installs; none is installed, as in PyTorch's own build."""


def _get_tracing_state() -> None:
    """No TorchScript tracer is ever running in ember."""
    return None


def _get_privateuse1_backend_name() -> str:
    return "privateuseone"


# -- TorchScript's switches: ember has no TorchScript, so each is a setting that only reports back what was set
_jit_flags = {"profiling_mode": True, "profiling_executor": True, "texpr_fuser_enabled": True,
              "nvfuser_enabled": False, "can_fuse_on_cpu": True, "can_fuse_on_gpu": True,
              "nvfuser_guard_mode": False}


def _jit_flag(name: str):  # type: ignore[no-untyped-def]
    def setter(value: bool) -> bool:
        previous = _jit_flags[name]
        _jit_flags[name] = bool(value)
        return previous
    setter.__name__ = f"_jit_set_{name}"
    return setter


_jit_set_profiling_mode = _jit_flag("profiling_mode")
_jit_set_profiling_executor = _jit_flag("profiling_executor")
_jit_set_texpr_fuser_enabled = _jit_flag("texpr_fuser_enabled")
_jit_set_nvfuser_enabled = _jit_flag("nvfuser_enabled")
_jit_set_nvfuser_guard_mode = _jit_flag("nvfuser_guard_mode")
_jit_override_can_fuse_on_cpu = _jit_flag("can_fuse_on_cpu")
_jit_override_can_fuse_on_gpu = _jit_flag("can_fuse_on_gpu")


def _jit_can_fuse_on_cpu() -> bool:
    return _jit_flags["can_fuse_on_cpu"]


def _jit_can_fuse_on_gpu() -> bool:
    return _jit_flags["can_fuse_on_gpu"]


def _jit_texpr_fuser_enabled() -> bool:
    return _jit_flags["texpr_fuser_enabled"]
