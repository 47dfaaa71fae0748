"""``torch.fx.GraphModule``: a Module whose ``forward`` is the Python code generated from a ``Graph``
(``torch/fx/graph_module.py``). The submodules and attributes the graph's ``call_module`` / ``get_attr`` nodes
name are copied (by reference) from the traced root into the same dotted paths; ``recompile()`` regenerates
``forward`` after the graph was edited; ``code`` is its source."""
from __future__ import annotations

import copy
import linecache
import os
from typing import Any

import ember
from ember.fx.graph import Graph
from ember.nn import Module

__all__ = ["GraphModule"]

_next_id = [0]


def _copy_attr(from_module: Any, to_module: Any, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, ember.nn.Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _get_attr(model: Any, attr_name: str) -> Any:
    """The attribute ``a.b.c`` of ``model``, following submodules."""
    obj = model
    for part in attr_name.split("."):
        obj = getattr(obj, part)
    return obj


def _assign_attr(from_obj: Any, to_module: Any, target: str) -> None:
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, ember.Tensor) and not isinstance(from_obj, ember.nn.Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


class GraphModule(Module):
    """A Module generated from a Graph (see the module docstring)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # each instance gets a class of its own, so that its generated forward can be set on the class
        for t in cls.__mro__:
            c = t.__qualname__.split(".")[-1]
            if c != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # type: ignore[valid-type, misc]
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Any, graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but that target was not "
                                           "provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of ``forward``."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> Any:
        """Regenerate ``forward`` from the graph (after editing it)."""
        from ember.fx.graph import _PyTreeCodeGen
        codegen = self._graph._codegen
        if isinstance(codegen, _PyTreeCodeGen):
            self.__dict__["_in_spec"] = codegen.pytree_info.in_spec
            self.__dict__["_out_spec"] = codegen.pytree_info.out_spec
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        cls = type(self)
        _next_id[0] += 1
        key = f"<eval_with_key>.{_next_id[0]}"
        linecache.cache[key] = (len(python_code.src), None, python_code.src.splitlines(True), key)
        globals_ = dict(python_code.globals)
        exec(compile(python_code.src, key, "exec"), globals_)
        cls.forward = globals_["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False, include_device: bool = False,
                       colored: bool = False) -> str:
        """The generated module as a class, for reading: each run of nodes under a comment naming the source line
        that made it, and the GraphModules among its children as nested classes (PyTorch's layout)."""
        out = _print_readable(self, self._get_name())
        if print_output:
            print(out)
        return out

    # -- submodules, by dotted path -----------------------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install ``m`` at the dotted path ``target``, making empty Modules for missing parents; False if a
        parent on the way is not a Module."""
        *prefix, field = target.split(".")
        mod: Any = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at the dotted path ``target``; False if there is none there."""
        *path, field = target.split(".")
        mod: Any = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, field) or not isinstance(getattr(mod, field), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove every submodule that no ``call_module`` / ``get_attr`` node reaches (a module is used when it is
        called, when an attribute of it is read, or when one of its children is used)."""
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr") and isinstance(node.target, str):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
                if node.op == "call_module":
                    try:
                        sub = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.update(f"{node.target}.{name}" for name, _ in sub.named_modules() if name)
        for name in [name for name, _ in self.named_modules() if name and name not in used]:
            self.delete_submodule(name)

    def _get_name(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use `graph_module.print_readable()`"])

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph, self._get_name())
        res.meta = getattr(self, "meta", {})
        return res

    def __deepcopy__(self, memo: Any) -> GraphModule:
        res = Module.__new__(type(self))
        memo[id(self)] = res
        fake = Module()
        fake.__dict__ = copy.deepcopy(self.__dict__, memo)
        graph = fake.__dict__.pop("_graph")
        GraphModule.__init__(res, fake, graph, self._get_name())
        return res

    def __reduce__(self) -> Any:
        dict_without_graph = self.__dict__.copy()
        python_code = self.recompile()
        del dict_without_graph["_graph"]
        return (_reduce_graph_module, (dict_without_graph, python_code.src, self._get_name()))

    def to_folder(self, folder: str, module_name: str = "FxModule") -> None:
        """Write the module as importable Python: ``module.py`` with the class and ``state_dict.pt``."""
        os.makedirs(folder, exist_ok=True)
        ember.save(self.state_dict(), os.path.join(folder, "state_dict.pt"))
        lines = ["import torch", "from torch.nn import *", "", "", f"class {module_name}(torch.nn.Module):",
                 "    def __init__(self):", "        super().__init__()"]
        for name, mod in self.named_children():
            lines.append(f"        self.{name} = {mod!r}")
        for name, p in self._parameters.items():
            lines.append(f"        self.{name} = torch.nn.Parameter(torch.empty({list(p.shape)}, "
                         f"dtype=torch.{p.dtype}))")
        for name, b in self._buffers.items():
            lines.append(f"        self.register_buffer('{name}', torch.empty({list(b.shape)}, "
                         f"dtype=torch.{b.dtype}))")
        lines.append("        self.load_state_dict(torch.load(r'" + os.path.join(folder, "state_dict.pt") + "'))")
        lines.append(self._code.replace("\n", "\n    ").rstrip())
        with open(os.path.join(folder, "module.py"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(folder, "__init__.py"), "w") as f:
            f.write("from .module import *\n")


def _print_readable(module: GraphModule, module_name: str) -> str:
    code = module._graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
    text = _addindent(f"class {module_name}(torch.nn.Module):\n" + code, 4)
    nested = [""] + [_print_readable(sub, name) for name, sub in module.named_children()
                     if isinstance(sub, GraphModule)]
    return text + _addindent("\n".join(nested), 4)


def _addindent(s: str, n: int) -> str:
    """Every line after the first indented by ``n`` spaces, blank lines left empty."""
    first, *rest = s.split("\n")
    if not rest:
        return s
    return "\n".join([first] + [" " * n + line if line.strip() else "" for line in rest])


def _reduce_graph_module(body: dict[str, Any], import_source: str, class_name: str) -> GraphModule:
    """Rebuild a pickled GraphModule: its forward's source is traced again into a graph."""
    from ember.fx._symbolic_trace import Tracer
    globals_: dict[str, Any] = {"torch": ember}
    exec(compile(import_source, "<fx-unpickle>", "exec"), globals_)
    fn = globals_["forward"]

    class CodeOnlyModule(Module):
        def __init__(self, body: dict[str, Any]) -> None:
            super().__init__()
            self.__dict__ = body

    CodeOnlyModule.forward = fn  # type: ignore[method-assign]
    com = CodeOnlyModule(body)

    class KeepModules(Tracer):
        def is_leaf_module(self, m: Any, qualname: str) -> bool:
            return True
    graph = KeepModules().trace(com)
    return GraphModule(com, graph, class_name)
