"""``torch.fx.Node``: one operation of a ``Graph`` (``torch/fx/node.py``).

A node has an ``op`` -- ``placeholder`` (an input), ``get_attr`` (a parameter or buffer read from the module),
``call_function`` / ``call_method`` / ``call_module`` (a call), ``output`` (the return) -- a ``target`` (what is
called or read), ``args`` / ``kwargs`` in which other nodes stand for their values, and ``users``: the nodes that
read it. The graph keeps its nodes in a doubly linked list in execution order.
"""
from __future__ import annotations

import builtins
import operator
import types
from typing import Any, Callable

from ember.fx.immutable_collections import immutable_dict, immutable_list

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target"]

Argument = Any
Target = Any


def map_aggregate(a: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` applied to every leaf of ``a`` (tuples, lists, dicts and slices are walked, their types kept)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """``fn`` applied to every Node inside ``a``."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _type_repr(o: Any) -> str:
    """A type as PyTorch prints it: ``module.Qualname`` (builtins bare, ember's classes by their torch name), other
    annotations by their repr."""
    if isinstance(o, type) and not isinstance(o, types.GenericAlias):
        module = o.__module__
        if module == "builtins":
            return o.__qualname__
        if module == "ember" or module.startswith("ember."):
            module = "torch" + module[len("ember"):]
        return f"{module}.{o.__qualname__}"
    if o is ...:
        return "..."
    if isinstance(o, types.FunctionType):
        return o.__name__
    return repr(o)


def _format_arg(arg: Any, max_list_len: float = float("inf")) -> str:
    if hasattr(arg, "_custom_fx_repr_fn"):
        return arg._custom_fx_repr_fn()
    if isinstance(arg, list):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        return f"[{items}{maybe_len}]"
    if isinstance(arg, tuple):
        items = ", ".join(_format_arg(a) for idx, a in enumerate(arg) if idx < max_list_len)
        maybe_len = "" if len(arg) < max_list_len + 1 else f", ...[total_len={len(arg)}]"
        maybe_comma = "," if len(arg) == 1 else ""
        return f"({items}{maybe_comma}{maybe_len})"
    if isinstance(arg, dict):
        items_str = ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items())
        return f"{{{items_str}}}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


def _qualified_name(func: Any) -> str:
    """PyTorch's printed name of a call_function target (``operator.add``, ``torch.relu``,
    ``torch.ops.aten.mul.Tensor``)."""
    from ember._ops import OpOverload, OpOverloadPacket
    if isinstance(func, (OpOverload, OpOverloadPacket)):
        return f"torch.ops.{func}"
    if getattr(func, "__module__", None) == "torch.ops.higher_order":      # a HigherOrderOperator
        return f"torch.ops.higher_order.{func.__name__}"
    if getattr(builtins, getattr(func, "__name__", ""), None) is func:
        return f"builtins.{func.__name__}"
    if isinstance(func, types.BuiltinFunctionType) and getattr(operator, func.__name__, None) is func:
        return f"operator.{func.__name__}"
    import ember
    name = getattr(func, "__name__", "")
    if name in ember._C._NN.NAMES and getattr(ember.nn.functional, name, None) is func:
        return f"torch._C._nn.{name}"   # PyTorch implements these in C: fx names them by their module
    from ember.overrides import resolve_name
    public = resolve_name(func)          # ember's public functions by their torch.* name
    if public is not None:
        return public
    module = getattr(func, "__module__", None) or "__main__"
    return f"{module.replace('ember.', 'torch.', 1) if module.startswith('ember.') else module}.{func.__name__}"


_side_effectful_functions: set[Any] = set()
_RANDOM_PREFIXES = ("rand", "normal", "bernoulli", "multinomial", "poisson", "rrelu", "native_dropout", "dropout",
                    "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "_standard_gamma", "binomial",
                    "_sample_dirichlet", "exponential", "geometric", "log_normal", "cauchy", "uniform")


def _is_random(op: Any) -> bool:
    """Whether an ATen op draws from a random generator: removing it would change every later random number."""
    name = op.__name__.split(".")[0]
    return name.startswith(_RANDOM_PREFIXES) or any(a.type.startswith("Generator") for a in op._schema.arguments)


def has_side_effect(fn: Any) -> Any:
    """Mark ``fn`` impure: dead-code elimination keeps its calls even when their results are unused."""
    _side_effectful_functions.add(fn)
    return fn


class Node:
    """One operation of a graph (see the module docstring)."""

    def __init__(self, graph: Any, name: str, op: str, target: Target, args: tuple[Any, ...],
                 kwargs: dict[str, Any], return_type: Any = None) -> None:
        if op not in ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root"):
            raise ValueError(f"Unsupported node op {op}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type {type(target)} "
                             "but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr", "output") and not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type {type(target)} "
                             "but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple[Any, ...] = ()
        self._kwargs: dict[str, Any] = immutable_dict()
        self.users: dict[Node, None] = {}
        self.type = return_type
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self.meta: dict[str, Any] = {}
        self._update_args_kwargs(args, kwargs)

    @property
    def stack_trace(self) -> str | None:
        """The Python stack that made this node, innermost frame last (``meta["stack_trace"]``), if recorded."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    # -- the linked list ------------------------------------------------------------------------------------
    @property
    def next(self) -> Node:
        return self._next

    @property
    def prev(self) -> Node:
        return self._prev

    def prepend(self, x: Node) -> None:
        """Insert ``x`` before this node (moving it if it is in the list already)."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Insert ``x`` after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # -- arguments ------------------------------------------------------------------------------------------
    @property
    def args(self) -> tuple[Any, ...]:
        return self._args

    @args.setter
    def args(self, a: tuple[Any, ...]) -> None:
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k: dict[str, Any]) -> None:
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self) -> list[Node]:
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Any) -> None:
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Any) -> None:
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args: Any, new_kwargs: Any) -> None:
        for old in self._input_nodes:
            old.users.pop(self)
        self._input_nodes = {}
        self._args = map_arg(tuple(new_args), self._note_input)
        self._kwargs = map_arg(immutable_dict(new_kwargs), self._note_input)

    def _note_input(self, n: Node) -> Node:
        self._input_nodes.setdefault(n)
        n.users.setdefault(self)
        return n

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Make every user of this node read ``replace_with`` instead; the users changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        to_process = [u for u in self.users if delete_user_cb(u)]
        for use_node in to_process:
            use_node.replace_input_with(self, replace_with)
        return to_process

    def replace_input_with(self, old_input: Node, new_input: Node) -> None:
        """Read ``new_input`` wherever this node reads ``old_input``."""
        def swap(n: Node) -> Node:
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self) -> bool:
        """Whether dead-code elimination must keep this node even without users (inputs, output, in-place ops)."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            if self.target in _side_effectful_functions:
                return True
            from ember._ops import OpOverload
            if isinstance(self.target, OpOverload):   # an ATen op that writes into an argument or draws random
                return self.target._schema.is_mutable or _is_random(self.target)
            return getattr(self.target, "__name__", "").endswith("_") and \
                not getattr(self.target, "__name__", "").endswith("__")
        if self.op == "call_method":
            return isinstance(self.target, str) and self.target.endswith("_") and not self.target.endswith("__")
        if self.op == "call_module":
            mod = self.graph.owning_module
            return bool(mod is not None and getattr(mod.get_submodule(self.target), "_is_impure", False))
        return False

    # -- printing -------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return self.name

    def _pretty_print_target(self, target: Any) -> str:
        if isinstance(target, str):
            return target
        return _qualified_name(target)

    def format_node(self, placeholder_names: list[str] | None = None,
                    maybe_return_typename: list[str] | None = None) -> str | None:
        """The node as ``print(graph)`` shows it (PyTorch's format)."""
        typename = f"{_type_repr(self.type)} " if self.type else ""
        head = f"%{self.name} : {typename}[num_users={len(self.users)}] = {self.op}"
        if self.op == "placeholder":
            arg_str = self.target + (f": {_type_repr(self.type)}" if self.type else "")
            if placeholder_names:
                placeholder_names.append(arg_str)
                return None
            default_val = f"(default={self.args[0]})" if self.args else ""
            return f"{head}[target={self.target}]{default_val}"
        if self.op == "get_attr":
            return f"{head}[target={self._pretty_print_target(self.target)}]"
        if self.op == "output":
            if self.type and maybe_return_typename:
                maybe_return_typename[0] = f" -> {_type_repr(self.type)}"
            return f"return {self.args[0]}"
        return (f"{head}[target={self._pretty_print_target(self.target)}](args = {_format_arg(self.args)}, "
                f"kwargs = {_format_arg(self.kwargs)})")
