"""``torch.fx.Graph``: the nodes of one traced function in execution order, and the Python code they stand for
(``torch/fx/graph.py``)."""
from __future__ import annotations

import builtins
import inspect
import keyword
import math
import operator
import re
import types
from typing import Any, Callable, Iterator, NamedTuple

from ember.fx.node import Node, _qualified_name, _type_repr, map_arg
from ember.fx.experimental.symbolic_shapes import SymInt
from ember.c10.dtype import dtype
from ember.c10.tensor_impl import TensorImpl

__all__ = ["Graph", "PythonCode", "CodeGen"]

_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)   # names that would shadow a builtin get a suffix (``sum_1``)

# how an operator's call is written (PyTorch's magic_methods / reflectable_magic_methods / unary ones)
_BINARY = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "truediv": "/", "mod": "%", "pow": "**",
           "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|", "xor": "^", "matmul": "@", "eq": "==",
           "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
_UNARY = {"neg": "-", "pos": "+", "invert": "~"}
# in-place operators (which Dynamo's graphs hold): the statement, then the node named as its first operand
_INPLACE = {"iadd": "+=", "iand": "&=", "ifloordiv": "//=", "ilshift": "<<=", "imod": "%=", "imul": "*=",
            "imatmul": "@=", "ior": "|=", "ipow": "**=", "irshift": ">>=", "isub": "-=", "itruediv": "/=",
            "ixor": "^="}


def _snake_case(s: str) -> str:
    return re.sub(r"(?<=[a-z])([A-Z])", r"_\1", s).lower()


class _Namespace:
    """Unique Python names: a candidate keeps its text if free, else gets the next ``_<n>`` suffix; keywords and
    builtins always get one."""

    def __init__(self) -> None:
        self._obj_to_name: dict[Any, str] = {}
        self._used_names: set[str] = set()
        self._base_count: dict[str, int] = {}

    def create_name(self, candidate: str, obj: Any) -> str:
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
            assert match is not None
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if _illegal_names.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def associate_name_with_obj(self, name: str, obj: Any) -> None:
        self._obj_to_name[obj] = name


class PythonCode:
    """The generated source of a graph and the globals it refers to."""

    def __init__(self, src: str, globals: dict[str, Any]) -> None:  # noqa: A002
        self.src = src
        self.globals = globals


class _InsertPoint:
    def __init__(self, graph: Graph, new_insert: Callable[[Node], None]) -> None:
        self.graph = graph
        self.orig_insert, graph._insert = graph._insert, new_insert

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        self.graph._insert = self.orig_insert


class _NodeList:
    def __init__(self, graph: Graph, direction: str = "_next") -> None:
        self.graph, self.direction = graph, direction

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        cur = getattr(root, self.direction)
        while cur is not root:
            nxt = getattr(cur, self.direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self.graph, "_prev" if self.direction == "_next" else "_next"))


class Graph:
    """The nodes of one function: build it with ``placeholder`` / ``get_attr`` / ``call_function`` /
    ``call_method`` / ``call_module`` / ``output`` (or let ``symbolic_trace`` do it), edit it, and turn it
    back into Python with ``python_code`` (what ``GraphModule`` runs)."""

    def __init__(self, owning_module: Any = None, tracer_cls: Any = None, tracer_extras: Any = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._used_names: dict[str, int] = {}
        self._insert = self._root.prepend
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()

    @property
    def owning_module(self) -> Any:
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod: Any) -> None:
        self._owning_module = mod

    @property
    def nodes(self) -> _NodeList:
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Any = None) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # -- building ---------------------------------------------------------------------------------------------
    def create_node(self, op: str, target: Any, args: tuple[Any, ...] | None = None,
                    kwargs: dict[str, Any] | None = None, name: str | None = None, type_expr: Any = None) -> Node:
        """A new node inserted at the current insert point (the end, unless inside ``inserting_before/after``)."""
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, tuple(args or ()), dict(kwargs or {}), type_expr)
        self._graph_namespace.associate_name_with_obj(name, n)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = inspect.Signature.empty) -> Node:
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: Any = None, kwargs: Any = None, type_expr: Any = None) -> Node:
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: Any = None, kwargs: Any = None, type_expr: Any = None) -> Node:
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable[..., Any], args: Any = None, kwargs: Any = None,
                      type_expr: Any = None) -> Node:
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def _target_to_str(self, target: Any) -> str:
        from ember._ops import OpOverload, OpOverloadPacket
        if isinstance(target, OpOverload):     # aten.mul.Tensor -> "mul", as PyTorch names ATen-level nodes
            op = target.handle.name
        elif isinstance(target, OpOverloadPacket):
            op = target.__name__
        elif callable(target):
            op = target.__name__
        else:
            op = target
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return _snake_case(op)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) in this one, its node arguments mapped by ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False) -> Any:
        """Copy every node of ``g`` but its output into this graph (``val_map``: old node -> new, filled in);
        the copy of the output's value is returned."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """Within ``with graph.inserting_before(n):`` new nodes go before ``n`` (None: the start)."""
        if n is None:
            return self.inserting_after(self._root)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """Within ``with graph.inserting_after(n):`` new nodes go after ``n`` (None: the end)."""
        if n is None:
            return self.inserting_before(self._root)
        return _InsertPoint(self, n.append)

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node that has no users."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in "
                               "the graph: {}!".format(dict(to_erase.users)))
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    def eliminate_dead_code(self, is_impure_node: Callable[[Node], bool] | None = None) -> bool:
        """Erase the nodes whose values nobody reads (keeping inputs, the output and in-place calls); whether
        the graph changed."""
        changed = False
        for node in reversed(self.nodes):
            impure = is_impure_node(node) if is_impure_node is not None else node.is_impure()
            if not impure and len(node.users) == 0:
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Check the graph's invariants: nodes belong to it, every argument is defined before it is used,
        names are unique, targets of get_attr / call_module exist in the owning module."""
        seen: set[Node] = set()
        names: set[str] = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong to this Graph, but was "
                                       "used as an argument! If you are copying nodes from another graph, make "
                                       "sure to use ``arg_transform`` on node_copy() to remap values\n" + str(self))
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it has been defined! "
                                       "Please check that Nodes in the graph are topologically ordered\n" + str(self))
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            seen.add(node)
            mod = self._owning_module
            if mod is not None and node.op in ("get_attr", "call_module"):
                obj = mod
                for atom in node.target.split("."):
                    if not hasattr(obj, atom):
                        raise RuntimeError(f"Node {node} target {node.target} references nonexistent attribute "
                                           f"{atom} of {obj}")
                    obj = getattr(obj, atom)

    # -- printing and code ------------------------------------------------------------------------------------
    def __str__(self) -> str:
        # (PyTorch 2.13 passes empty lists here: no parameters and no return type are listed)
        lines = [node.format_node() for node in self.nodes]
        s = "graph():"
        for line in lines:
            if line:
                s += "\n    " + line
        return s

    def print_tabular(self) -> None:
        """The nodes as a table (needs the ``tabulate`` package, as in PyTorch)."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found on this machine. "
                  "Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module: str, *, verbose: bool = False, include_stride: bool = False,
                    include_device: bool = False, colored: bool = False) -> PythonCode:
        """The graph as the source of ``def forward(...)``, written by its ``CodeGen`` (``set_codegen``)."""
        return self._codegen._gen_python_code(self.nodes, root_module, verbose=verbose)

    def set_codegen(self, codegen: CodeGen) -> None:
        """Write this graph's code with ``codegen`` (a ``CodeGen`` subclass changes the signature, the output, or
        the globals the code sees)."""
        self._codegen = codegen

    def on_generate_code(self, make_transformer: Callable[[Any], Any]) -> Any:
        """Within ``with graph.on_generate_code(f):`` the code is written through ``f(previous)(body_lines)``."""
        import contextlib
        previous = self._codegen._body_transformer
        self._codegen._body_transformer = make_transformer(previous)

        @contextlib.contextmanager
        def restore() -> Iterator[None]:
            try:
                yield
            finally:
                self._codegen._body_transformer = previous
        return restore()


class _PyTreeInfo(NamedTuple):
    """The argument names of the traced function and the structures of its inputs and outputs."""
    orig_args: list[str]
    in_spec: Any
    out_spec: Any


class CodeGen:
    """How a graph becomes Python: ``gen_fn_def`` writes the ``def`` line, ``generate_output`` the ``return``,
    ``process_inputs`` / ``process_outputs`` convert a call's values for the graph and back (identity here),
    ``additional_globals`` names objects the code refers to; the body is one line per node, each value set to None
    after its last use, ``torch.*`` calls by name (PyTorch's layout)."""

    def __init__(self) -> None:
        self._body_transformer: Callable[[list[str]], list[str]] | None = None

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        if not free_vars or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def forward({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args: Any) -> str:
        return f"return {output_args!r}"

    def process_inputs(self, *args: Any) -> Any:
        return args

    def process_outputs(self, outputs: Any) -> Any:
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        return []

    def _gen_python_code(self, nodes: Any, root_module: str, *, verbose: bool = False) -> PythonCode:
        namespace = _Namespace()
        globals_: dict[str, Any] = {}
        import ember
        globals_["torch"] = ember
        globals_["inf"], globals_["nan"] = math.inf, math.nan     # what repr() of a float may print

        def add_global(name_hint: str, obj: Any) -> str:
            # ember's public functions by their torch.* name; builtins by name; anything else as a global named
            # after its module and name (``operator.abs`` -> ``_operator_abs``), as PyTorch names them
            if _is_builtin(obj):
                return obj.__name__
            if obj is ember.Tensor:
                return "torch.Tensor"
            q = _qualified_name(obj) if callable(obj) and not isinstance(obj, type) else None
            if q is not None and q.startswith("torch."):
                return q
            if isinstance(obj, type) and (obj.__module__ or "").startswith(("ember", "torch")):
                hint = _type_repr(obj)          # by its torch name, as code where that name reaches it
                if _reaches(hint, obj):
                    return hint
            elif isinstance(obj, (type, types.ModuleType)):
                hint = name_hint
            else:
                hint = f"{getattr(obj, '__module__', None) or ''}.{getattr(obj, '__name__', name_hint)}".lstrip(".")
            name = namespace.create_name(hint, obj)
            globals_[name] = obj
            return name

        for node in nodes:
            namespace.create_name(node.name, node)

        def type_repr(o: Any) -> str:
            """A type annotation as code; its names become globals (``typing_Union[torch.Tensor,NoneType]``)."""
            import typing
            if o == ():
                return "()"
            if isinstance(o, types.UnionType):
                return "|".join(type_repr(a) for a in typing.get_args(o))
            origin = getattr(o, "__origin__", None)
            if origin is not None:
                if isinstance(o, typing._GenericAlias):    # type: ignore[attr-defined]
                    origin = _ORIGIN_TYPES.get(origin, origin)
                origin_name = add_global(_type_repr(origin), origin)
                type_args = typing.get_args(o)
                if type_args:
                    return f"{origin_name}[{','.join(type_repr(a) for a in type_args)}]"
                return origin_name
            return add_global(_type_repr(o), o)

        def rep(arg: Any) -> str:
            if isinstance(arg, Node):
                return arg.name
            if isinstance(arg, tuple):
                inner = ", ".join(rep(a) for a in arg)
                return f"({inner},)" if len(arg) == 1 else f"({inner})"
            if isinstance(arg, list):
                return "[" + ", ".join(rep(a) for a in arg) + "]"
            if isinstance(arg, dict):
                return "{" + ", ".join(f"{k!r}: {rep(v)}" for k, v in arg.items()) + "}"
            if isinstance(arg, slice):
                return f"slice({rep(arg.start)}, {rep(arg.stop)}, {rep(arg.step)})"
            if callable(arg) and hasattr(arg, "__name__") and not isinstance(arg, type):
                return add_global(arg.__name__, arg)
            if isinstance(arg, type):
                return add_global(arg.__name__, arg)
            if _is_dtype_or_device(arg):
                return f"torch.{str(arg).rpartition('.')[2]}" if not hasattr(arg, "type") else f"device({arg!r})"
            if isinstance(arg, ember.device):
                globals_["device"] = ember.device
                return repr(arg)
            if isinstance(arg, (ember.memory_format, ember.layout)):
                return repr(arg).replace("ember.", "torch.", 1)
            return repr(arg)

        def args_str(args: Any, kwargs: Any) -> str:
            parts = [rep(a) for a in args] + [f"{k} = {rep(v)}" for k, v in kwargs.items()]
            return ", ".join(parts)

        # the last use of each value: after that node's line, the value is set to None
        last_use: dict[Node, Node] = {}
        to_delete: dict[Node, list[Node]] = {}
        for node in reversed(nodes):
            for inp in node._input_nodes:
                if inp not in last_use:
                    last_use[inp] = node
                    to_delete.setdefault(node, []).append(inp)

        free_vars: list[str] = []
        body: list[str] = []
        wrapped_fns: dict[str, None] = {}
        return_annotation = ""
        prev_summary: str | None = None
        for node in nodes:
            if verbose and node.op not in ("placeholder", "output"):
                # one comment per run of nodes from the same source line (print_readable)
                summary = "# " + (_stack_trace_summary(node.stack_trace) or "No stacktrace found for following nodes")
                if summary != prev_summary:
                    prev_summary = summary
                    body.append("")
                    body.append(summary)
            annotation = "" if node.type is None else f" : {type_repr(node.type)}"
            if verbose and "val" in node.meta:
                annotation = _meta_annotation(node.meta["val"]) or annotation
            if node.op == "placeholder":
                free_vars.append(node.target + annotation + (f" = {rep(node.args[0])}" if node.args else ""))
                raw = node.target.replace("*", "")     # *args / **kwargs: the tuple / dict itself
                if raw != node.name:
                    body.append(f"{node.name} = {raw}")
                else:
                    continue
            elif node.op == "call_method":
                body.append(f"{node.name}{annotation} = {_format_target(rep(node.args[0]), node.target)}"
                            f"({args_str(node.args[1:], node.kwargs)})")
            elif node.op == "call_function" and _inplace_operator(node):
                first = rep(node.args[0])
                statement = (f"{first}[{rep(node.args[1])}] = {rep(node.args[2])}" if node.target is operator.setitem
                             else f"{first} {_INPLACE[node.target.__name__]} {rep(node.args[1])}")
                body.append(f"{statement};  {node.name}{annotation} = {first}")
            elif node.op == "call_function":
                code, global_name = _call_function_code(node, rep, args_str, add_global)
                body.append(f"{node.name}{annotation} = {code}")
                if global_name is not None and node.meta.get("is_wrapped", False):
                    wrapped_fns.setdefault(global_name)
            elif node.op == "call_module":
                body.append(f"{node.name}{annotation} = {_format_target(root_module, node.target)}"
                            f"({args_str(node.args, node.kwargs)})")
            elif node.op == "get_attr":
                body.append(f"{node.name}{annotation} = {_format_target(root_module, node.target)}")
            elif node.op == "output":
                if node.type is not None:
                    return_annotation = f" -> {type_repr(node.type)}"
                body.append(self.generate_output(_Repr(rep(node.args[0]))))
                continue
            dead = list(to_delete.get(node, []))
            if node.op != "placeholder" and not node.users:
                dead.append(node)
            if dead:
                body[-1] += ";  " + " = ".join([n.name for n in dead] + ["None"])
        if not body:
            body.append("pass")
        if self._body_transformer is not None:
            body = self._body_transformer(body)
        wrap_stmts = ""
        if wrapped_fns:
            from ember.fx._symbolic_trace import wrap
            wrap_name = add_global("wrap", wrap)
            wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in wrapped_fns)
        for name, value in self.additional_globals():
            add_global(name, value)
        prologue = self.gen_fn_def(free_vars, return_annotation)
        code = "\n".join(body).lstrip("\n")
        code = "\n".join("    " + line for line in code.split("\n"))
        src = f"\n{wrap_stmts}\n\n{prologue}\n{code}\n    "
        return PythonCode(src, globals_)


class _PyTreeCodeGen(CodeGen):
    """The code of a graph traced with structured ``concrete_args``: ``forward`` takes the original arguments,
    flattens them to the graph's inputs with ``fx_pytree.tree_flatten_spec`` and rebuilds the output from its
    leaves with ``pytree.tree_unflatten`` (the GraphModule holds ``_in_spec`` / ``_out_spec``)."""

    def __init__(self, pytree_info: _PyTreeInfo) -> None:
        super().__init__()
        self.pytree_info: _PyTreeInfo = pytree_info

    def process_inputs(self, *inputs: Any) -> Any:
        from ember.utils._pytree import tree_leaves
        return tree_leaves(inputs)

    def process_outputs(self, out: Any) -> Any:
        from ember.utils._pytree import tree_unflatten
        if self.pytree_info is None or self.pytree_info.out_spec is None:
            return out
        if not isinstance(out, (list, tuple)):
            out = [out]
        return tree_unflatten(out, self.pytree_info.out_spec)

    def additional_globals(self) -> list[tuple[str, Any]]:
        import ember.fx._pytree as fx_pytree
        import ember.utils._pytree as pytree
        return [("fx_pytree", fx_pytree), ("pytree", pytree)]

    def gen_fn_def(self, free_vars: list[str], maybe_return_annotation: str) -> str:
        if self.pytree_info is None:
            return super().gen_fn_def(free_vars, maybe_return_annotation)
        fn_args = list(self.pytree_info.orig_args)
        if fn_args and fn_args[0] == "self":
            free_vars.insert(0, "self")
        fn_definition = super().gen_fn_def(fn_args[:], maybe_return_annotation)
        if free_vars:
            spec = self.pytree_info.in_spec
            call = f"[{', '.join(fn_args)}], self._in_spec"
            if (spec.type is tuple and spec.num_children == 2 and spec.children_specs[0].type is tuple
                    and spec.children_specs[1].type is dict):
                # in_spec is (args, kwargs): the keywords are passed as a dict
                n = spec.children_specs[0].num_children
                kwargs = "{" + ", ".join(f"'{k}':{v}" for k, v in zip(spec.children_specs[1].context,
                                                                      self.pytree_info.orig_args[n:])) + "}"
                call = f"([{', '.join(self.pytree_info.orig_args[:n])}], {kwargs}), self._in_spec"
            names = [v.split(":")[0] for v in free_vars]
            annotated = [v + "; " for v in free_vars if ":" in v]
            if annotated:
                fn_definition += "\n    " + "".join(annotated) + "\n"
            fn_definition += f"\n    {', '.join(names)}, = fx_pytree.tree_flatten_spec({call})"
        return fn_definition

    def generate_output(self, output_args: Any) -> str:
        if self.pytree_info is not None and self.pytree_info.out_spec is not None:
            return f"return pytree.tree_unflatten({output_args!r}, self._out_spec)"
        return super().generate_output(output_args)


class _Repr(str):
    """Source text that ``repr`` writes as it is (the output's value handed to ``generate_output``)."""

    def __repr__(self) -> str:
        return str(self)


_ORIGIN_TYPES = {list: "List", dict: "Dict", set: "Set", frozenset: "FrozenSet", tuple: "Tuple"}


def _reaches(dotted: str, obj: Any) -> bool:
    """Whether ``torch.a.b`` names ``obj`` as an attribute path from ember (the generated code's ``torch``)."""
    import ember
    parts = dotted.split(".")
    if parts[0] != "torch":
        return False
    cur: Any = ember
    for p in parts[1:]:
        cur = getattr(cur, p, None)
        if cur is None:
            return False
    return cur is obj


def _inplace_operator(node: Node) -> bool:
    """Whether a call_function node is ``operator.iadd`` (...) or ``operator.setitem`` with its positional operands."""
    t = node.target
    name = getattr(t, "__name__", "")
    if getattr(operator, name, None) is not t or node.kwargs:
        return False
    return (name in _INPLACE and len(node.args) == 2) or (name == "setitem" and len(node.args) == 3)


def _call_function_code(node: Node, rep: Callable[[Any], str], args_str: Callable[..., str],
                        add_global: Callable[[str, Any], str]) -> tuple[str, str | None]:
    """A call_function node's expression, and the global name of its target when it is called by name."""
    t = node.target
    name = getattr(t, "__name__", "")
    if getattr(operator, name, None) is t and not node.kwargs:
        if name in _BINARY and len(node.args) == 2:
            return f"{rep(node.args[0])} {_BINARY[name]} {rep(node.args[1])}", None
        if name in _UNARY and len(node.args) == 1:
            return f"{_UNARY[name]}{rep(node.args[0])}", None
        if name == "getitem" and len(node.args) == 2:
            return f"{rep(node.args[0])}[{rep(node.args[1])}]", None
    if t is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str) and \
            node.args[1].isidentifier():
        return f"{rep(node.args[0])}.{node.args[1]}", None
    global_name = add_global(name, t)
    return f"{global_name}({args_str(node.args, node.kwargs)})", global_name


# PyTorch's short dtype names in printed graphs (``dtype_abbrs``)
DTYPE_ABBRS = {"bfloat16": "bf16", "float64": "f64", "float32": "f32", "float16": "f16", "float8_e4m3fn": "f8e4m3fn",
               "float8_e5m2": "f8e5m2", "float8_e4m3fnuz": "f8e4m3fnuz", "float8_e5m2fnuz": "f8e5m2fnuz",
               "complex32": "c32", "complex64": "c64", "complex128": "c128", "int8": "i8", "int16": "i16",
               "int32": "i32", "int64": "i64", "bool": "b8", "uint8": "u8", "uint16": "u16", "uint32": "u32",
               "uint64": "u64", "bits16": "b16", "bits8": "b8"}


def _meta_annotation(val: Any) -> str | None:
    """The annotation a verbose listing gives a node from its ``meta["val"]``: ``: "f32[3, 4]"`` for a tensor
    (its symbolic sizes where an export made them), ``: "Sym(s0)"`` for a symbolic size."""
    if isinstance(val, TensorImpl):
        sizes = getattr(val, "_sym_sizes", None) or tuple(val.shape)
        abbr = DTYPE_ABBRS.get(str(val.dtype).rpartition(".")[2], str(val.dtype))
        return f': "{abbr}[{", ".join(str(s) for s in sizes)}]"'
    if isinstance(val, SymInt):
        return f': "Sym({val})"'
    return None


def _stack_trace_summary(trace: str | None) -> str | None:
    """``File: path:line in fn, code: source`` for the innermost frame of a node's stack trace."""
    if not trace:
        return None
    lines = trace.rstrip("\n").split("\n")
    for i in range(len(lines) - 1, -1, -1):
        m = re.match(r'\s*File "([^"]+)", line (\d+), in (.+)$', lines[i])
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return f"File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {code}"
    return None


def _stack_trace_comment(trace: str) -> str | None:
    """The summary as a comment line (the generated kernels' source, ``_inductor/codegen.py``)."""
    summary = _stack_trace_summary(trace)
    return None if summary is None else "# " + summary


def _is_builtin(obj: Any) -> bool:
    return getattr(builtins, getattr(obj, "__name__", ""), None) is obj


def _is_dtype_or_device(arg: Any) -> bool:
    return isinstance(arg, dtype)


def _format_target(base: str, target: str) -> str:
    """``self.layer1.0.conv`` as valid Python: ``getattr(self.layer1, "0").conv``."""
    r = base
    for elem in target.split("."):
        r = f"{r}.{elem}" if elem.isidentifier() and not keyword.iskeyword(elem) else f'getattr({r}, "{elem}")'
    return r
