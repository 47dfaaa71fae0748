"""``ember.compile``: the compiled callable and its cache of graphs (``torch/_dynamo/eval_frame.py``).

A compiled function keeps a list of cache entries, each a captured graph (or a graph break) with its guards
(Note [Capture] in ``capture.py``). A call flattens its arguments, takes the first entry whose guards pass and
runs it; when none passes it captures again -- a recompilation -- until ``config.recompile_limit`` entries
exist, then warns as PyTorch does and runs eagerly from then on.

Note [Split at a graph break]
Dynamo splits a function at a graph break and compiles the code on either side. ember cannot resume a Python
frame half-way, but a module has a natural split: its submodules. When a compiled module's forward breaks, its
eager run sends each direct submodule's calls to a compiled function of that submodule (``compile_state.redirect``,
which ``Module.__call__`` checks -- one test of an empty dict on every module call otherwise). The forward's own
Python (the print, the branch on a value) runs eagerly, once; the submodules run as graphs, each with its own
guards, and a submodule that breaks splits the same way, down to the modules that capture whole.
"""
from __future__ import annotations

import functools
import logging
import time
import weakref
from typing import Any, Callable

from ember._dynamo import config, exc
from ember._dynamo.backends import InductorWrapper, lookup_backend
from ember._dynamo.utils import logs, recent_fallbacks, record_fallback
from ember.c10 import compile_state as _cs
from ember.c10.dispatch_key import MATH_BITS
from ember.nn import Module
from ember.utils._pytree import tree_flatten, tree_unflatten as _tree_unflatten
from ember.c10.grad_mode import state

log = logging.getLogger("ember._dynamo")
_ALL: weakref.WeakSet[Any] = weakref.WeakSet()   # every compiled callable, for reset()
_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


class _Entry:
    __slots__ = ("guards", "run", "graph_break", "gm", "inputs", "grad_leaves", "extra_inputs", "no_grad",
                 "children", "out_spec")

    def __init__(self, guards: Any, run: Callable[..., Any] | None, graph_break: Any, gm: Any,
                 inputs: tuple[int, ...] = (), captured: Any = None) -> None:
        self.guards = guards
        self.run = run              # None: a graph break, the function runs eagerly
        self.graph_break = graph_break
        self.gm = gm
        self.inputs = inputs        # the positions of the graph's inputs among the flattened arguments
        # Note [Backward inside a capture]: the tensors whose .grad the graph's last outputs are, those whose
        # .grad it reads as inputs, and whether it runs without autograd (it computes its own gradients)
        self.grad_leaves = captured.grad_leaves if captured is not None else []
        self.extra_inputs = captured.extra_inputs if captured is not None else []
        self.no_grad = captured.self_differentiating if captured is not None else False
        self.children: dict[int, Any] = {}      # a break of a module: its submodules' compiled functions
        self.out_spec = captured.out_spec if captured is not None else None


class CompiledFunction:
    """What ``ember.compile(fn)`` returns for a function (and the ``forward`` of an ``OptimizedModule``)."""

    def __init__(self, fn: Callable[..., Any], *, backend: Any = "inductor", fullgraph: bool = False,
                 dynamic: bool | None = None, mode: str | None = None, options: dict[str, Any] | None = None,
                 module: Module | None = None) -> None:
        if mode not in _MODES:
            raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                               f"{', '.join(m for m in _MODES if m)}")
        if mode is not None and options is not None:
            raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same "
                               "time.")
        self._fn = fn
        self._backend_name = backend if isinstance(backend, str) else getattr(backend, "__name__", "custom")
        if backend == "inductor":                 # mode and options configure ember's own code generation
            self._backend: Callable[..., Any] = InductorWrapper(mode, options)
        elif isinstance(backend, InductorWrapper):
            self._backend = backend
        else:                                     # another backend gets them as PyTorch passes them: keywords
            kw: dict[str, Any] = {"mode": mode} if mode and mode != "default" else {}
            if options:
                kw["options"] = options
            b = lookup_backend(backend)
            self._backend = functools.partial(b, **kw) if kw else b
        # Note [Torch-level graph]: a backend of the user's receives the torch-level graph; ember's own take ATen
        self._torch_level = not isinstance(self._backend, InductorWrapper) and not (
            isinstance(backend, str) and backend in ("inductor", "eager", "aot_eager"))
        self._fullgraph = fullgraph
        self._dynamic = dynamic
        self._mode = mode
        self._options = options or {}
        self._module = module
        self._entries: list[_Entry] = []
        self._retried: dict[str, int] = {}
        self._warned_limit = False
        self.compile_times: list[float] = []
        functools.update_wrapper(self, fn)
        _ALL.add(self)

    @property
    def _orig_fn(self) -> Callable[..., Any]:
        return self._fn

    def _reset(self) -> None:
        self._entries = []
        self._retried = {}
        self._warned_limit = False

    def __get__(self, obj: Any, objtype: Any = None) -> Any:   # a compiled method binds like the function
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _cs.state.capturing is not None or config.disable:   # inside another capture: traced through
            return self._fn(*args, **kwargs)
        leaves = tree_flatten((args, kwargs))[0] if kwargs or not _all_tensors(args) else list(args)
        if any(getattr(t, "_ks", 0) & MATH_BITS for t in leaves):
            # a lazy conjugate or negation (Note [Math bits]): graphs are captured for plain tensors, so the call
            # runs eagerly, where the keys' fallbacks read the values (and writes go through the bit)
            log.info("%s called with a conjugate or negative view: running it eagerly", self._code_name())
            return self._fn(*args, **kwargs)
        for e in self._entries:
            if e.guards(leaves):
                return self._run(e, leaves, args, kwargs)
        if len(self._entries) >= config.recompile_limit:
            if not self._warned_limit:
                self._warned_limit = True
                reason = self._warn_limit(leaves)
                if not config.fail_on_recompile_limit_hit:    # (Note [Compile fallbacks] in utils.py)
                    record_fallback("recompile limit", f"config.recompile_limit ({config.recompile_limit}) reached, "
                                    f"running eagerly from now on; last reason: {reason}", self._code_name())
            if config.fail_on_recompile_limit_hit:
                raise exc.FailOnRecompileLimitHit("recompile_limit reached with fullgraph=True. Excessive "
                                                  "recompilations can degrade performance due to the compilation "
                                                  "overhead of each recompilation.")
            return self._fn(*args, **kwargs)
        if self._entries and config.error_on_recompile:
            raise exc.RecompileError(f"Recompiling function {self._code_name()}: "
                                     f"{self._entries[-1].guards.failure(leaves)}")
        if self._entries and "recompiles" in logs():      # EMBER_LOGS=recompiles (TORCH_LOGS as in PyTorch)
            reasons = "\n".join(f"    - {i}: {e.guards.failure(leaves)}" for i, e in enumerate(self._entries))
            log.warning("Recompiling function %s\n    triggered by the following guard failure(s):\n%s",
                        self._code_name(), reasons)
        similar = [p for p in self._entries if p.run is not None and p.guards.passes_except_sizes(leaves)]
        e = self._compile(args, kwargs)
        brk = e.graph_break
        if brk is not None and brk.retry and self._retried.get(brk.reason, 0) < 1:
            self._retried[brk.reason] = self._retried.get(brk.reason, 0) + 1    # (a lazy first-call change)
            return self._fn(*args, **kwargs)
        if brk is None and self._dynamic is not False and similar:     # a second size: one graph for all sizes
            dyn = self._make_dynamic(similar[-1], e, args, kwargs)
            if dyn is not None:
                self._entries.remove(similar[-1])
                e = dyn
        elif brk is None and self._dynamic is True and not self._entries:   # dynamic=True: the batch size at once
            dyn = self._dynamic_batch(e, args, kwargs)
            if dyn is not None:
                e = dyn
        self._entries.append(e)
        return self._run(e, leaves, args, kwargs)

    def _dynamic_batch(self, e: _Entry, args: Any, kwargs: Any) -> _Entry | None:
        """``dynamic=True``: a graph for every batch size from the first call -- dimension 0 of the tensor
        arguments that share the first one's, captured once more at another size (Note [Dynamic sizes])."""
        from ember._tensor import Tensor
        leaves = tree_flatten((args, kwargs))[0]
        tensors = [(i, x) for i, x in enumerate(leaves) if isinstance(x, Tensor) and x.dim() > 0]
        if not tensors:
            return None
        batch = tensors[0][1].shape[0]
        sizes = {i: (batch + 1,) + tuple(x.shape[1:]) for i, x in tensors if x.shape[0] == batch}
        try:
            probe = self._compile(*_resized(args, kwargs, sizes))
        except Exception as exc_:
            record_fallback("dynamic sizes", f"capturing at a second batch size raised {type(exc_).__name__}: "
                            f"{exc_}", error=exc_)
            return None
        if probe.run is None:
            return None
        return self._make_dynamic(probe, e, args, kwargs)

    def _make_dynamic(self, e1: _Entry, e2: _Entry, args: Any, kwargs: Any) -> _Entry | None:
        """One entry for every size of the dimensions that differ between ``e1`` and ``e2``, from a third
        capture at a new size, or None (Note [Dynamic sizes] in ``ember/_inductor/dynamic.py``)."""
        from ember._inductor.dynamic import symbols_of
        if self._backend_name != "inductor" or e1.inputs != e2.inputs:
            return None
        shape1 = {i: s for i, (_, _, s, _) in e1.guards.tensor_checks.items()}
        shape2 = {i: s for i, (_, _, s, c) in e2.guards.tensor_checks.items() if c}
        if shape1.keys() != shape2.keys() or any(len(shape1[i]) != len(shape2[i]) for i in shape1):
            return None
        groups = symbols_of([[shape1[i] for i in sorted(shape1)], [shape2[i] for i in sorted(shape2)]])
        if not groups:
            return None
        order = sorted(shape1)
        probe = {i: list(shape2[i]) for i in order}
        for k, (vals, where) in enumerate(groups):
            for j, d in where:
                probe[order[j]][d] = max(vals) + 1 + k
        a3, k3 = _resized(args, kwargs, {i: tuple(v) for i, v in probe.items()})
        try:
            e3 = self._compile(a3, k3)
        except Exception as exc_:
            record_fallback("dynamic sizes", f"capturing at a third size raised {type(exc_).__name__}: {exc_}",
                            error=exc_)
            return None
        if e3.run is None:
            return None
        groups = symbols_of([[shape1[i] for i in order], [shape2[i] for i in order],
                             [tuple(probe[i]) for i in order]])
        groups = [(vals, [(order[j], d) for j, d in where]) for vals, where in groups]
        runs = [e1.run, e2.run, e3.run]
        if all(hasattr(r, "__ember_source__") for r in runs):
            run = _generalized(runs)
        elif all(hasattr(r, "_ember_fw") for r in runs):
            fw = _generalized([r._ember_fw for r in runs])
            bw = _generalized([r._ember_bw for r in runs])
            run = e2.run._ember_make(fw, bw) if fw is not None and bw is not None else None
        else:
            run = None
        if run is None:
            return None
        guards = e2.guards.dynamic(groups)
        e = _Entry(guards, run, None, e2.gm, e2.inputs)
        e.grad_leaves, e.extra_inputs, e.no_grad = e2.grad_leaves, e2.extra_inputs, e2.no_grad
        e.out_spec = e2.out_spec
        return e

    def _run(self, e: _Entry, leaves: list[Any], args: Any, kwargs: Any) -> Any:
        if e.run is None:
            out = self._run_eagerly(e, args, kwargs)
            brk = e.graph_break
            if brk is not None and brk.raised is not None:
                # the capture raised where the eager run did not: ember's failure, not the function's
                # (Note [Compile fallbacks]); recorded once per compiled entry
                raised, brk.raised = brk.raised, None
                fs = brk.user_stack[-1] if brk.user_stack else None
                where = f"{fs.filename}:{fs.lineno} in {fs.name}" if fs is not None else ""
                record_fallback("graph break", brk.reason, where, raised)
            return out
        inputs = [leaves[i] for i in e.inputs]
        if e.extra_inputs:
            inputs += [t._grad for t in e.extra_inputs]
        if e.no_grad:
            enabled, state.enabled = state.enabled, False
            try:
                out = e.run(*inputs)
            finally:
                state.enabled = enabled
        else:
            out = e.run(*inputs)
        if e.out_spec is not None:
            out = _tree_unflatten(list(out), e.out_spec)
        if e.grad_leaves:
            out, grads = out
            for t, g in zip(e.grad_leaves, grads):
                t.__dict__["_grad"] = g
        return out

    def _run_eagerly(self, e: _Entry, args: Any, kwargs: Any) -> Any:
        """A graph break's run (Note [Split at a graph break]): the function itself, its module's direct
        submodules each through a compiled function of its own."""
        redirect = _cs.redirect
        own = redirect.pop(id(self._module), None) if self._module is not None else None
        saved: dict[int, Any] = {}
        for key, child in e.children.items():
            saved[key] = redirect.get(key)
            redirect[key] = child
        try:
            return self._fn(*args, **kwargs)
        finally:
            for key, prev in saved.items():
                if prev is None:
                    redirect.pop(key, None)
                else:
                    redirect[key] = prev
            if own is not None:
                redirect[id(self._module)] = own

    def _compile(self, args: Any, kwargs: Any) -> _Entry:
        from ember._dynamo.capture import capture
        start = time.perf_counter()
        modules = [self._module] if self._module is not None else []
        globals_fn = self._module.forward if self._module is not None else None
        scalars = self._fullgraph or config.capture_scalar_outputs     # Note [Values read inside a graph]
        c = capture(self._fn, args, kwargs, modules=modules, globals_fn=globals_fn, torch_level=self._torch_level,
                    capture_scalars=scalars)
        if c.graph_break is not None and c.graph_break.value_read and scalars and not self._torch_level:
            # the torch-level recorder holds the value as a node
            c = capture(self._fn, args, kwargs, modules=modules, globals_fn=globals_fn, torch_level=True,
                        capture_scalars=True)
        wanted = logs()
        if c.graph_break is not None:
            if self._fullgraph:
                if c.graph_break.user_error:
                    raise exc.UserError(_caused_by(c.graph_break))
                raise exc.Unsupported(c.graph_break.message())
            if "graph_breaks" in wanted:
                log.warning("Graph break: %s", c.graph_break.message())
            self.compile_times.append(time.perf_counter() - start)
            e = _Entry(c.guards, None, c.graph_break, None)
            if self._module is not None and not c.graph_break.retry:    # Note [Split at a graph break]
                e.children = {id(m): CompiledFunction(m._call_impl, backend=self._backend, fullgraph=False,
                                                      dynamic=self._dynamic, mode=self._mode,
                                                      options=self._options or None, module=m)
                              for _, m in self._module.named_children()}
            return e
        if c.torch_level is not None and (self._torch_level or c.data_dependent):
            return self._compile_torch_level(c, start)
        if self._torch_level:       # named, so that a backend author sees why the graph is not torch-level
            log.info("the backend receives the ATen graph: the torch-level graph cannot express %s",
                     c.torch_level_failure)
        gm = c.gm
        from ember._tensor import Tensor
        leaves = tree_flatten((args, kwargs))[0]
        first: dict[int, int] = {}
        for i, x in enumerate(leaves):
            if isinstance(x, Tensor):
                first.setdefault(id(x), i)
        run = self._call_backend(self._backend, gm, c.example_inputs)
        self.compile_times.append(time.perf_counter() - start)
        return _Entry(c.guards, run, None, gm, tuple(sorted(first.values())), c)

    def _call_backend(self, backend: Callable[..., Any], gm: Any, example_inputs: list[Any]) -> Any:
        """``backend(gm, example_inputs)``, the graph logged first when asked (``EMBER_LOGS=graph_code``), a
        failure reported as PyTorch's ``BackendCompilerFailed``."""
        if "graph_code" in logs() or "graph" in logs():
            log.warning("TRACED GRAPH\n ===== __compiled_fn_%d =====\n%s", len(self._entries),
                        gm.print_readable(print_output=False))
        try:
            return backend(gm, example_inputs)
        except exc.CompileFallbackError:
            raise
        except Exception as e:
            raise exc.BackendCompilerFailed(f"backend={self._backend_name!r} raised:\n{type(e).__name__}: {e}") from e

    def _compile_torch_level(self, c: Any, start: float) -> _Entry:
        """The entry running the backend's compilation of the torch-level graph (Note [Torch-level graph]): it
        takes every flattened argument, passes the graph its inputs (arguments and module state) and rebuilds the
        function's result."""
        gm, example_inputs, plan, rebuild = c.torch_level
        # a graph holding a value read by .item() has no ATen form: ember's own backends run it op by op
        compiled = self._call_backend(self._backend if self._torch_level else _op_by_op, gm, example_inputs)

        def run(*flat: Any) -> Any:
            results = compiled(*[flat[k] if kind == "arg" else k for kind, k in plan])
            return rebuild(results, flat)
        self.compile_times.append(time.perf_counter() - start)
        return _Entry(c.guards, run, None, gm, tuple(range(c.n_leaves)))

    def _code_name(self) -> str:
        fn = self._module.forward if self._module is not None else self._fn
        code = getattr(getattr(fn, "__func__", fn), "__code__", None)
        if code is None:
            return repr(fn)
        return f"'{code.co_name}' ({code.co_filename}:{code.co_firstlineno})"

    def _warn_limit(self, leaves: list[Any]) -> str:
        reason = self._entries[-1].guards.failure(leaves) if self._entries else "unknown"
        log.warning("torch._dynamo hit config.recompile_limit (%s)\n"
                    "   function: %s\n"
                    "   last reason: %s\n"
                    'To log all recompilation reasons, use TORCH_LOGS="recompiles".\n'
                    "To diagnose recompilation issues, see docs/compile.md.",
                    config.recompile_limit, self._code_name(), reason)
        return str(reason)


def _caused_by(brk: Any) -> str:
    """PyTorch's UserError text for a branch on a value read inside the graph, with the line that branched."""
    where = brk.user_stack[-1] if brk.user_stack else None
    if where is None:
        return str(brk.reason)
    return f"{brk.reason}\nCaused by: {where.line}  # {where.filename}:{where.lineno} in {where.name}"


def _op_by_op(gm: Any, example_inputs: list[Any]) -> Callable[..., Any]:
    """The torch-level graph run as it is, each call through the dispatcher (Note [Values read inside a graph])."""
    log.info("a graph holding a value read with Tensor.item() runs op by op (ember's code generation takes "
             "no such values)")
    return gm.forward  # type: ignore[no-any-return]


def _resized(args: Any, kwargs: Any, shapes: dict[int, tuple[int, ...]]) -> tuple[Any, Any]:
    """The arguments with the tensors at these flat positions replaced by empty ones of these shapes (a tensor
    passed twice stays one tensor)."""
    import ember
    from ember._tensor import Tensor
    from ember.utils._pytree import tree_unflatten
    leaves, spec = tree_flatten((args, kwargs))
    made: dict[int, Any] = {}
    new_leaves = []
    for i, x in enumerate(leaves):
        if isinstance(x, Tensor) and i in shapes:
            if id(x) not in made:
                t = ember.empty(shapes[i], dtype=x.dtype, device=x.device)
                made[id(x)] = t.requires_grad_(True) if x.requires_grad else t
            x = made[id(x)]
        new_leaves.append(x)
    return tree_unflatten(new_leaves, spec)  # type: ignore[no-any-return]


def _generalized(fns: list[Any]) -> Any:
    """The shape-generic version of three generated functions, or None (Note [Dynamic sizes])."""
    from ember._inductor.dynamic import generalize
    params = [p for p, _ in fns[0].__ember_params__]
    shapes = [[s for _, s in f.__ember_params__] for f in fns]
    return generalize(fns, shapes, params)


def _all_tensors(args: tuple[Any, ...]) -> bool:
    from ember._tensor import Tensor
    for a in args:
        if not isinstance(a, Tensor):
            return False
    return True


class OptimizedModule(Module):
    """A compiled module: calls go through the compiled ``forward`` of the module it wraps (``_orig_mod``), whose
    parameters and buffers it shares; its ``state_dict`` keys carry the ``_orig_mod.`` prefix, as PyTorch's do."""

    _torchdynamo_orig_callable: Any

    def __init__(self, mod: Module, compiled: CompiledFunction) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "dynamo_ctx", compiled)
        self.training = mod.training

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*args, **kwargs)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._compiled(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_orig_mod", "training") or "_modules" not in self.__dict__ or name in self.__dict__:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def _get_name(self) -> str:
        return "OptimizedModule"

    def __reduce__(self) -> Any:
        """Pickled (and deep-copied) as the module and the compile options: the graphs are captured again."""
        c = self._compiled
        backend = c._backend_name if isinstance(c._backend_name, str) and c._backend_name != "custom" else c._backend
        return (_rebuild, (self._orig_mod, backend, c._fullgraph, c._dynamic, c._mode, c._options or None))


def _rebuild(mod: Module, backend: Any, fullgraph: bool, dynamic: bool | None, mode: str | None,
             options: dict[str, Any] | None) -> OptimizedModule:
    return compile(mod, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode,  # type: ignore[no-any-return]
                   options=options)


def optimize(backend: Any = "inductor", *, nopython: bool = False, dynamic: bool | None = None,
             disable: bool = False, **kwargs: Any) -> Callable[[Any], Any]:
    """``torch._dynamo.optimize``: a decorator compiling its function or module with ``backend``."""
    def deco(model: Any) -> Any:
        return compile(model, backend=backend, fullgraph=nopython, dynamic=dynamic, disable=disable)
    return deco


def compile(model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None,  # noqa: A001
            backend: Any = "inductor", mode: str | None = None, options: dict[str, Any] | None = None,
            disable: bool = False) -> Any:
    """``torch.compile``: the function or module captured as graphs and run by ``backend`` (Note [Capture])."""
    if model is None:
        def deco(m: Any) -> Any:
            return compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return deco
    if not callable(model):
        raise RuntimeError("torch.compile() expects a callable or a Module")
    if disable:
        return model
    if isinstance(model, Module):
        compiled = CompiledFunction(model.__call__, backend=backend, fullgraph=fullgraph, dynamic=dynamic,
                                    mode=mode, options=options, module=model)
        return OptimizedModule(model, compiled)
    owner = getattr(model, "__self__", None)    # a module's bound method (Module.compile's _call_impl, forward)
    return CompiledFunction(model, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                            options=options, module=owner if isinstance(owner, Module) else None)


def reset() -> None:
    """Forget every captured graph (each compiled function captures again on its next call) and the fallbacks
    recorded so far."""
    for c in list(_ALL):
        c._reset()
    recent_fallbacks.clear()


def disable(fn: Any = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Keep ``fn`` out of graphs: called inside a compiled region it is a graph break, compiled it runs
    eagerly; usable bare or with arguments as a decorator."""
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    if isinstance(fn, CompiledFunction):
        return fn._fn
    if isinstance(fn, OptimizedModule):
        return fn._orig_mod

    @functools.wraps(fn)
    def disabled(*args: Any, **kwargs: Any) -> Any:
        _cs.graph_break(f"Skip calling `torch.compiler.disable()`d function {getattr(fn, '__qualname__', fn)}",
                        "A function marked with torch.compiler.disable runs eagerly" +
                        (f" ({reason})" if reason else "") + ".")
        return fn(*args, **kwargs)
    disabled._torchdynamo_disable = True  # type: ignore[attr-defined]
    return disabled


class ExplainOutput:
    """What ``explain`` found: the graphs, the breaks with their reasons and source lines, the ops; and the
    fallbacks compilation recorded since the last ``reset()`` (Note [Compile fallbacks] in utils.py)."""

    def __init__(self, graphs: list[Any], break_reasons: list[Any], compile_times: str = "") -> None:
        self.graphs = graphs
        self.graph_count = len(graphs)
        self.graph_break_count = len(break_reasons)
        self.break_reasons = break_reasons
        self.ops_per_graph = [[n.target for n in g.graph.nodes if n.op == "call_function"] for g in graphs]
        self.op_count = sum(len(ops) for ops in self.ops_per_graph)
        self.out_guards: list[Any] = []
        self.compile_times = compile_times
        self.fallbacks = list(recent_fallbacks)

    def __str__(self) -> str:
        s = f"Graph Count: {self.graph_count}\nGraph Break Count: {self.graph_break_count}\nOp Count: " \
            f"{self.op_count}\n"
        s += "Break Reasons:\n"
        for i, r in enumerate(self.break_reasons, 1):
            s += f"  Break Reason {i}:\n    Reason: {r.reason}\n    User Stack:\n"
            for fs in r.user_stack:
                s += f"      <FrameSummary file {fs.filename}, line {fs.lineno} in {fs.name}>\n"
        s += "Ops per Graph:\n"
        for i, ops in enumerate(self.ops_per_graph, 1):
            s += f"  Ops {i}:\n" + "".join(f"    {op}\n" for op in ops)
        if self.fallbacks:
            s += "Fallbacks (since the last reset):\n"
            for fb in self.fallbacks:
                s += f"  {fb.kind}: {fb.cause}" + (f" (at {fb.where})" if fb.where else "") + "\n"
        return s


def explain(f: Callable[..., Any], *extra_args: Any, **extra_kwargs: Any) -> Callable[..., ExplainOutput]:
    """``explain(f)(*args)``: capture ``f`` on these arguments and report the graphs and graph breaks."""
    def inner(*args: Any, **kwargs: Any) -> ExplainOutput:
        from ember._dynamo.capture import capture
        fn, module = f, None
        if isinstance(f, OptimizedModule):
            fn, module = f._orig_mod.__call__, f._orig_mod
        elif isinstance(f, CompiledFunction):
            fn, module = f._fn, f._module
        elif isinstance(f, Module):
            fn, module = f.__call__, f
        start = time.perf_counter()
        c = capture(fn, args, kwargs, modules=[module] if module is not None else [],
                    globals_fn=module.forward if module is not None else None)
        took = ("TorchDynamo compilation metrics:\nFunction    Runtimes (s)\n"
                f"_compile    {time.perf_counter() - start:.4f}")
        if c.graph_break is not None:
            return ExplainOutput([], [c.graph_break], took)
        return ExplainOutput([c.gm], [], took)
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)  # type: ignore[return-value]
    return inner


__all__ = ["compile", "optimize", "OptimizedModule", "reset", "disable", "explain", "ExplainOutput"]
