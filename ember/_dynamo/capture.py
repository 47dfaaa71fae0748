"""Graph capture: one call of a Python function recorded as an ATen graph, with the guards under which the graph
stands for the function (``torch/_dynamo/convert_frame.py`` + ``guards.py``, by tracing rather than by bytecode).

Note [Capture]
PyTorch's Dynamo reads the function's bytecode. ember runs the function once under ``make_fx`` on fake tensors
(Note [make_fx], Note [Fake tensors]): every operator that reaches the dispatcher becomes a node, no value is
computed, and what the function did with Python is gone from the graph. The capture therefore watches the Python
side while it runs, and gives up -- a *graph break* -- whenever the graph would not replay the function exactly:

* a value read from a tensor (``if x.sum() > 0``, ``.item()``, ``.tolist()``, ``.numpy()``) or an operator whose
  output shape depends on the data (``nonzero``): the fake tensor raises, the capture turns it into a break;
* Python-level state the graph cannot replay, stopped *before* it changes (Note [Capture and Python state]);
* a call with an effect outside ember (``print``, file and stream writes, ``input``, ``time.*``, Python's and
  NumPy's random generators, a mutating method of a list, dict or set that existed before the call), stopped
  before it runs by a profile hook (``sys.setprofile`` sees every C call);
* anything else that fails on fake tensors but may run eagerly.

The same run also records the torch-level calls for a backend of the user's (Note [Torch-level graph] in
``output_graph.py``); ember's own backends compile the ATen graph.

On a break the function runs eagerly for the inputs the guards describe (the break is cached like a graph), or
with ``fullgraph=True`` raises ``Unsupported``. ember does not split the function at the break and resume it
after the break as Dynamo does: resuming a Python frame half-way needs bytecode rewriting. A whole-function eager
run is always the eager result, which is the point of a break.

Note [Capture and Python state]
A graph replayed later must not depend on Python values it did not check. The guards cover:
* each argument: a tensor's class, sizes, strides, dtype, device and ``requires_grad``, and which arguments
  are the same tensor; any other value by equality (numbers, strings, dtypes) or identity (objects);
* grad mode and the default dtype;
* the globals the traced code read (each user frame's names, recorded when the frame starts: ember's and the
  standard library's frames are not user code), and the cells of the function's closure;
* the modules involved (the compiled module's tree, modules passed or read as globals): training flags,
  attributes, parameters and buffers (identity, shape, dtype, requires_grad), submodules and hooks. This snapshot
  is recomputed only when ``compile_state.epoch`` moved -- a module attribute was set, a parameter's data or
  requires_grad replaced, a hook registered or removed -- so a training loop pays for it once per ``train()``.
Mutations the profile hook cannot stop before they happen (``d[k] = v``, ``obj.attr = v``, ``global x``) are found
afterwards by comparing shallow snapshots of the same roots, undone, and reported as a break. What is out of reach
-- objects more than two references away from the function's globals, closure, arguments and modules -- is not
guarded; a program that changes such state between calls must mark the code with ``ember.compiler.disable``.

Note [Backward inside a capture]
``loss.backward()`` inside a compiled function is traced like any other code: the engine runs every formula on
the fake tensors, and the proxy mode records their operators. What it must not do is write ``.grad`` of a real
tensor (a parameter) with a fake value. While a capture runs, ``AccumulateGrad`` hands the sum to the capture
(``accumulate_grad``), and ``Tensor.grad`` reads and writes of real tensors go to the capture's view of them
(``read_grad`` / ``write_grad``): a ``.grad`` that was None on entry is guarded to be None; one that was set is a
graph input (its current value is passed on every call, so accumulation across calls and ``zero_()`` work); a
write before any read (``zero_grad()``) needs no entry value at all. The graph returns the final ``.grad`` of
every tensor the code touched after its own outputs, and the compiled function assigns them after each run. Such
a graph computes its own gradients, so it runs without autograd: its grad-mode switches are dropped and the
backends see no input that needs autograd. ``optimizer.step()`` then is the optimizers' fused operators writing
into parameters and state tensors, which the graph keeps like any write. A ``backward()`` into the ``.grad`` of an
argument (a fake tensor), ``create_graph=True`` and post-accumulate-grad hooks are breaks.
"""
from __future__ import annotations

import builtins
import contextlib
import io
import os
import random as _random
import sys
import sysconfig
import time as _time
import traceback
import types
from typing import Any, Callable

from ember._dynamo.output_graph import EMBER_DIR as _EMBER_DIR, is_torch_constant
from ember._tensor import Tensor
from ember.c10 import compile_state as _cs
from ember.c10 import dtype as _dtype_mod
from ember.c10.grad_mode import state as _grad_state
from ember.utils._pytree import tree_flatten, tree_unflatten
from ember.c10.generator import default_generator

_STDLIB_DIRS = tuple({os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")})
_NUMPY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__import__("numpy").__file__))) + os.sep + "numpy" + \
    os.sep
_SCALARS = (int, float, bool, str, bytes, complex, type(None))
_MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update",
                       "setdefault", "popitem", "add", "discard", "difference_update", "intersection_update",
                       "symmetric_difference_update", "appendleft", "extendleft", "popleft", "rotate",
                       "__setitem__", "__delitem__", "__iadd__"})
_IO_BUILTINS = {builtins.print: "print()", builtins.input: "input()", builtins.open: "open()",
                builtins.breakpoint: "breakpoint()"}


class BreakInfo:
    """Why and where a capture stopped (``explain()`` lists these)."""

    def __init__(self, reason: str, explanation: str, hints: tuple[str, ...], user_stack: list[Any]) -> None:
        self.reason = reason
        self.explanation = explanation
        self.hints = hints
        self.user_stack = user_stack   # traceback.FrameSummary entries of the user's code, innermost last
        self.graph_break = True
        self.retry = False             # a state change that may not recur (a lazily made buffer): capture again
        self.user_error = False        # PyTorch raises UserError for it under fullgraph=True, not Unsupported
        self.value_read = False        # a .item(): a capture with the torch-level recorder may hold it
        self.raised: BaseException | None = None   # what the capture raised (Note [Compile fallbacks])

    def message(self) -> str:
        """The text of PyTorch's ``Unsupported`` error for this break."""
        lines = [self.reason]
        if self.explanation:
            lines.append(f"  Explanation: {self.explanation}")
        lines += [f"  Hint: {h}" for h in self.hints]
        lines += ["", "from user code:"]
        for fs in self.user_stack:
            lines.append(f'   File "{fs.filename}", line {fs.lineno}, in {fs.name}')
            if fs.line:
                lines.append(f"    {fs.line}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        where = self.user_stack[-1] if self.user_stack else None
        at = f" at {where.filename}:{where.lineno}" if where is not None else ""
        return f"GraphBreak({self.reason!r}{at})"


def is_user_file(filename: str) -> bool:
    """Whether code in ``filename`` is the program's own (not ember, the standard library or NumPy)."""
    return not (filename.startswith(_EMBER_DIR) or filename.startswith(_STDLIB_DIRS)
                or filename.startswith(_NUMPY_DIR) or filename.startswith("<frozen "))


def _user_frames(tb: Any) -> list[Any]:
    frames = [(f, ln) for f, ln in traceback.walk_tb(tb) if is_user_file(f.f_code.co_filename)]
    return list(traceback.StackSummary.extract(frames, lookup_lines=True))


# ----------------------------------------------------------------------------------------------- Python state
def _value_key(v: Any) -> Any:
    """What a guard compares of a Python value: numbers and strings by value, everything else by identity."""
    return (type(v), v) if type(v) in _SCALARS else ("id", id(v))


def _is_plain_object(v: Any) -> bool:
    return hasattr(v, "__dict__") and not isinstance(v, (type, types.ModuleType, types.FunctionType,
                                                         types.MethodType, types.BuiltinFunctionType, Tensor))


class _Snapshot:
    """Shallow copies of the containers and object dicts reachable from the roots, to find (and undo) what a
    capture changed that the profile hook could not stop."""

    def __init__(self) -> None:
        self.items: dict[int, tuple[Any, Any, str]] = {}   # id -> (container, its copy, description)
        self.module_dicts: set[int] = set()               # (modules have guards of their own: module_state)

    def add(self, obj: Any, what: str, depth: int = 2) -> None:
        from ember.nn import Module
        if id(obj) in self.items or isinstance(obj, Tensor):
            return
        if isinstance(obj, dict):
            self.items[id(obj)] = (obj, dict(obj), what)
            children = list(obj.items())
        elif isinstance(obj, (list, set, bytearray)) or type(obj).__name__ == "deque":
            self.items[id(obj)] = (obj, list(obj) if not isinstance(obj, set) else set(obj), what)
            children = [(i, v) for i, v in enumerate(obj)] if not isinstance(obj, set) else []
        elif isinstance(obj, Module) or _is_plain_object(obj):
            d = getattr(obj, "__dict__", None)
            if not isinstance(d, dict):
                return
            self.items[id(d)] = (d, dict(d), what)
            children = list(d.items())
            if isinstance(obj, Module):
                self.module_dicts.add(id(d))
                depth += 1          # a module's own dicts are part of the module
        else:
            return
        if depth > 0:
            for k, v in children:
                if isinstance(v, (dict, list, set)) or isinstance(v, Module) or _is_plain_object(v):
                    self.add(v, f"{what}.{k}" if isinstance(k, str) else f"{what}[{k!r}]", depth - 1)

    def changed(self) -> str | None:
        for obj, copy, what in self.items.values():
            if _differs(obj, copy):
                return what
        return None

    def restore(self) -> None:
        for obj, copy, _ in self.items.values():
            if _differs(obj, copy):
                obj.clear()
                if isinstance(obj, (dict, set)):
                    obj.update(copy)
                else:
                    obj.extend(copy)


def _differs(obj: Any, copy: Any) -> bool:
    """Whether a container no longer holds what its shallow copy does (the same objects, for dicts and lists)."""
    if isinstance(obj, dict):
        return len(obj) != len(copy) or any(k not in copy or copy[k] is not v for k, v in obj.items())
    if isinstance(obj, set):
        return bool(obj != copy)
    return len(obj) != len(copy) or any(a is not b for a, b in zip(obj, copy))


class _Watcher(_cs.Capture):
    """The profile hook of a capture: records the globals each user frame reads (for guards) and stops calls
    with effects outside ember before they run (Note [Capture]); and the capture the core reports to (Note
    [Capture interface] in ember/c10/compile_state.py)."""

    def __init__(self, snapshot: _Snapshot) -> None:
        self.snapshot = snapshot
        self.globals_read: dict[tuple[int, str], tuple[dict[str, Any], str, Any]] = {}
        self._user_code: dict[Any, bool] = {}
        self.previous: Any = None
        # Note [Backward inside a capture]
        self.did_backward = False
        self.grads: dict[int, list[Any]] = {}          # id(leaf) -> [leaf, its .grad as the code sees it now]
        self.grad_at_entry: dict[int, tuple[Any, Any]] = {}   # id(leaf) -> (leaf, None or the fake of its .grad)
        self.new_input: Callable[[Any], Any] | None = None    # a graph input for a tensor found while tracing
        self.fresh: set[int] = set()      # modules made during the capture: free to change

    def module_created(self, module: Any) -> None:
        self.fresh.add(id(module))

    def module_changing(self, module: Any, name: str, value: Any, what: str) -> None:
        """A module made before the capture keeps its structure and attributes (assigning what it already
        holds changes nothing)."""
        if id(module) in self.fresh or (value is not _cs.DELETED and _current_attr(module, name) is value):
            return
        kind = "deleted an attribute of" if value is _cs.DELETED else \
            "changed an attribute of" if what == "setattr" else "changed the structure of"
        raise _cs.GraphBreak(f"{what} of {type(module).__name__}.{name}",
                             f"A compiled region {kind} a module, which its graph cannot replay.")

    def backward_started(self, create_graph: bool) -> None:
        if create_graph:
            raise _cs.GraphBreak("backward(create_graph=True)", "A compiled region differentiated twice.")
        self.did_backward = True

    def read_grad(self, t: Any) -> Any:
        """``t.grad`` inside the capture: what the traced code last gave it, else what it had on entry -- None
        (a guard) or a graph input (its fake twin; the tensor is passed on every call)."""
        hit = self.grads.get(id(t))
        if hit is not None:
            return hit[1]
        entry = self.grad_at_entry.get(id(t))
        if entry is None:
            real = t.__dict__.get("_grad")
            fake = None
            if real is not None:
                if self.new_input is None:
                    raise _cs.GraphBreak("Reading a .grad set before the compiled region")
                fake = self.new_input(t)
            entry = self.grad_at_entry[id(t)] = (t, fake)
        return entry[1]

    def write_grad(self, t: Any, value: Any) -> None:
        if id(t) not in self.grads and id(t) not in self.grad_at_entry:
            self.grad_at_entry[id(t)] = (t, _UNREAD)
        self.grads[id(t)] = [t, value]

    def accumulate_grad(self, var: Any, g: Any, node: Any) -> None:
        """AccumulateGrad inside the capture: the sum is a value of the graph, given to ``var.grad`` after each
        run of the graph."""
        if "fake_mode" in var.__dict__:
            raise _cs.GraphBreak("backward() into the .grad of an argument of the compiled function",
                                 "Only tensors the function reads from outside (parameters) can receive "
                                 "gradients inside a compiled region.")
        if node._post_acc_hooks:
            raise _cs.GraphBreak("A post-accumulate-grad hook inside a compiled region")
        old = self.read_grad(var)
        g = g.detach()
        self.write_grad(var, g if old is None else old + g)

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            user = self._user_code.get(code)
            if user is None:
                user = self._user_code[code] = is_user_file(code.co_filename)
            if user and code.co_name != "<module>":     # (a module's own code runs when it is imported)
                g = frame.f_globals
                for name in code.co_names:
                    key = (id(g), name)
                    if key not in self.globals_read and name in g:
                        v = g[name]
                        self.globals_read[key] = (g, name, v)
                        if isinstance(v, (dict, list, set)) or _is_plain_object(v):
                            self.snapshot.add(v, name)
        elif event == "c_call":
            self._check_c_call(frame, arg)

    def _check_c_call(self, frame: Any, fn: Any) -> None:
        what = _IO_BUILTINS.get(fn) if type(fn) is types.BuiltinFunctionType else None
        owner = getattr(fn, "__self__", None)
        if what is None and owner is not None:
            name = getattr(fn, "__name__", "")
            if isinstance(owner, io.IOBase):
                what = f"{type(owner).__name__}.{name}() (I/O)"
            elif isinstance(owner, _random.Random):
                what = f"random.{name}()"
            elif type(owner).__name__ in ("RandomState", "Generator") and \
                    type(owner).__module__.startswith("numpy.random"):
                what = f"numpy.random.{name}()"
            elif owner is _time:
                what = f"time.{name}()"
            elif name in _MUTATORS and id(owner) in self.snapshot.items:
                what = f"{type(owner).__name__}.{name}() on {self.snapshot.items[id(owner)][2]}"
            elif name in _MUTATORS and id(getattr(owner, "__dict__", None)) in self.snapshot.items:
                what = f"{type(owner).__name__}.{name}()"
        if what is not None and _called_by_program(frame):
            raise _cs.GraphBreak(f"Attempted to call {what} inside a compiled region",
                                 "The call has an effect (or a result) outside ember's tensors, which a graph "
                                 "cannot replay.",
                                 ("Move the call out of the compiled function, or mark the function that makes it "
                                  "with ember.compiler.disable.",))


def _current_attr(module: Any, name: str) -> Any:
    """What ``module.name`` holds now (a parameter, buffer, submodule or plain attribute), or a fresh sentinel."""
    d = module.__dict__
    for key in ("_parameters", "_buffers", "_modules"):
        sub = d.get(key)
        if sub is not None and name in sub:
            return sub[name]
    return d.get(name, _cs.DELETED)


def _chained(user_profile: Any, watcher: Any) -> Any:
    """A user's ``sys.setprofile`` function keeps seeing every event while a capture watches them too."""
    def profile(frame: Any, event: str, arg: Any) -> Any:
        user_profile(frame, event, arg)
        return watcher(frame, event, arg)
    return profile


_MACHINERY = tuple(_EMBER_DIR + d + os.sep for d in ("aten", "c10", "autograd", "fx", "_subclasses", "utils",
                                                      "_decomp"))


def _called_by_program(frame: Any) -> bool:
    """Whether a C call comes from the traced program, not from ember's operator machinery (a kernel loading
    numba) or an import in progress: only the program's own effects are stopped."""
    f = frame
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith("<frozen importlib") or name.startswith(_MACHINERY):
            return False
        if f.f_code is capture.__code__:
            return True
        f = f.f_back
    return True


# ----------------------------------------------------------------------------------------------- module state
def module_state(modules: list[Any]) -> tuple[Any, ...]:
    """Everything of these modules a graph may depend on (Note [Capture and Python state])."""
    out: list[Any] = []
    for m in modules:
        row: list[Any] = [id(m)]
        for k, v in m.__dict__.items():
            if k == "_parameters" or k == "_buffers":
                row.append((k, tuple((n, id(p), None if p is None else (p._data.shape, p._data.dtype, p._rg))
                                     for n, p in v.items())))
            elif isinstance(v, dict):
                row.append((k, tuple(v.keys()), tuple(id(x) for x in v.values())))
            elif isinstance(v, set):
                row.append((k, tuple(sorted(map(str, v)))))
            else:
                row.append((k, _value_key(v)))
        out.append(tuple(row))
    return tuple(out)


def modules_in(roots: list[Any]) -> list[Any]:
    """The modules of the trees of ``roots``, each once."""
    seen: dict[int, Any] = {}
    for r in roots:
        for m in r.modules():
            seen.setdefault(id(m), m)
    return list(seen.values())


# ----------------------------------------------------------------------------------------------- guards
class Guards:
    """The checks under which a captured graph stands for the function, compiled into one Python expression
    (``check``) and kept one by one to say which failed (``failure``)."""

    def __init__(self) -> None:
        self.checks: list[tuple[str, Any]] = []   # (expression over L, what it means: a string or L -> string)
        self.env: dict[str, Any] = {}
        self.modules: list[Any] = []
        self.module_state: tuple[Any, ...] = ()
        self.epoch = -1
        self._fn: Callable[..., bool] | None = None
        # per tensor argument: (index of its size check, of its stride check, shape, contiguous)
        self.tensor_checks: dict[int, tuple[int, int, tuple[int, ...], bool]] = {}

    def const(self, v: Any) -> str:
        name = f"c{len(self.env)}"
        self.env[name] = v
        return name

    def add(self, expr: str, what: Any) -> None:
        self.checks.append((expr, what))

    def finish(self) -> None:
        src = "def check(L):\n    return " + (" and ".join(f"({e})" for e, _ in self.checks) or "True") + "\n"
        ns = dict(self.env)
        exec(compile(src, "<ember guards>", "exec"), ns)
        self._fn = ns["check"]
        self._each = [(eval(compile(f"lambda L: {e}", "<ember guard>", "eval"), dict(self.env)), w)
                      for e, w in self.checks]

    def __call__(self, leaves: list[Any]) -> bool:
        assert self._fn is not None
        if not self._fn(leaves):
            return False
        if _cs.epoch.epoch != self.epoch:
            if self.modules and module_state(self.modules) != self.module_state:
                return False
            self.epoch = _cs.epoch.epoch
        return True

    def passes_except_sizes(self, leaves: list[Any]) -> bool:
        """Whether every guard but the tensor arguments' size and stride checks passes (Note [Dynamic sizes])."""
        skip = {k for i0, i1, _, _ in self.tensor_checks.values() for k in (i0, i1)}
        for k, (fn, _) in enumerate(self._each):
            if k in skip:
                continue
            try:
                if not fn(leaves):
                    return False
            except Exception:
                return False
        return not self.modules or module_state(self.modules) == self.module_state

    def dynamic(self, groups: list[tuple[tuple[int, ...], list[tuple[int, int]]]]) -> Guards:
        """These guards with the listed dimensions free (any size >= 2, the dimensions of a group equal to each
        other) instead of the tensors' sizes and strides (Note [Dynamic sizes])."""
        dyn: dict[int, set[int]] = {}
        for _, where in groups:
            for i, d in where:
                dyn.setdefault(i, set()).add(d)
        replaced = {k: i for i, (i0, i1, _, _) in self.tensor_checks.items() if i in dyn for k in (i0, i1)}
        g = Guards()
        g.env = dict(self.env)
        g.modules, g.module_state, g.epoch = self.modules, self.module_state, self.epoch
        for k, (expr, what) in enumerate(self.checks):
            if k not in replaced:
                g.checks.append((expr, what))
        for i, dims in dyn.items():
            _, _, shape, _ = self.tensor_checks[i]
            parts = [f"L[{i}]._data.ndim == {len(shape)}", f"L[{i}]._data.flags.c_contiguous"]
            parts += [f"L[{i}]._data.shape[{d}] >= 2" if d in dims else f"L[{i}]._data.shape[{d}] == {shape[d]}"
                      for d in range(len(shape))]
            g.add(" and ".join(parts), f"tensor {i}'s size outside what the dynamic graph covers")
        for _, where in groups:
            (i0, d0) = where[0]
            for i, d in where[1:]:
                g.add(f"L[{i}]._data.shape[{d}] == L[{i0}]._data.shape[{d0}]", "two dynamic sizes differ")
        g.finish()
        return g

    def failure(self, leaves: list[Any]) -> str:
        """The first failing guard, in words."""
        for fn, what in self._each:
            try:
                ok = fn(leaves)
            except Exception:
                ok = False
            if not ok:
                return what(leaves) if callable(what) else what
        if self.modules and module_state(self.modules) != self.module_state:
            return "the state of a module changed (an attribute, a parameter, a buffer, a hook or training mode)"
        return "unknown"


_CONTAINER_GUARD_MAX = 64


def _container_guards(g: Guards, snapshot: _Snapshot) -> None:
    """Guards on the containers and object dicts the function can reach (an optimizer's ``param_groups`` with
    its learning rate, its ``state`` with its buffers): their length, their numbers and strings by value, the
    rest by identity -- the values the graph was traced with (Note [Capture and Python state])."""
    for key, (obj, copy, what) in snapshot.items.items():
        if key in snapshot.module_dicts or isinstance(obj, set):
            continue
        c = g.const(obj)
        g.add(f"len({c}) == {len(copy)}", f"the length of {what} changed")
        if len(copy) > _CONTAINER_GUARD_MAX:
            continue
        items = copy.items() if isinstance(copy, dict) else enumerate(copy)
        for k, v in items:
            if isinstance(copy, dict):
                kx = repr(k) if type(k) in (str, int) else g.const(k)
                expr = f"{c}.get({kx}, {g.const(_MISSING)})"
            else:
                expr = f"{c}[{k}]"
            _value_guard(g, expr, v, f"{what}[{k!r}]" if not isinstance(k, str) else f"{what}.{k}")


def _tensor_guards(g: Guards, i: int, t: Tensor, name: str) -> None:
    """The checks of one tensor argument, in the order PyTorch's TENSOR_MATCH reports them."""
    a = t._data
    g.add(f"type(L[{i}]) is {g.const(type(t))}", f"the class of tensor '{name}' changed")
    g.add(f"L[{i}]._data.dtype == {g.const(a.dtype)}", f"tensor '{name}' dtype mismatch: expected {t.dtype}")
    g.add(f"L[{i}]._device == {g.const(t._device)}", f"tensor '{name}' device mismatch: expected {t.device}")
    g.add(f"L[{i}]._rg is {t._rg}", f"tensor '{name}' requires_grad mismatch: expected {t._rg}")
    g.tensor_checks[i] = (len(g.checks), len(g.checks) + 1, tuple(a.shape), bool(a.flags.c_contiguous))
    g.add(f"L[{i}]._data.shape == {tuple(a.shape)!r}", lambda L: _mismatch(name, "size", tuple(a.shape),
                                                                          tuple(L[i].shape)))
    item = a.itemsize
    g.add(f"L[{i}]._data.strides == {tuple(a.strides)!r}",
          lambda L: _mismatch(name, "stride", tuple(s // item for s in a.strides), tuple(L[i].stride())))


def _mismatch(name: str, what: str, expected: tuple[int, ...], actual: tuple[int, ...]) -> str:
    """PyTorch's words for a failed size or stride guard."""
    if len(expected) != len(actual):
        return f"tensor '{name}' rank mismatch. expected {len(expected)}, actual {len(actual)}"
    i = next((k for k in range(len(expected)) if expected[k] != actual[k]), None)
    if i is None:
        return f"tensor '{name}' {what} mismatch"
    return f"tensor '{name}' {what} mismatch at index {i}. expected {expected[i]}, actual {actual[i]}"


def _value_guard(g: Guards, expr: str, v: Any, what: str) -> None:
    if v is None or type(v) is bool:
        g.add(f"{expr} is {v!r}", f"{what} changed: expected {v!r}")
    elif type(v) is float and v != v:           # NaN equals nothing, itself included
        g.add(f"type({expr}) is float and {expr} != {expr}", f"{what} changed: expected nan")
    elif type(v) in _SCALARS:
        g.add(f"type({expr}) is {type(v).__name__} and {expr} == {g.const(v)}", f"{what} changed: expected {v!r}")
    else:
        g.add(f"{expr} is {g.const(v)}", f"{what} is a different object")


# ----------------------------------------------------------------------------------------------- capture
class Captured:
    """The result of one capture: a graph (``gm``) or a break (``graph_break``), and the guards of either."""

    def __init__(self, guards: Guards, gm: Any = None, graph_break: BreakInfo | None = None,
                 example_inputs: list[Any] | None = None) -> None:
        self.guards = guards
        self.gm = gm
        self.graph_break = graph_break
        self.example_inputs = example_inputs or []
        self.grad_leaves: list[Any] = []       # tensors whose .grad the graph's last outputs are
        self.extra_inputs: list[Any] = []      # tensors whose current .grad is passed after the arguments
        self.self_differentiating = False
        self.out_spec: Any = None                  # the result's structure when the graph returns it flat
        # Note [Torch-level graph]: (GraphModule, example inputs, inputs plan, rebuild), or why there is none
        self.torch_level: Any = None
        self.torch_level_failure: str | None = None
        self.n_leaves = 0                          # how many flattened arguments the call had
        self.data_dependent = False                # only the torch-level graph is valid (a value was read)


def _arg_names(fn: Callable[..., Any], leaves: list[Any], spec: Any) -> list[str]:
    """Readable names of the flattened arguments (for guard failures): the parameter names where they map 1:1."""
    import inspect
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        params = []
    names = []
    for i in range(len(leaves)):
        names.append(params[i] if i < len(params) and len(leaves) == len(params) else f"L[{i}]")
    return names


def capture(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *,
            modules: list[Any] = (), globals_fn: Callable[..., Any] | None = None,
            torch_level: bool = False, capture_scalars: bool = False) -> Captured:
    """Trace ``fn(*args, **kwargs)`` on fake tensors into an ATen graph (Note [Capture]); with ``torch_level``,
    also into the graph of its torch-level calls (Note [Torch-level graph]), which with ``capture_scalars`` holds
    the numbers read by ``.item()`` (Note [Values read inside a graph])."""
    from ember.fx.experimental.proxy_tensor import ProxyTorchDispatchMode
    from ember.fx.graph import Graph
    from ember.fx.graph_module import GraphModule
    from ember._subclasses.fake_tensor import (DataDependentOutputException, DynamicOutputShapeException,
                                               FakeTensor, FakeTensorMode)
    from ember.nn import Module

    leaves, spec = tree_flatten((args, kwargs))
    names = _arg_names(globals_fn or fn, leaves, spec)
    g = Guards()
    g.add(f"len(L) == {len(leaves)}", "the number of arguments changed")
    tensor_pos = [i for i, x in enumerate(leaves) if isinstance(x, Tensor)]
    first_of: dict[int, int] = {}
    for i in tensor_pos:
        t = leaves[i]
        if id(t) in first_of:
            g.add(f"L[{i}] is L[{first_of[id(t)]}]", f"'{names[i]}' is no longer the same tensor as "
                  f"'{names[first_of[id(t)]]}'")
            continue
        first_of[id(t)] = i
        _tensor_guards(g, i, t, names[i])
    if len(first_of) > 1:
        distinct = [first_of[k] for k in first_of]
        g.add(f"len({{{', '.join(f'id(L[{i}])' for i in distinct)}}}) == {len(distinct)}",
              "two tensor arguments are now the same tensor")
    for i, x in enumerate(leaves):
        if not isinstance(x, Tensor):
            _value_guard(g, f"L[{i}]", x, f"argument '{names[i]}'")
    g.add(f"{g.const(_grad_state)}.enabled is {_grad_state.enabled}", f"grad mode changed: expected "
          f"{_grad_state.enabled}")
    g.add(f"{g.const(_dtype_mod)}._default is {g.const(_dtype_mod.get_default_dtype())}",
          "the default dtype changed")

    # the Python state the function can reach (Note [Capture and Python state])
    snapshot = _Snapshot()
    module_roots = list(modules) + [x for x in leaves if isinstance(x, Module)]
    for m in module_roots:
        snapshot.add(m, type(m).__name__)
    for x in leaves:
        if not isinstance(x, Module) and (isinstance(x, (dict, list, set)) or _is_plain_object(x)):
            snapshot.add(x, "an argument")
    owner = getattr(fn, "__self__", None)         # a compiled bound method (``opt.step``): its object is state too
    if isinstance(owner, Module):
        if owner not in module_roots:
            module_roots.append(owner)
            snapshot.add(owner, type(owner).__name__)
    elif owner is not None and _is_plain_object(owner):
        snapshot.add(owner, "self")
    func = getattr(globals_fn or fn, "__func__", globals_fn or fn)
    cells = [(c, c.cell_contents) for c in (getattr(func, "__closure__", None) or ()) if _cell_has(c)]
    for c, v in cells:
        if isinstance(v, (dict, list, set)) or _is_plain_object(v) or isinstance(v, Module):
            snapshot.add(v, "a closure variable")
    watcher = _Watcher(snapshot)

    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    graph = Graph()
    root = Module.__new__(Module)
    Module.__init__(root)
    const_names: dict[int, str] = {}     # parameters and buffers named by their path: self_fc1_weight
    for r in module_roots:
        prefix = "self" if r in modules else _safe(type(r).__name__.lower())
        for qual, t in list(r.named_parameters()) + list(r.named_buffers()):
            const_names.setdefault(id(t), f"{prefix}_{_safe(qual)}")
    mode = ProxyTorchDispatchMode(graph, root, None, "fake", record_grad_mode=True, record_stack_traces=True,
                                  constant_names=const_names)
    call_leaves = list(leaves)
    for pos, i in enumerate(tensor_pos):
        f = fake_mode.from_tensor(leaves[i])
        call_leaves[i] = f
        if first_of.get(id(leaves[i])) == i:
            node = graph.placeholder(f"{_safe(names[i])}_1" if not names[i].startswith("L[") else f"arg{pos}_1")
            node.meta["val"] = f
            mode.track(f, node)
    call_args, call_kwargs = tree_unflatten(call_leaves, spec)
    call_arg_leaves = tree_flatten((call_args, call_kwargs))[0]
    extra_inputs: list[Any] = []      # tensors whose .grad on entry every call passes after the arguments

    def new_input(t: Any) -> Any:
        f = fake_mode.from_tensor(t.__dict__["_grad"])
        last = [n for n in graph.nodes if n.op == "placeholder"][-1:]     # after the arguments' inputs
        with graph.inserting_after(last[0]) if last else graph.inserting_before(None):
            node = graph.placeholder(f"grad_{len(extra_inputs)}")
        node.meta["val"] = f
        mode.track(f, node)
        extra_inputs.append(t)
        return f
    watcher.new_input = new_input

    recorder = _recorder(fn, globals_fn, args, kwargs, call_leaves, leaves, tensor_pos, first_of,
                         modules, capture_scalars) if torch_level else None

    grad_before = _grad_state.enabled
    rng_before = default_generator.get_state()      # a kernel run on zeros (no Meta kernel) may draw numbers
    brk: BreakInfo | None = None
    out: Any = None
    previous_profile = sys.getprofile()
    _cs.state.capturing = watcher
    try:
        sys.setprofile(watcher if previous_profile is None else _chained(previous_profile, watcher))
        try:
            with fake_mode, mode, recorder if recorder is not None else contextlib.nullcontext():
                out = fn(*call_args, **call_kwargs)
            mode.sync_grad_mode()       # a grad-mode change the code made and undid after its last op
        finally:
            sys.setprofile(previous_profile)
            _cs.state.capturing = None
    except _cs.GraphBreak as e:
        brk = BreakInfo(e.reason, e.explanation, e.hints, _user_frames(e.__traceback__))
        brk.user_error = getattr(e, "user_error", False)     # a branch on a value read inside the graph
    except DataDependentOutputException as e:
        brk = _data_dependent_break(e)
    except DynamicOutputShapeException as e:
        brk = BreakInfo("Dynamic shape operator",
                        f"Operator `{e.func}`'s output shape depends on input Tensor data.",
                        ("Enable tracing of dynamic shape operators with "
                         "`torch._dynamo.config.capture_dynamic_output_shape_ops = True`",),
                        _user_frames(e.__traceback__))
    except Exception as e:  # anything else that fails on fake tensors: the eager run decides
        first_line = f"{type(e).__name__} while tracing: {e}".split("\n")[0]
        brk = _data_dependent_break(e, strict=False)
        if brk is None:
            brk = BreakInfo(first_line, "The function raised while being traced on fake tensors; it runs eagerly.",
                            (), _user_frames(e.__traceback__))
            brk.raised = e
    finally:
        _grad_state.enabled = grad_before
        default_generator.set_state(rng_before)
    if brk is None:
        what = snapshot.changed()
        now = tree_flatten((call_args, call_kwargs))[0]
        if what is None and (len(now) != len(call_arg_leaves) or any(a is not b for a, b in zip(now, call_arg_leaves))):
            what = "an argument"
        if what is not None:
            brk = BreakInfo(f"Mutation of {what} inside a compiled region",
                            "The function changed Python state that a graph cannot replay (the change was undone).",
                            ("Keep state changes out of the compiled function.",), [])
            brk.retry = True
    if brk is not None:
        snapshot.restore()

    # guards on the globals and closure the traced code read, and on the modules' state
    for gdict, name, v in watcher.globals_read.values():
        _value_guard(g, f"{g.const(gdict)}.get({name!r}, {g.const(_MISSING)})", v, f"global '{name}'")
    for c, v in cells:
        _value_guard(g, f"{g.const(c)}.cell_contents", v, "a closure variable")
    for gdict, name, v in watcher.globals_read.values():
        if isinstance(v, Module):
            module_roots.append(v)
    for c, v in cells:
        if isinstance(v, Module):
            module_roots.append(v)
    g.modules = modules_in(module_roots)
    g.module_state = module_state(g.modules)
    g.epoch = _cs.epoch.epoch
    if brk is None:
        _container_guards(g, snapshot)
        for leaf, fake in watcher.grad_at_entry.values():     # Note [Backward inside a capture]
            if fake is _UNREAD:
                continue
            c = g.const(leaf)
            if fake is None:
                g.add(f"{c}.__dict__.get('_grad') is None", "the .grad of a tensor is no longer None")
            else:
                a = fake._data
                g.add(f"{c}.__dict__.get('_grad') is not None and {c}._grad._data.shape == {tuple(a.shape)!r} "
                      f"and {c}._grad._data.strides == {tuple(a.strides)!r} and {c}._grad._data.dtype == "
                      f"{g.const(a.dtype)}", "the .grad of a tensor changed")
    g.finish()
    if brk is not None:
        return Captured(g, graph_break=brk)

    torch_graph, torch_failure = None, None
    if recorder is not None:
        torch_graph, torch_failure = _torch_level(recorder, out, watcher, leaves, fn)
        if recorder.data_dependent:     # Note [Values read inside a graph]: the ATen graph holds stand-ins
            if torch_graph is None:
                return Captured(g, graph_break=BreakInfo(
                    "Unsupported Tensor.item() call", f"The graph that would hold the value cannot express "
                    f"{torch_failure}.", (), []))
            c = Captured(g)
            c.torch_level, c.n_leaves, c.data_dependent = torch_graph, len(leaves), True
            return c
    grad_leaves = [leaf for leaf, _ in watcher.grads.values()]
    if grad_leaves:
        out = (out, [v for _, v in watcher.grads.values()])
    out_spec = None
    if not _fx_keeps(out):          # a container fx would turn into a plain dict (a model-output class): the graph
        flat, out_spec = tree_flatten(out)      # returns the leaves and the call rebuilds the container
        out = tuple(flat)
    try:
        graph.output(_map_out(out, mode))
    except _NotATensorGraph as e:
        return Captured(g, graph_break=BreakInfo(str(e), "", (), []))
    for name, t in mode.constants.items():
        if isinstance(t, FakeTensor):      # a fake of an earlier capture left in Python state: say so, loudly
            raise RuntimeError(f"ember.compile: a tensor made while tracing an earlier call was found in Python "
                               f"state ({name}): that capture changed state it did not see. Please report this "
                               f"with the program; mark the code that keeps tensors in such state with "
                               f"ember.compiler.disable meanwhile.")
        setattr(root, name, t)
    if watcher.did_backward:        # the graph computes its own gradients: it runs without autograd
        for n in list(graph.nodes):
            if n.op == "call_function" and getattr(n.target, "__name__", "") == "_set_grad_enabled":
                graph.erase_node(n)
    graph.eliminate_dead_code()     # the detached saves of autograd formulas, unused views
    gm = GraphModule(root, graph)
    gm.meta["dynamo_flat_name"] = getattr(fn, "__qualname__", "forward")
    gm.meta["self_differentiating"] = watcher.did_backward
    c = Captured(g, gm=gm, example_inputs=[leaves[i] for i in tensor_pos if first_of.get(id(leaves[i])) == i] +
                 [t.__dict__["_grad"] for t in extra_inputs])
    c.grad_leaves = grad_leaves
    c.out_spec = out_spec
    c.extra_inputs = extra_inputs
    c.self_differentiating = watcher.did_backward
    c.torch_level, c.torch_level_failure = torch_graph, torch_failure
    c.n_leaves = len(leaves)
    return c


def _recorder(fn: Any, globals_fn: Any, args: Any, kwargs: Any, call_leaves: list[Any], leaves: list[Any],
              tensor_pos: list[int], first_of: dict[int, int], modules: Any, capture_scalars: bool) -> Any:
    """The torch-level recorder of a capture (Note [Torch-level graph]), its inputs named by their sources."""
    from ember._dynamo import output_graph
    from ember.fx.graph import Graph
    owner = getattr(globals_fn, "__self__", None) if modules else None
    code = getattr(getattr(globals_fn, "__func__", None), "__code__", None)
    # a module whose forward is ember's own is compiled through Dynamo's ``fn(*args, **kwargs)`` wrapper
    wrapped = owner is not None and code is not None and os.path.abspath(code.co_filename).startswith(_EMBER_DIR)
    sources = output_graph.argument_sources(globals_fn or fn, args, kwargs, wrapped)
    arg_sources = {id(call_leaves[i]): (call_leaves[i], sources[i], i) for i in tensor_pos
                   if first_of.get(id(leaves[i])) == i}
    state: dict[int, Any] = {}
    if owner is not None and code is not None:
        self_name = "fn" if wrapped else code.co_varnames[0]
        state.update(output_graph.module_sources(owner, f"L[{self_name!r}]"))
    from ember.nn import Module
    for i, x in enumerate(leaves):
        if isinstance(x, Module):
            state.update(output_graph.module_sources(x, sources[i]))
    func = getattr(globals_fn or fn, "__func__", globals_fn or fn)
    fn_globals = getattr(func, "__globals__", {})
    return output_graph.Recorder(Graph(), arg_sources, state, fn_globals, capture_scalars)


def _torch_level(recorder: Any, out: Any, watcher: Any, leaves: list[Any], fn: Any) -> tuple[Any, str | None]:
    """The torch-level graph of a finished capture (Note [Torch-level graph]), or None and why not."""
    from ember._dynamo.output_graph import Unrepresentable
    from ember.fx.graph_module import GraphModule
    from ember.nn import Module
    if watcher.did_backward:
        return None, "backward() inside the function"
    try:
        graph, rebuild = recorder.finish(out)
    except Unrepresentable as e:
        return None, str(e)
    root = Module.__new__(Module)
    Module.__init__(root)
    gm = GraphModule(root, graph)
    gm.meta["dynamo_flat_name"] = getattr(fn, "__qualname__", "forward")
    plan = list(recorder.inputs)
    example = [leaves[k] if kind == "arg" else k for kind, k in plan]
    return (gm, example, plan, rebuild), None


def _fx_keeps(x: Any) -> bool:
    """Whether an fx output node keeps this structure as it is (tuples, lists, named tuples, plain dicts)."""
    if isinstance(x, (list, tuple)):
        return (type(x) in (list, tuple) or hasattr(x, "_fields")) and all(_fx_keeps(y) for y in x)
    if isinstance(x, dict):
        return type(x) is dict and all(_fx_keeps(v) for v in x.values())
    return True


class _NotATensorGraph(Exception):
    pass


def _map_out(out: Any, mode: Any) -> Any:
    """The function's result with each tensor replaced by the node that made it."""
    from ember._subclasses.fake_tensor import FakeTensor
    leaves, spec = tree_flatten(out)
    mapped = []
    for x in leaves:
        if isinstance(x, Tensor):
            if isinstance(x, FakeTensor) and mode._nodes.get(id(x), (None,))[0] is not x:
                raise _NotATensorGraph("the result holds a tensor the graph did not make")
            mapped.append(mode.node_of(x))
        elif type(x) in _SCALARS or is_torch_constant(x):
            mapped.append(x)
        else:
            raise _NotATensorGraph(f"the result holds a {type(x).__name__}, which a graph cannot return")
    return tree_unflatten(mapped, spec)


def _data_dependent_break(e: Exception, strict: bool = True) -> Any:
    """The break for a read of a tensor's value (None if ``e`` is not one and ``strict`` is off)."""
    fns = [f.f_code.co_name for f, _ in traceback.walk_tb(e.__traceback__)]
    frames = _user_frames(e.__traceback__)
    if strict and ("__bool__" in fns or "is_nonzero" in str(getattr(e, "func", ""))):
        return BreakInfo("Data-dependent branching",
                         "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does not "
                         "support tracing dynamic control flow.",
                         ("Use `torch.cond` to express dynamic control flow.",), frames)
    for name in ("tolist", "item", "numpy", "__int__", "__float__", "__index__"):
        if name in fns:
            label = {"__int__": "int(tensor)", "__float__": "float(tensor)", "__index__": "tensor as an index"}.get(
                name, f"Tensor.{name}()")
            brk = BreakInfo(f"Unsupported {label} call",
                            f"{label} reads the value of a tensor, which a graph computes only when it runs.",
                            ("Keep the value a tensor (torch.where, masking) or move the read out of the "
                             "compiled function.",), frames)
            brk.value_read = name == "item"
            return brk
    if not strict:
        return None
    return BreakInfo(f"Data-dependent operator {getattr(e, 'func', '')}",
                     "The operator needs the values of a tensor.", (), frames)


def _cell_has(c: Any) -> bool:
    try:
        c.cell_contents
    except ValueError:
        return False
    return True


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "arg"


_MISSING = object()
_UNREAD = object()      # a .grad the code wrote before reading it: its value on entry does not matter


def _mark_impure() -> None:
    import ember._C
    from ember.fx.node import has_side_effect
    has_side_effect(ember._C._set_grad_enabled)     # a grad-mode switch stays in the graph without users


_mark_impure()
