"""The graph a custom backend receives: torch-level calls, as Dynamo records them (``torch/_dynamo/output_graph.py``).

Note [Torch-level graph]
PyTorch's Dynamo hands a backend the calls the Python code made -- ``torch.sin``, ``operator.add``, the method
``sum``, ``torch.nn.functional.relu`` -- with the tensors the frame reads as inputs named by where they come from
(``L_x_`` for the argument ``x``, ``L_self_modules_fc_parameters_weight_`` for a parameter of the compiled module).
ember's capture (Note [Capture]) runs the function once on fake tensors; while it runs, a ``TorchFunctionMode``
(``Recorder``) sees every public call before it reaches the dispatcher, and writes that call into a second graph:

* the call site tells how the code made the call (the instruction at the frame's ``f_lasti``): ``a + b`` is a
  binary operator (``operator.add``, reflected operands in the order written), ``x[i]`` is ``operator.getitem``,
  ``x += 1`` is ``operator.iadd``, ``x.cos()`` a method (``call_method``), ``torch.cos(x)`` a function;
* a result stored to a variable names its node (``h = ...`` -> ``h``, then ``h_1``), and that variable's later
  uses read the new node even when the call returned its input (``x += 1``); a result unpacked (``p, q =
  x.chunk(2)``) gets one ``getitem`` node per name;
* a call that returns no tensor (``x.size(0)``, ``x.shape``) is not recorded: its value is a constant of the graph,
  as with Dynamo's static shapes;
* a tensor becomes an input the first time a recorded call uses it: a parameter or buffer of a module before the
  other tensors of the same call (Dynamo reads ``self.weight`` when it evaluates the call's arguments, an argument
  or a global only when the call runs); a global tensor is named ``G_w_``;
* a grad-mode change between two calls becomes a ``torch._C._set_grad_enabled`` node, undone at the end.

A number read from a tensor (``y = x.sum().item()``) is a node of the graph (Note [Values read inside a graph]).

The graph returns the tensors the function returned (once each); the compiled function returns the function's
result with those replaced by the graph's outputs, inputs it returned as they are, and other values as constants.
Code the torch-level graph cannot express -- ``backward()`` inside the function, an autocast region, a value the
graph cannot hold as a constant -- leaves the recorder without a graph, and the backend receives the capture's
ATen graph instead (Note [Backward inside a capture]). ember's own backends (``inductor``, ``eager``,
``aot_eager``) take the ATen graph directly; given a torch-level graph (a custom backend calling ``compile_fx``),
they trace it to ATen first (``lower_to_aten``), as PyTorch's AOT autograd does.
"""
from __future__ import annotations

import bisect
import builtins
import dis
import operator
import os
import re
import sys
import types
from typing import Any, Callable

from ember._tensor import Tensor
from ember.c10.compile_state import GraphBreak as _GraphBreakBase
from ember.c10.grad_mode import state as _grad_state
from ember.overrides import TorchFunctionMode
from ember.utils._pytree import tree_flatten, tree_unflatten

EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep     # ember's own code
_MODULES_DIR = os.path.join(EMBER_DIR, "nn", "modules") + os.sep      # module forwards: code Dynamo inlines
_MODULE_CALL = os.path.join(_MODULES_DIR, "module.py")                 # Module.__call__'s machinery: no call site
_DYNAMO_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "//": operator.floordiv,
           "%": operator.mod, "**": operator.pow, "@": operator.matmul, "&": operator.and_, "|": operator.or_,
           "^": operator.xor, "<<": operator.lshift, ">>": operator.rshift, "+=": operator.iadd,
           "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv, "//=": operator.ifloordiv,
           "%=": operator.imod, "**=": operator.ipow, "@=": operator.imatmul, "&=": operator.iand,
           "|=": operator.ior, "^=": operator.ixor, "<<=": operator.ilshift, ">>=": operator.irshift}
_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}
_UNARY = {"UNARY_NEGATIVE": operator.neg, "UNARY_INVERT": operator.invert, "UNARY_POSITIVE": operator.pos}
_REFLECTED = {"__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__",
              "__rmatmul__", "__rand__", "__ror__", "__rxor__", "__rlshift__", "__rrshift__"}
_STORES = {"STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL", "STORE_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST"}
_CONSTANTS = (type(None), bool, int, float, complex, str, type(Ellipsis))
_UNREPRESENTABLE = {"backward": "Tensor.backward() inside the function",
                    "register_hook": "a tensor hook registered inside the function",
                    "__set__": "a tensor attribute set inside the function"}


class Unrepresentable(Exception):
    """Code the torch-level graph cannot express (Note [Torch-level graph])."""


def source_name(source: str) -> str:
    """Dynamo's name of an input from its source: ``L['self']._modules['fc']`` -> ``L_self_modules_fc_``."""
    return re.sub(r"_+", "_", re.sub(r"[^a-zA-Z0-9]", "_", source))


def _leaf_sources(root: str, value: Any) -> list[str]:
    """The source of each leaf of ``value`` (flattened as ``tree_flatten`` does), under ``root``."""
    if type(value) in (list, tuple):
        return [s for i, v in enumerate(value) for s in _leaf_sources(f"{root}[{i}]", v)]
    if type(value) is dict:
        return [s for k, v in value.items() for s in _leaf_sources(f"{root}[{k!r}]", v)]
    n = len(tree_flatten(value)[0])
    return [root] if n == 1 else [f"{root}[{i}]" for i in range(n)]


def argument_sources(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                     wrapped: bool) -> list[str]:
    """The source of each leaf of ``tree_flatten((args, kwargs))``: ``L['x']``, ``L['xs'][1]``; for a module
    whose forward is ember's own (Dynamo compiles it through a ``fn(*args, **kwargs)`` wrapper), ``L['args'][0]``."""
    import inspect
    positional: list[str] = []
    star, named = "args", set()
    if not wrapped:
        try:
            params = inspect.signature(fn).parameters.values()
        except (TypeError, ValueError):     # a builtin: its arguments by position
            params = []
        for p in params:
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                positional.append(p.name)
            elif p.kind is p.VAR_POSITIONAL:
                star = p.name
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
                named.add(p.name)
    out: list[str] = []
    for i, a in enumerate(args):
        out += _leaf_sources(f"L[{positional[i]!r}]" if i < len(positional) else
                             f"L[{star!r}][{i - len(positional)}]", a)
    for k, v in kwargs.items():
        out += _leaf_sources(f"L[{k!r}]" if k in named else f"L['kwargs'][{k!r}]", v)
    return out


def module_sources(module: Any, root: str) -> dict[int, tuple[Any, str]]:
    """id -> (tensor, source) of every parameter and buffer under ``module``:
    ``L['self']._modules['fc']._parameters['weight']``."""
    out: dict[int, tuple[Any, str]] = {}
    for path, m in module.named_modules(remove_duplicate=False):
        prefix = root + "".join(f"._modules[{p!r}]" for p in path.split(".") if path)
        for name, p in m._parameters.items():
            if p is not None:
                out.setdefault(id(p), (p, f"{prefix}._parameters[{name!r}]"))
        for name, b in m._buffers.items():
            if b is not None:
                out.setdefault(id(b), (b, f"{prefix}._buffers[{name!r}]"))
    return out


# ------------------------------------------------------------------------------------------------ call sites
_INSTRUCTIONS: dict[Any, tuple[list[int], list[Any]]] = {}


def _instruction_at(code: types.CodeType, lasti: int) -> tuple[int, list[Any]]:
    """The index of the instruction a frame is executing (``f_lasti`` may point into its inline caches) and the
    code's instructions."""
    got = _INSTRUCTIONS.get(code)
    if got is None:
        ins = list(dis.get_instructions(code))
        got = ([x.offset for x in ins], ins)
        _INSTRUCTIONS[code] = got
    return bisect.bisect_right(got[0], lasti) - 1, got[1]


def _is_call_site(frame: types.FrameType) -> bool:
    f = os.path.abspath(frame.f_code.co_filename)
    return not f.startswith(EMBER_DIR) or (f.startswith(_MODULES_DIR) and f != _MODULE_CALL)


def _user_frame(frame: Any) -> tuple[Any, Any]:
    """The nearest frame at or above ``frame`` that is code Dynamo would trace, and the frame it called."""
    callee = None
    while frame is not None and not _is_call_site(frame):
        callee, frame = frame, frame.f_back
    return frame, callee


def call_site() -> tuple[Any, Any, Any, list[Any], list[Any]]:
    """The instruction that made the current public call, the frame it called (the operator's method), the
    frame, and the instructions before and after it."""
    frame, callee = _user_frame(sys._getframe(2))
    if frame is None:
        return None, None, None, [], []
    i, ins = _instruction_at(frame.f_code, frame.f_lasti)
    if i < 0:
        return None, callee, frame, [], []
    return ins[i], callee, frame, ins[max(0, i - 3):i], ins[i + 1:i + 12]


def _stored_name(frame: Any, after: list[Any]) -> str | None:
    """The variable a call's result is stored to: the one after the call, or, for a result the frame returns,
    the one its caller stores the returned value to (``input = module(input)`` names the module's last call)."""
    for _ in range(16):
        if not after:
            return None
        if after[0].opname in _STORES:         # (Python 3.13's paired stores name a pair: the first is ours)
            name = after[0].argval
            return str(name[0] if isinstance(name, tuple) else name)
        if after[0].opname != "RETURN_VALUE" or frame is None:
            return None
        frame = frame.f_back
        while frame is not None and not _is_call_site(frame):
            if frame.f_code.co_filename.startswith(_DYNAMO_DIR):    # the capture itself: the traced code's end
                return None
            frame = frame.f_back
        if frame is None:
            return None
        i, ins = _instruction_at(frame.f_code, frame.f_lasti)
        after = ins[i + 1:i + 3] if i >= 0 else []
    return None


_SIGNATURES: dict[Any, Any] = {}


def _as_written(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], instr: Any, before: list[Any],
                callee: Any, method: bool) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments as the code wrote them (which positionally, which by keyword), where a Python
    function passed ``__torch_function__`` its defaults or keywords of its own (``F.layer_norm(x, (3,))``)."""
    code = getattr(func, "__code__", None)
    if instr is None or instr.opname not in ("CALL", "CALL_KW") or code is None or callee is None or \
            callee.f_code is not code:
        return args, kwargs
    code_of_site = callee.f_back.f_code       # (Python 3.11's KW_NAMES names a constant of the calling code)
    kwnames: tuple[str, ...] = ()
    for b in reversed(before):
        if b.opname == "KW_NAMES" or (instr.opname == "CALL_KW" and b.opname == "LOAD_CONST"):
            names = b.argval if isinstance(b.argval, tuple) else code_of_site.co_consts[b.arg]
            kwnames = tuple(names) if isinstance(names, tuple) else ()
            break
        if b.opname not in ("PRECALL", "CACHE"):
            break
    npos = instr.arg - len(kwnames) + (1 if method else 0)
    import inspect
    sig = _SIGNATURES.get(func)
    if sig is None:
        try:
            sig = _SIGNATURES[func] = inspect.signature(func)
        except (TypeError, ValueError):
            return args, kwargs
    params = list(sig.parameters.values())
    if npos > len(params) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params[:npos]):
        return args, kwargs
    try:
        bound = sig.bind(*args, **kwargs).arguments
    except TypeError:
        return args, kwargs
    if any(p.name not in bound for p in params[:npos]) or any(k not in bound for k in kwnames):
        return args, kwargs
    return tuple(bound[p.name] for p in params[:npos]), {k: bound[k] for k in kwnames}


def _callee_dunder(callee: Any) -> str:
    if callee is None:
        return ""
    name = callee.f_code.co_name
    if not name.startswith("__"):      # the shared bodies of the operators: the dunder they stand for
        loc = callee.f_locals
        name = loc.get("dunder") or getattr(loc.get("fn"), "__name__", name)
    return name if isinstance(name, str) else ""


# ------------------------------------------------------------------------------------------------ values read
# Note [Values read inside a graph]
# Under ``fullgraph=True`` (or ``torch._dynamo.config.capture_scalar_outputs = True``) PyTorch 2.13 captures
# ``y = x.sum().item()`` into the graph (an unbacked SymFloat; otherwise the read is a graph break): the number is
# the node ``item = sum_1.item()``, arithmetic on it more nodes (``mul = item * 2``), and it may be an operand of
# the operators whose result's sizes and dtype it cannot change (``x * y``, ``x.clamp(max=y)``,
# ``torch.full((2,), y)``).
# ember's recorder returns a ``SymScalar`` for ``item()`` without reading the fake tensor; the fake kernels of those
# operators run on a stand-in of the same Python type (so the dtype is right), and the call is recorded with the
# node. Python asking for the value -- ``if y > 2``, ``int(y)``, the value as a size or an index -- cannot be
# answered while capturing: a branch is PyTorch's ``UserError`` ("Could not guard on data-dependent expression")
# under ``fullgraph=True``, anything else a graph break. The ATen graph of such a capture holds the stand-in, so it
# is never used: ember's own backends run the torch-level graph op by op.
_HINTS: dict[type, Any] = {float: 1.0, int: 1, bool: True}
# operators taking a number where their output's sizes and dtype do not depend on its value (its Python type only)
_SCALAR_OPERANDS = frozenset({
    "add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod", "pow", "rsub", "__rsub__",
    "__rtruediv__", "__rpow__", "__rmod__", "__rfloordiv__", "__floordiv__", "__mod__", "__truediv__", "__pow__",
    "add_", "sub_", "mul_", "div_", "pow_", "clamp", "clamp_", "clamp_min", "clamp_max", "clip", "masked_fill",
    "masked_fill_", "fill_", "full", "full_like", "new_full", "where", "lerp", "lerp_", "eq", "ne", "lt", "le", "gt",
    "ge", "scalar_tensor", "tensor", "as_tensor", "addcmul", "addcdiv", "xlogy", "hardtanh", "threshold",
    "leaky_relu", "elu", "celu", "softplus"})


class GuardOnDataDependent(_GraphBreakBase):
    """Python asked for a number only the graph computes (``if y > 2`` on ``y = x.item()``)."""
    user_error = True


class SymScalar:
    """A number read from a tensor during a capture: a node of the torch-level graph and no value (PyTorch's
    unbacked ``SymFloat`` / ``SymInt`` / ``SymBool``; Note [Values read inside a graph])."""

    __slots__ = ("graph", "node", "kind", "expr")
    __hash__ = object.__hash__

    def __init__(self, graph: Any, node: Any, kind: type, expr: str) -> None:
        self.graph, self.node, self.kind, self.expr = graph, node, kind, expr

    def hint(self) -> Any:
        return _HINTS[self.kind]

    def _op(self, other: Any, fn: Any, sym: str, reflected: bool = False) -> Any:
        if not isinstance(other, (SymScalar, bool, int, float)):
            return NotImplemented
        a, b = (other, self) if reflected else (self, other)
        node = self.graph.call_function(fn, tuple(x.node if isinstance(x, SymScalar) else x for x in (a, b)))
        kinds = {x.kind if isinstance(x, SymScalar) else type(x) for x in (a, b)}
        kind: type = bool if sym in _COMPARE else float if sym == "/" or float in kinds else int
        return SymScalar(self.graph, node, kind, f"{_expr(a, self.kind)} {sym} {_expr(b, self.kind)}")

    def __neg__(self) -> Any:
        return SymScalar(self.graph, self.graph.call_function(operator.neg, (self.node,)), self.kind, f"-{self.expr}")

    def __abs__(self) -> Any:
        return SymScalar(self.graph, self.graph.call_function(builtins.abs, (self.node,)), self.kind,
                         f"Abs({self.expr})")

    def __bool__(self) -> bool:
        raise GuardOnDataDependent(
            f"Consider annotating your code using torch._check*(). Could not guard on data-dependent expression "
            f"{self.expr} (unhinted: {self.expr}).  (Size-like symbols: none)\n\nconsider using data-dependent "
            "friendly APIs such as guard_or_false, guard_or_true and statically_known_true.")

    def _read(self, what: str) -> Any:
        raise _GraphBreakBase(f"Unsupported {what} of a value read with Tensor.item()",
                              f"{what} needs the number, which the graph computes only when it runs.",
                              ("Keep the value a tensor, or move the read out of the compiled function.",))

    def __float__(self) -> float: return self._read("float()")      # type: ignore[no-any-return]
    def __int__(self) -> int: return self._read("int()")            # type: ignore[no-any-return]
    def __index__(self) -> int: return self._read("its use as an index or a size")   # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return self.expr


def _sym_operator(fn: Any, sym: str, reflected: bool) -> Callable[[SymScalar, Any], Any]:
    def op(self: SymScalar, other: Any) -> Any:
        return self._op(other, fn, sym, reflected)
    return op


for _sym in ("+", "-", "*", "/", "//", "%", "**"):           # the arithmetic of numbers, both ways round
    _dunder = _BINARY[_sym].__name__.rstrip("_")
    setattr(SymScalar, f"__{_dunder}__", _sym_operator(_BINARY[_sym], _sym, False))
    setattr(SymScalar, f"__r{_dunder}__", _sym_operator(_BINARY[_sym], _sym, True))
for _sym, _fn in _COMPARE.items():
    setattr(SymScalar, f"__{_fn.__name__}__", _sym_operator(_fn, _sym, False))


def _expr(x: Any, kind: type) -> str:
    if isinstance(x, SymScalar):
        return x.expr
    return repr(float(x)) if kind is float and type(x) is int else repr(x)


def _leaves(x: Any) -> Any:
    """The leaves of nested lists, tuples and dicts (call arguments, results)."""
    if isinstance(x, (list, tuple)):
        for y in x:
            yield from _leaves(y)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _leaves(y)
    else:
        yield x


def _tensors(x: Any) -> list[Any]:
    return [y for y in _leaves(x) if isinstance(y, Tensor)]


def _has_sym(x: Any) -> bool:
    return any(isinstance(y, SymScalar) for y in _leaves(x))


def _hinted(args: tuple[Any, ...], kwargs: dict[str, Any], name: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call's arguments with each number read inside the graph replaced by its stand-in, where the operator
    takes it as a direct operand (Note [Values read inside a graph]); else a graph break."""
    direct = list(args) + list(kwargs.values())
    if name not in _SCALAR_OPERANDS or any(_has_sym(x) for x in direct if not isinstance(x, SymScalar)):
        raise _GraphBreakBase(f"Unsupported use of a value read with Tensor.item() by {name}",
                              "The operator's result would depend on a number the graph computes only when it runs.",
                              ("Keep the value a tensor (torch.where, masking).",))
    return (tuple(a.hint() if isinstance(a, SymScalar) else a for a in args),
            {k: v.hint() if isinstance(v, SymScalar) else v for k, v in kwargs.items()})


# ------------------------------------------------------------------------------------------------ the recorder
class Recorder(TorchFunctionMode):
    """Writes the public calls made while it is active into ``graph`` (Note [Torch-level graph])."""

    def __init__(self, graph: Any, arg_sources: dict[int, tuple[Any, str, int]],
                 state_sources: dict[int, tuple[Any, str]], fn_globals: dict[str, Any],
                 capture_scalars: bool) -> None:
        super().__init__()
        self.graph = graph
        self.arg_sources = arg_sources          # id(fake) -> (fake, source, flat position)
        self.state_sources = state_sources      # id(real tensor) -> (tensor, source)
        self.fn_globals = fn_globals
        self.nodes: dict[int, tuple[Any, Any]] = {}       # id(tensor) -> (tensor, node)
        self.pending: dict[int, tuple[Any, Any, int]] = {}    # an element of a recorded tuple: (t, node, index)
        self.placeholders: list[Any] = []
        self.inputs: list[tuple[str, Any]] = []    # per placeholder: ("arg", flat position) or ("obj", tensor)
        self.grad_enabled = _grad_state.enabled
        self.initial_grad = _grad_state.enabled
        self.autocast = _autocast_state()
        self.failed: str | None = None
        self._props: dict[int, str] | None = None
        self.data_dependent = False       # a number was read (Note [Values read inside a graph])
        self.capture_scalars = capture_scalars    # whether item() becomes a node (else the fake tensor refuses it)
        self._symbols = {float: 0, int: 0, bool: 0}

    # -- inputs ----------------------------------------------------------------------------------------------
    def _placeholder(self, t: Any, source: str, kind: tuple[str, Any]) -> Any:
        from ember.nn import Parameter
        name = source_name(source)
        real = kind[1] if kind[0] == "obj" else t
        with self.graph.inserting_after(self.placeholders[-1]) if self.placeholders else \
                self.graph.inserting_before(next(iter(self.graph.nodes), None)):
            node = self.graph.create_node("placeholder", name, name=name.lower(),
                                          type_expr=Parameter if isinstance(real, Parameter) else Tensor)
        node.meta["example_value"] = t
        node.meta["source"] = source
        self.placeholders.append(node)
        self.inputs.append(kind)
        self.nodes[id(t)] = (t, node)
        return node

    def _state_source(self, t: Any) -> str | None:
        got = self.state_sources.get(id(t))
        if got is not None:
            return got[1]
        for k, v in list(self.fn_globals.items()):
            if v is t:
                return f"G[{k!r}]"
        from ember.nn import Module
        for k, v in list(self.fn_globals.items()):
            if isinstance(v, Module):
                got = module_sources(v, f"G[{k!r}]").get(id(t))
                if got is not None:
                    return got[1]
        return None

    def _input_node(self, t: Any) -> Any:
        """The placeholder of a tensor the code read (an argument, a module's state, a global)."""
        got = self.arg_sources.get(id(t))
        if got is not None:
            return self._placeholder(t, got[1], ("arg", got[2]))
        from ember._subclasses.fake_tensor import FakeTensor
        if isinstance(t, FakeTensor):
            raise Unrepresentable("a tensor the graph did not make")
        source = self._state_source(t)
        if source is None:
            raise Unrepresentable("a tensor read from Python state the graph cannot name")
        return self._placeholder(t, source, ("obj", t))

    def node_of(self, t: Any) -> Any:
        got = self.nodes.get(id(t))
        if got is not None and got[0] is t:
            return got[1]
        pend = self.pending.pop(id(t), None)
        if pend is not None and pend[0] is t:
            node = self.graph.call_function(operator.getitem, (pend[1], pend[2]))
            node.meta["example_value"] = t
            self.nodes[id(t)] = (t, node)
            return node
        return self._input_node(t)

    def _map(self, x: Any) -> Any:
        if isinstance(x, Tensor):
            return self.node_of(x)
        if isinstance(x, SymScalar):
            return x.node
        if isinstance(x, _CONSTANTS) or is_torch_constant(x):
            return x
        if type(x) in (list, tuple):
            return type(x)(self._map(y) for y in x)
        if type(x) is dict:
            return {k: self._map(v) for k, v in x.items()}
        if isinstance(x, slice):
            return slice(self._map(x.start), self._map(x.stop), self._map(x.step))
        raise Unrepresentable(f"a {type(x).__name__} argument")

    # -- calls -----------------------------------------------------------------------------------------------
    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if self.failed is not None:
            if _has_sym((args, kwargs)):
                raise _GraphBreakBase(f"Unsupported use of a value read with Tensor.item(): {self.failed}")
            return func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        if name == "item" and self.capture_scalars and len(args) == 1 and not kwargs and \
                isinstance(args[0], Tensor) and args[0].numel() == 1 and not args[0].is_complex():
            return self._item(args[0])
        site = call_site()
        if _has_sym((args, kwargs)):
            hinted_args, hinted_kwargs = _hinted(tuple(args), kwargs, name)
            out = func(*hinted_args, **hinted_kwargs)
        else:
            out = func(*args, **kwargs)
        if self.failed is None:
            try:
                self._record(func, args, kwargs, out, site)
            except Unrepresentable as e:
                self.failed = str(e)
        return out

    def _item(self, t: Any) -> Any:
        """``t.item()`` as a node: the number it stands for (Note [Values read inside a graph])."""
        import ember
        try:
            src = self.node_of(t)
        except Unrepresentable as e:
            self.failed = str(e)
            raise _GraphBreakBase("Unsupported Tensor.item() call") from None
        kind: type = float if t.is_floating_point() else bool if t.dtype == ember.bool else int
        n = self._symbols[kind]
        self._symbols[kind] += 1
        self.data_dependent = True
        node = self.graph.create_node("call_method", "item", (src,), {})
        return SymScalar(self.graph, node, kind, f"zuf{n}" if kind is float else f"u{n}")

    def _property_name(self, func: Any) -> str | None:
        prop = getattr(func, "__self__", None)
        if self._props is None:
            self._props = {id(v): k for cls in reversed(Tensor.__mro__) for k, v in vars(cls).items()
                           if isinstance(v, property) or type(v).__name__ == "getset_descriptor"}
        return self._props.get(id(prop))

    def _record(self, func: Any, args: Any, kwargs: Any, out: Any, site: Any) -> None:
        name = getattr(func, "__name__", "")
        if name in _UNREPRESENTABLE:
            raise Unrepresentable(_UNREPRESENTABLE[name])
        if _autocast_state() != self.autocast:
            raise Unrepresentable("an autocast region")
        if not _tensors(out) and name != "__setitem__":
            return          # a size, a dtype, a Python number: a constant of the graph
        instr, callee, frame, before, after = site
        opname = getattr(instr, "opname", "")
        dunder = _callee_dunder(callee)
        if name == "__get__":          # a tensor-valued property: x.T, x.grad
            attr = self._property_name(func)
            if attr is None:
                raise Unrepresentable(f"the attribute {func!r}")
            op, target, a, kw = "call_function", builtins.getattr, (args[0], attr), {}
        elif opname == "BINARY_OP" and instr.argrepr in _BINARY and len(args) == 2:
            a = (args[1], args[0]) if dunder in _REFLECTED else tuple(args)
            op, target, kw = "call_function", _BINARY[instr.argrepr], {}
        elif opname == "COMPARE_OP" and instr.argrepr.strip("bool()") in _COMPARE and len(args) == 2:
            op, target, a, kw = "call_function", _COMPARE[instr.argrepr.strip("bool()")], tuple(args), {}
        elif opname in _UNARY and len(args) == 1:
            op, target, a, kw = "call_function", _UNARY[opname], tuple(args), {}
        elif opname in ("BINARY_SUBSCR", "BINARY_SLICE") and name == "__getitem__":
            op, target, a, kw = "call_function", operator.getitem, tuple(args), {}
        elif opname in ("STORE_SUBSCR", "STORE_SLICE") and name == "__setitem__":
            op, target, a, kw = "call_function", operator.setitem, tuple(args), {}
        elif _is_method(func) and args and isinstance(args[0], Tensor):
            a, kw = _as_written(func, tuple(args), dict(kwargs), instr, before, callee, True)
            op, target = "call_method", name
        else:
            a, kw = _as_written(func, tuple(args), dict(kwargs), instr, before, callee, False)
            op, target = "call_function", func
        self._sync_grad_mode()
        # the inputs a call reads: the modules' parameters and buffers first, then the rest in order
        for t in _tensors((a, kw)):
            if id(t) in self.state_sources and id(t) not in self.nodes:
                self._input_node(t)
        stored = _stored_name(frame, after)
        node = self.graph.create_node(op, target, self._map(a), self._map(kw), name=stored)
        node.meta["example_value"] = out
        if isinstance(out, Tensor):      # a result stored to a variable is that variable's node from now on
            if id(out) not in self.nodes or stored is not None:
                self.nodes[id(out)] = (out, node)
        else:
            unpack = after[0].argval if after and after[0].opname == "UNPACK_SEQUENCE" else None
            for i, t in enumerate(out if isinstance(out, (list, tuple)) else ()):
                if not isinstance(t, Tensor):
                    continue
                if unpack is not None and i < len(after) - 1 and after[1 + i].opname in _STORES:
                    item = self.graph.create_node("call_function", operator.getitem, (node, i),
                                                  name=after[1 + i].argval)
                    item.meta["example_value"] = t
                    self.nodes[id(t)] = (t, item)
                elif id(t) not in self.nodes:
                    self.pending[id(t)] = (t, node, i)

    def _sync_grad_mode(self) -> None:
        import ember._C
        if _grad_state.enabled != self.grad_enabled:
            self.grad_enabled = _grad_state.enabled
            self.graph.call_function(ember._C._set_grad_enabled, (self.grad_enabled,))

    def _input_kind(self, node: Any) -> tuple[str, Any]:
        kind = self.inputs[self.placeholders.index(node)]
        return kind if kind[0] == "arg" else ("const", kind[1])

    # -- the end ---------------------------------------------------------------------------------------------
    def finish(self, out: Any) -> tuple[Any, Callable[[list[Any], tuple[Any, ...]], Any]]:
        """Close the graph on the function's result ``out``; return the GraphModule's root-less graph and the
        function rebuilding the result from the graph's outputs and the call's flat arguments."""
        if self.failed is not None:
            raise Unrepresentable(self.failed)
        if self.grad_enabled != self.initial_grad:
            import ember._C
            self.graph.call_function(ember._C._set_grad_enabled, (self.initial_grad,))
        leaves, spec = tree_flatten(out)
        outputs: list[Any] = []
        plan: list[tuple[str, Any]] = []
        for x in leaves:
            if isinstance(x, Tensor):
                got = self.arg_sources.get(id(x))
                if got is not None and got[0] is x:
                    plan.append(("arg", got[2]))
                    continue
                if id(x) in self.state_sources:
                    plan.append(("const", x))
                    continue
                node = self.node_of(x)
                if node.target is builtins.getattr and node.args[0].op == "placeholder":
                    # an attribute of an input (``x.T``) has a source of its own: read from it, not returned
                    plan.append(("attr", (self._input_kind(node.args[0]), node.args[1])))
                    continue
                if node.op == "placeholder":
                    plan.append(self._input_kind(node))
                    continue
                if node not in outputs:
                    outputs.append(node)
                plan.append(("out", outputs.index(node)))
            elif isinstance(x, SymScalar):       # returned as a 0-d tensor, read back after the graph ran
                import ember
                dtype = {float: ember.float64, int: ember.int64, bool: ember.bool}[x.kind]
                node = self.graph.call_function(ember.scalar_tensor, (x.node,), {"dtype": dtype})
                outputs.append(node)
                plan.append(("number", len(outputs) - 1))
            elif isinstance(x, _CONSTANTS) or is_torch_constant(x):
                plan.append(("const", x))
            else:
                raise Unrepresentable(f"the result holds a {type(x).__name__}")
        self.graph.output(tuple(outputs))
        used = [(n, kind) for n, kind in zip(self.placeholders, self.inputs) if n.users]
        for n in self.placeholders:
            if not n.users:                 # inputs only a size was read from: not inputs of the graph
                self.graph.erase_node(n)
        self.placeholders, self.inputs = [n for n, _ in used], [kind for _, kind in used]

        def value(kind: str, k: Any, results: Any, flat_args: tuple[Any, ...]) -> Any:
            if kind == "out":
                return results[k]
            if kind == "arg":
                return flat_args[k]
            if kind == "attr":
                return getattr(value(*k[0], results, flat_args), k[1])
            if kind == "number":
                return results[k].item()
            return k

        def rebuild(results: Any, flat_args: tuple[Any, ...]) -> Any:
            return tree_unflatten([value(kind, k, results, flat_args) for kind, k in plan], spec)
        return self.graph, rebuild


def _is_method(func: Any) -> bool:
    name = getattr(func, "__name__", None)
    return name is not None and getattr(Tensor, name, None) is func


def is_torch_constant(x: Any) -> bool:
    """A torch value a graph holds (and returns) as a constant: a dtype, a device, a layout, a size."""
    import ember
    return isinstance(x, (ember.dtype, ember.device, ember.layout, ember.memory_format, ember.Size))


def _autocast_state() -> Any:
    from ember.amp import autocast_mode
    return (autocast_mode.is_autocast_enabled("cpu"), autocast_mode.is_autocast_enabled("cuda"))


# ------------------------------------------------------------------------------------------------ lowering
def is_aten_graph(gm: Any) -> bool:
    """Whether ``gm`` is an ATen-level graph: every call an operator or a grad-mode switch."""
    from ember._ops import OpOverload, OpOverloadPacket
    for n in gm.graph.nodes:
        if n.op in ("call_method", "call_module"):
            return False
        if n.op == "call_function" and not isinstance(n.target, (OpOverload, OpOverloadPacket)) and \
                n.target is not operator.getitem and getattr(n.target, "__name__", "") != "_set_grad_enabled":
            return False
    return True


def lower_to_aten(gm: Any, example_inputs: list[Any]) -> tuple[Any, list[Any], Callable[[Any], Any]]:
    """A torch-level graph traced to an ATen graph (Note [Torch-level graph]): the ATen GraphModule, its example
    inputs, and the function adapting a callable of the ATen graph to ``gm``'s inputs (a tensor passed twice is
    one input of the ATen graph)."""
    if is_aten_graph(gm) and all("val" in n.meta for n in gm.graph.nodes if n.op == "placeholder"):
        return gm, list(example_inputs), lambda run: run
    from ember._dynamo.capture import capture
    c = capture(gm.forward, tuple(example_inputs), {})
    if c.graph_break is not None:
        raise RuntimeError(f"the graph could not be traced to ATen operators: {c.graph_break.message()}")
    first: dict[int, int] = {}
    for i, x in enumerate(example_inputs):
        if isinstance(x, Tensor):
            first.setdefault(id(x), i)
    keep = sorted(first.values())

    def adapt(run: Callable[..., Any]) -> Callable[..., Any]:
        if keep == list(range(len(example_inputs))):
            return run

        def call(*inputs: Any) -> Any:
            return run(*[inputs[i] for i in keep])
        return call
    return c.gm, c.example_inputs, adapt
