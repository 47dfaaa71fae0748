"""Compiler backends by name (``torch/_dynamo/backends/registry.py``): a backend takes the captured
``GraphModule`` and the example inputs and returns the callable that runs in its place."""
from __future__ import annotations

from typing import Any, Callable

from ember._dynamo import exc

_BACKENDS: dict[str, Callable[..., Any]] = {}
_DEBUG = {"eager", "aot_eager"}


def register_backend(compiler_fn: Callable[..., Any] | None = None, name: str | None = None,
                     tags: Any = ()) -> Any:
    """Register ``compiler_fn`` under ``name`` (its ``__name__`` by default); usable as a decorator."""
    if compiler_fn is None:
        return lambda fn: register_backend(fn, name=name, tags=tags)
    key = name or compiler_fn.__name__
    if key in _BACKENDS:
        raise AssertionError(f"duplicate name: {key}")
    _BACKENDS[key] = compiler_fn
    return compiler_fn


def lookup_backend(compiler_fn: Any) -> Callable[..., Any]:
    """The backend function for a name or a callable."""
    if isinstance(compiler_fn, str):
        if compiler_fn not in _BACKENDS:
            raise exc.InvalidBackend(f"Invalid backend: {compiler_fn!r}, see `torch._dynamo.list_backends()` for "
                                     "available backends.")
        return _BACKENDS[compiler_fn]
    if not callable(compiler_fn):
        raise exc.InvalidBackend(f"Invalid backend: {compiler_fn!r}")
    return compiler_fn


def list_backends(exclude_tags: Any = ("debug", "experimental")) -> list[str]:
    """The registered backends' names (without the debugging ones unless ``exclude_tags`` is empty)."""
    hide = _DEBUG if exclude_tags and "debug" in exclude_tags else set()
    return sorted(k for k in _BACKENDS if k not in hide)


@register_backend(name="eager")
def eager(gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
    """Run the captured graph as it is: each ATen operator through the dispatcher (autograd included)."""
    return gm.forward


@register_backend(name="aot_eager")
def aot_eager(gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
    """AOT autograd's forward and backward graphs (Note [AOT autograd]), each run through the dispatcher: the
    partitioning without the code generation, for debugging the one apart from the other."""
    from ember._dynamo.output_graph import lower_to_aten
    from ember._functorch.aot_autograd import aot_module_simplified
    from ember._inductor.compile_fx import needs_autograd
    gm, example_inputs, adapt = lower_to_aten(gm, example_inputs)     # a torch-level graph: traced to ATen first
    if not needs_autograd(gm):
        return adapt(gm.forward)

    def no_grad_forward(g: Any, ex: Any) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            from ember.autograd.grad_mode import no_grad
            with no_grad():
                return g.forward(*args)
        return run
    try:
        run = aot_module_simplified(gm, example_inputs, no_grad_forward, no_grad_forward)
    except Exception:           # a backward formula that reads values (masked_select): the dispatcher's path
        run = None
    return adapt(run if run is not None else gm.forward)


# PyTorch's Inductor options that have no counterpart on ember's CPU code generation (GPU graphs, Triton and C++
# code, PyTorch's own caches and debugging traces): accepted, so that a script written for PyTorch runs, and ignored
_IGNORED_OPTIONS = {
    "triton.cudagraphs", "triton.cudagraph_trees", "triton.autotune_pointwise", "triton.unique_kernel_names",
    "epilogue_fusion", "aggressive_fusion", "shape_padding", "coordinate_descent_tuning", "max_autotune_gemm",
    "max_autotune_pointwise", "freezing", "layout_optimization", "cpp_wrapper", "benchmark_kernel", "fx_graph_cache",
    "autotune_local_cache", "trace.enabled", "trace.graph_diagram", "debug", "size_asserts", "implicit_fallbacks",
    "cpp.simdlen", "cpp.threads", "cpp.enable_kernel_profile", "combo_kernels", "split_reductions", "dce",
    "fallback_random", "conv_1x1_as_mm", "unroll_reductions_threshold", "reorder_for_locality"}
# the options each mode stands for (``torch._inductor.list_mode_options``), as far as they mean anything here
_MODE_OPTIONS: dict[str, dict[str, Any]] = {"max-autotune": {"max_autotune": True},
                                             "max-autotune-no-cudagraphs": {"max_autotune": True}}


class InductorWrapper:
    """The ``inductor`` backend with a compile call's ``mode`` and ``options`` applied to ``ember._inductor.config``
    while it compiles (PyTorch's ``_TorchCompileInductorWrapper``); options are checked when ``compile`` is called,
    with PyTorch's errors."""

    compiler_name = __name__ = "inductor"

    def __init__(self, mode: str | None, options: dict[str, Any] | None) -> None:
        self.config: dict[str, Any] = {}
        if mode and mode != "default":
            self.apply_options(_MODE_OPTIONS.get(mode, {}))
        self.apply_options(options)

    def apply_options(self, options: dict[str, Any] | None) -> None:
        from ember._inductor import config
        current = {k: v for k, v in vars(config).items() if not k.startswith("_") and isinstance(v, (bool, int))}
        for key, val in (options or {}).items():
            name = key.replace("-", "_")
            if key in _IGNORED_OPTIONS or name in _IGNORED_OPTIONS:
                continue
            if name not in current:
                raise RuntimeError(f"Unexpected optimization option {key}, known options are "
                                   f"{sorted(current) + sorted(_IGNORED_OPTIONS)}")
            if type(val) is not type(current[name]):
                raise RuntimeError(f"Unexpected type of attr {key}, got {type(val).__name__} should be "
                                   f"{type(current[name]).__name__}")
            self.config[name] = val

    def __call__(self, gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
        return inductor(gm, example_inputs, config_patches=self.config)


@register_backend(name="inductor")
def inductor(gm: Any, example_inputs: Any, **kwargs: Any) -> Callable[..., Any]:
    """ember's counterpart of Inductor: a graph with no autograd to record becomes one generated function that
    calls the array kernels directly (Note [Graph code]); a graph that needs autograd becomes AOT autograd's
    forward and backward graphs (Note [AOT autograd]), each such a function."""
    from ember._inductor.compile_fx import compile_fx
    return compile_fx(gm, example_inputs, config_patches=kwargs.get("config_patches"))
