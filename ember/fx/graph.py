"""``torch.fx.Graph``: the nodes of one traced function in execution order, and the Python code they stand for
(``torch/fx/graph.py``)."""
from __future__ import annotations

import builtins
import inspect
import keyword
import math
import operator
import re
from typing import Any, Callable, Iterator

from ember.fx.node import Node, _qualified_name, map_arg

__all__ = ["Graph", "PythonCode"]

_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_illegal_names = {k: object() for k in keyword.kwlist}
_illegal_names.update(builtins.__dict__)   # names that would shadow a builtin get a suffix (``sum_1``)

# how an operator's call is written (PyTorch's magic_methods / reflectable_magic_methods / unary ones)
_BINARY = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "truediv": "/", "mod": "%", "pow": "**",
           "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|", "xor": "^", "matmul": "@", "eq": "==",
           "ne": "!=", "lt": "<", "gt": ">", "le": "<=", "ge": ">="}
_UNARY = {"neg": "-", "pos": "+", "invert": "~"}


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
        placeholder_names: list[str] = []
        maybe_return_typename = [""]
        lines = [node.format_node(placeholder_names, maybe_return_typename) for node in self.nodes]
        s = "graph()" + maybe_return_typename[0] + ":"      # (PyTorch 2.13 lists no parameters here)
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

    def python_code(self, root_module: str, *, verbose: bool = False) -> PythonCode:
        """The graph as the source of ``def forward(...)``, in PyTorch's layout: one line per node, each value
        set to None after its last use, ``torch.*`` calls by name."""
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
            q = _qualified_name(obj) if callable(obj) else None
            if q is not None and q.startswith("torch."):
                return q
            hint = f"{getattr(obj, '__module__', None) or ''}.{getattr(obj, '__name__', name_hint)}".lstrip(".")
            name = namespace.create_name(hint, obj)
            globals_[name] = obj
            return name

        for node in self.nodes:
            namespace.create_name(node.name, node)

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
        for node in reversed(self.nodes):
            for inp in node._input_nodes:
                if inp not in last_use:
                    last_use[inp] = node
                    to_delete.setdefault(node, []).append(inp)

        free_vars: list[str] = []
        body: list[str] = []
        for node in self.nodes:
            if node.op not in ("placeholder", "output") and node.stack_trace:
                line = _stack_trace_comment(node.stack_trace)
                if line:
                    body.append(line)
            if node.op == "placeholder":
                free_vars.append(node.target + (f" = {rep(node.args[0])}" if node.args else ""))
                raw = node.target.replace("*", "")     # *args / **kwargs: the tuple / dict itself
                if raw != node.name:
                    body.append(f"{node.name} = {raw}")
                else:
                    continue
            elif node.op == "call_method":
                body.append(f"{node.name} = {_format_target(rep(node.args[0]), node.target)}"
                            f"({args_str(node.args[1:], node.kwargs)})")
            elif node.op == "call_function":
                body.append(f"{node.name} = {self._call_function_code(node, rep, args_str, add_global)}")
            elif node.op == "call_module":
                body.append(f"{node.name} = {_format_target(root_module, node.target)}"
                            f"({args_str(node.args, node.kwargs)})")
            elif node.op == "get_attr":
                body.append(f"{node.name} = {_format_target(root_module, node.target)}")
            elif node.op == "output":
                body.append(f"return {rep(node.args[0])}")
                continue
            dead = list(to_delete.get(node, []))
            if node.op != "placeholder" and not node.users:
                dead.append(node)
            if dead:
                body[-1] += ";  " + " = ".join([n.name for n in dead] + ["None"])
        if not any(n.op == "output" for n in self.nodes):
            body.append("pass")
        code = "\n".join("    " + line for line in body)
        src = f"\n\n\ndef forward({', '.join([root_module] + free_vars)}):\n{code}\n    "
        return PythonCode(src, globals_)

    def _call_function_code(self, node: Node, rep: Callable[[Any], str], args_str: Callable[..., str],
                            add_global: Callable[[str, Any], str]) -> str:
        t = node.target
        name = getattr(t, "__name__", "")
        if getattr(operator, name, None) is t and not node.kwargs:
            if name in _BINARY and len(node.args) == 2:
                return f"{rep(node.args[0])} {_BINARY[name]} {rep(node.args[1])}"
            if name in _UNARY and len(node.args) == 1:
                return f"{_UNARY[name]}{rep(node.args[0])}"
            if name == "getitem" and len(node.args) == 2:
                return f"{rep(node.args[0])}[{rep(node.args[1])}]"
        if t is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str) and \
                node.args[1].isidentifier():
            return f"{rep(node.args[0])}.{node.args[1]}"
        return f"{add_global(name, t)}({args_str(node.args, node.kwargs)})"




def _stack_trace_comment(trace: str) -> str | None:
    """``# File: path:line in fn, code: source`` for the innermost frame of a node's stack trace."""
    import re
    lines = trace.rstrip("\n").split("\n")
    for i in range(len(lines) - 1, -1, -1):
        m = re.match(r'\s*File "([^"]+)", line (\d+), in (.+)$', lines[i])
        if m:
            code = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return f"# File: {m.group(1)}:{m.group(2)} in {m.group(3)}, code: {code}"
    return None


def _is_builtin(obj: Any) -> bool:
    return getattr(builtins, getattr(obj, "__name__", ""), None) is obj


def _is_dtype_or_device(arg: Any) -> bool:
    from ember.c10.dtype import dtype
    return isinstance(arg, dtype)


def _format_target(base: str, target: str) -> str:
    """``self.layer1.0.conv`` as valid Python: ``getattr(self.layer1, "0").conv``."""
    r = base
    for elem in target.split("."):
        r = f"{r}.{elem}" if elem.isidentifier() and not keyword.iskeyword(elem) else f'getattr({r}, "{elem}")'
    return r
