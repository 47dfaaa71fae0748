"""``compile_fx``: the ``inductor`` backend's entry (``torch/_inductor/compile_fx.py``)."""
from __future__ import annotations

import logging
from typing import Any, Callable

from ember._tensor import Tensor
from ember.c10.grad_mode import state

log = logging.getLogger("ember._inductor")


def needs_autograd(gm: Any) -> bool:
    """Whether running ``gm`` must record autograd history: some input or constant requires grad while grad mode
    is on at some operator of the graph."""
    if gm.meta.get("self_differentiating"):     # Note [Backward inside a capture]: it runs without autograd
        return False
    if not state.enabled and not any(n.target.__name__ == "_set_grad_enabled" for n in gm.graph.nodes
                                     if n.op == "call_function" and hasattr(n.target, "__name__")):
        return False
    for n in gm.graph.nodes:
        v = n.meta.get("val")
        if n.op in ("placeholder", "get_attr") and isinstance(v, Tensor) and v.requires_grad:
            return True
    return False


def compile_fx(gm: Any, example_inputs: list[Any], config_patches: dict[str, Any] | None = None) -> Callable[..., Any]:
    """The compiled callable of a captured graph: the generated function of Note [Graph code] when nothing needs
    autograd; else AOT autograd's forward and backward graphs (Note [AOT autograd]), each a generated function;
    else (a graph returning an alias of its input) the graph through the dispatcher. ``config_patches`` set
    ``ember._inductor.config`` while it compiles (a compile call's ``mode`` and ``options``)."""
    from ember._inductor import config
    saved = {k: getattr(config, k) for k in (config_patches or {})}
    for k, v in (config_patches or {}).items():
        setattr(config, k, v)
    try:
        from ember._dynamo.output_graph import lower_to_aten     # a torch-level graph: traced to ATen first
        gm, example_inputs, adapt = lower_to_aten(gm, example_inputs)
        return adapt(_compile_fx(gm, example_inputs))
    finally:
        for k, v in saved.items():
            setattr(config, k, v)


def _compile_fx(gm: Any, example_inputs: list[Any]) -> Callable[..., Any]:
    from ember._inductor.codegen import compile_graph
    from ember._inductor.passes import constant_fold, cse
    cse(gm.graph)
    constant_fold(gm)
    if needs_autograd(gm):
        from ember._functorch.aot_autograd import aot_module_simplified
        try:
            run = aot_module_simplified(gm, example_inputs, _logged(compile_graph, "forward"),
                                        _logged(compile_graph, "backward"))
        except Exception as e:     # the dispatcher's path (Note [Compile fallbacks] in ember/_dynamo/utils.py)
            from ember._dynamo.utils import record_fallback
            record_fallback("AOT autograd", f"{type(e).__name__}: {e}", error=e)
            run = None
        return run if run is not None else gm.forward
    return _logged(compile_graph, "inference")(gm, example_inputs)


def _logged(compiler: Callable[..., Any], what: str) -> Callable[..., Any]:
    def compile_and_log(gm: Any, example_inputs: list[Any]) -> Callable[..., Any]:
        from ember._inductor import config
        fn = compiler(gm, example_inputs, name=f"call_{what}")
        from ember._dynamo.utils import logs
        if "output_code" in logs():
            log.warning("Output code (%s):\n%s", what, fn.__ember_source__)
            for src in fn.__ember_kernels__:
                log.warning("Fused kernel (%s):\n%s", what, src)
        return _autotuned(fn) if config.max_autotune else fn
    return compile_and_log


def _autotuned(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run with the convolutions' algorithm benchmarking on (``config.max_autotune``): each convolution of a
    new shape times its algorithms once and keeps the fastest."""
    from ember.aten.context import global_context

    def run(*args: Any) -> Any:
        before = global_context.benchmark_cudnn
        global_context.benchmark_cudnn = True
        try:
            return fn(*args)
        finally:
            global_context.benchmark_cudnn = before
    run.__ember_source__ = fn.__ember_source__          # type: ignore[attr-defined]
    run.__ember_kernels__ = fn.__ember_kernels__        # type: ignore[attr-defined]
    run.__ember_params__ = fn.__ember_params__          # type: ignore[attr-defined]
    run.__wrapped__ = fn                                # type: ignore[attr-defined]
    return run
