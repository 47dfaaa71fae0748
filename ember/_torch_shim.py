"""Running PyTorch code on ember: ``import torch`` (and every ``torch.*`` submodule ember has) gives ember.

``install_as_torch()`` puts a finder in front of ``sys.meta_path`` that answers ``torch`` and
``torch.<path>`` with an alias module for ``ember`` / ``ember.<path>``.  An alias forwards attribute reads and
writes to its ember module; reading something ember lacks raises an ``AttributeError`` that names the
PyTorch attribute (``torch.foo is not available in ember``), and importing a submodule ember lacks raises a
``ModuleNotFoundError`` naming it.  ``python -m ember SCRIPT [ARGS]`` installs this and runs the script.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
from typing import Any

import ember
from ember.c10 import naming

# the PyTorch release whose API ember follows (scripts compare torch.__version__)
TORCH_VERSION = "2.13.0"

_aliases: dict = {}
_MODULE_OWN = frozenset({"__spec__", "__loader__", "__package__", "__path__", "__file__", "__cached__", "__name__",
                         "__builtins__"})


def _torch_name(ember_name: str) -> str:
    return "torch" + ember_name[len("ember"):]


class _TorchAlias(types.ModuleType):
    """``torch.<path>`` standing for ``ember.<path>``."""

    def __init__(self, name, target):
        super().__init__(name, getattr(target, "__doc__", None))
        object.__setattr__(self, "_ember_target", target)
        if hasattr(target, "__path__"):
            object.__setattr__(self, "__path__", [])
        object.__setattr__(self, "__file__", getattr(target, "__file__", None))

    def __getattr__(self, name):
        target = object.__getattribute__(self, "_ember_target")
        if name == "__version__" and self.__name__ == "torch":
            from ember.torch_version import TorchVersion
            return TorchVersion(f"{TORCH_VERSION}+ember{ember.__version__}")
        try:
            value = getattr(target, name)
        except AttributeError:
            try:
                value = importlib.import_module(f"{target.__name__}.{name}")
            except ImportError:
                raise AttributeError(f"{self.__name__}.{name} is not available in ember (module '{target.__name__}' "
                                     f"has no attribute '{name}')") from None
        if isinstance(value, types.ModuleType) and (value.__name__ == "ember" or value.__name__.startswith("ember.")):
            return alias(value)
        return value

    def __setattr__(self, name, value):
        # what the import system writes (the module's spec, loader, package; ``torch.nn`` once ``torch.nn`` is
        # imported) belongs to the alias; everything else (a monkeypatched function) to ember's module
        if name in _MODULE_OWN or isinstance(value, _TorchAlias):
            object.__setattr__(self, name, value)
        else:
            setattr(object.__getattribute__(self, "_ember_target"), name, value)

    def __dir__(self):
        return dir(object.__getattribute__(self, "_ember_target"))

    def __repr__(self):
        return f"<module '{self.__name__}' (ember: {object.__getattribute__(self, '_ember_target').__name__})>"


def alias(module) -> _TorchAlias:
    """The one alias module of an ember module."""
    a = _aliases.get(module.__name__)
    if a is None:
        a = _aliases[module.__name__] = _TorchAlias(_torch_name(module.__name__), module)
    return a


class _AliasLoader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        if isinstance(self.module, types.ModuleType):
            return alias(self.module)
        return self.module      # a module-like object ember keeps as an attribute (backends.cudnn)

    def exec_module(self, module):
        pass


class _TorchFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        ember_name = "ember" + fullname[len("torch"):]
        try:
            module = importlib.import_module(ember_name)
        except ModuleNotFoundError as e:
            parent, _, last = ember_name.rpartition(".")
            obj = getattr(importlib.import_module(parent), last, None) if parent else None
            if obj is not None and not callable(obj):
                module = obj
            elif e.name and (ember_name == e.name or ember_name.startswith(e.name + ".")):
                raise ModuleNotFoundError(f"No module named '{fullname}': ember has no '{ember_name}' (this PyTorch "
                                          "module is not available in ember)", name=fullname) from None
            else:
                raise
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


_FINDER = _TorchFinder()


# -- classes print under torch (Note [Printed module name]) ---------------------------------------------------
def _torch_module_name(name: str) -> str | None:
    """``ember.nn.modules.linear`` -> ``torch.nn.modules.linear``; None for what keeps its name (the generated
    autograd nodes: PyTorch's are C++ classes, and the engine tells ember's apart by their module)."""
    if name == "ember" or (name.startswith("ember.") and not name.startswith("ember._generated")):
        return "torch" + name[len("ember"):]
    return None


def _rename_classes(module: types.ModuleType) -> None:
    """Give the classes an ember module holds (and the classes nested in them) the torch module name, so that
    ``type(x)``, ``torch.typename``, fx's annotations and pickles name them as PyTorch's."""
    seen: set[int] = set()

    def visit(cls: type) -> None:
        if id(cls) in seen:
            return
        seen.add(id(cls))
        new = _torch_module_name(getattr(cls, "__module__", "") or "")
        if new is None:
            return
        cls.__module__ = new
        for v in list(vars(cls).values()):
            if isinstance(v, type):
                visit(v)
    for v in list(vars(module).values()):
        if isinstance(v, type):
            visit(v)


class _RenamingLoader(importlib.abc.Loader):
    """An ember module's own loader, renaming its classes once it has run."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self._loader.exec_module(module)
        _rename_classes(module)

    def __getattr__(self, name: str) -> Any:     # get_source, get_resource_reader, ...: the real loader's
        return getattr(self._loader, name)


class _EmberFinder(importlib.abc.MetaPathFinder):
    """Finds ember's modules imported after ``install_as_torch`` as usual, with the renaming loader."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if _torch_module_name(fullname) is None or fullname == "ember":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or finder is _FINDER or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _RenamingLoader(spec.loader)
                return spec
        return None


_EMBER_FINDER = _EmberFinder()


def install_as_torch() -> None:
    """Make ``import torch`` (and ``torch.*``) give ember from now on — one line in a notebook:
    ``import ember; ember.install_as_torch()``.  Already imported ``torch`` modules are dropped from
    ``sys.modules`` so that later imports see ember."""
    naming.set_prefix("torch")      # Note [Printed module name]
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)
        sys.meta_path.insert(1, _EMBER_FINDER)
        for name, module in list(sys.modules.items()):
            if _torch_module_name(name) is not None and isinstance(module, types.ModuleType):
                _rename_classes(module)
    for name in [n for n in sys.modules if n == "torch" or n.startswith("torch.")]:
        if not isinstance(sys.modules[name], _TorchAlias):
            del sys.modules[name]
