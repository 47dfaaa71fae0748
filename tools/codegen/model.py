"""Operator schemas and ``native_functions.yaml`` entries (mirrors ``torchgen/model.py``).

A schema string such as ``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`` parses
into a ``FunctionSchema`` whose ``str()`` gives the same string back.  ``load_native_functions`` reads
the YAML file and reports malformed entries with the file and line they stand on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

BASE_TYPES = {"Tensor", "int", "SymInt", "float", "bool", "str", "Scalar", "ScalarType", "Layout", "Device",
              "Generator", "MemoryFormat", "Dimname", "Storage", "Stream", "Any", "QScheme"}


class SchemaError(ValueError):
    """A malformed schema or YAML entry; the message names the file and line when known."""


@dataclass(frozen=True)
class Type:
    base: str
    alias: str | None = None          # "a" (view), "a!" (written to), "a -> *" ...
    elem_optional: bool = False       # Tensor?[]
    list_size: str | None = None      # None: not a list; "": [] ; "2": [2]
    optional: bool = False            # trailing ?

    _RE = re.compile(r"^(\w+)(?:\(([^)]*)\))?(\?)?(?:\[(\d*)\])?(\?)?$")

    @classmethod
    def parse(cls, s: str) -> Type:
        m = cls._RE.match(s.strip())
        if not m or m.group(1) not in BASE_TYPES:
            raise SchemaError(f"unknown type '{s}'")
        base, alias, q1, size, q2 = m.groups()
        if size is None and q2:
            raise SchemaError(f"bad type '{s}'")
        if size is None:
            return cls(base, alias, False, None, bool(q1))
        return cls(base, alias, bool(q1), size, bool(q2))

    def __str__(self) -> str:
        s = self.base + (f"({self.alias})" if self.alias else "")
        if self.list_size is not None:
            s += ("?" if self.elem_optional else "") + f"[{self.list_size}]"
        return s + ("?" if self.optional else "")

    @property
    def is_tensor(self) -> bool:
        return self.base == "Tensor" and self.list_size is None

    @property
    def is_tensor_list(self) -> bool:
        return self.base == "Tensor" and self.list_size is not None

    @property
    def is_list(self) -> bool:
        return self.list_size is not None

    @property
    def is_write(self) -> bool:
        return bool(self.alias and self.alias.endswith("!"))


@dataclass(frozen=True)
class Argument:
    type: Type
    name: str
    default: str | None = None
    kwarg_only: bool = False

    def __str__(self) -> str:
        return f"{self.type} {self.name}" + (f"={self.default}" if self.default is not None else "")


@dataclass(frozen=True)
class Return:
    type: Type
    name: str | None = None

    def __str__(self) -> str:
        return str(self.type) + (f" {self.name}" if self.name else "")


def schema_parser() -> Any:
    """ember's schema parser (``ember/aten/schema.py``), loaded from its file without importing ember: the package
    may be the stale code being regenerated, and the parser imports only the standard library."""
    import importlib.util
    import os
    import sys
    name = "_ember_schema_parser"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "ember", "aten", "schema.py")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@dataclass(frozen=True)
class FunctionSchema:
    name: str                  # base name, e.g. "add_"
    overload_name: str         # e.g. "Tensor" or ""
    arguments: tuple[Argument, ...]
    returns: tuple[Return, ...]
    returns_tuple_syntax: bool = False

    _RE = re.compile(r"^([\w.]+)\((.*)\)\s*->\s*(.+)$")

    @classmethod
    def parse(cls, s: str) -> FunctionSchema:
        """Parse with ember's one schema parser (``ember/aten/schema.py``), then type each argument and return."""
        s = s.strip()
        if not cls._RE.match(s):
            raise SchemaError(f"cannot parse schema '{s}'")
        try:
            parsed = schema_parser().FunctionSchema(s)
        except (ValueError, IndexError) as e:
            raise SchemaError(f"cannot parse schema '{s}': {e}") from None
        name = parsed.name.split("::", 1)[1]
        args = []
        for a in parsed.arguments:
            if not a.name:
                raise SchemaError(f"bad argument '{a.type_text}' in '{s}'")
            args.append(Argument(Type.parse(a.type_text), a.name, a.default_text, a.kwarg_only))
        rets = tuple(Return(Type.parse(r.type_text), r.name or None) for r in parsed.returns)
        return cls(name, parsed.overload_name, tuple(args), rets, parsed.returns_tuple_syntax)

    def __str__(self) -> str:
        parts, star = [], False
        for a in self.arguments:
            if a.kwarg_only and not star:
                parts.append("*")
                star = True
            parts.append(str(a))
        rets = ", ".join(str(r) for r in self.returns)
        if self.returns_tuple_syntax:
            rets = f"({rets})"
        full = self.name + (f".{self.overload_name}" if self.overload_name else "")
        return f"{full}({', '.join(parts)}) -> {rets}"

    @property
    def full_name(self) -> str:
        return self.name + (f".{self.overload_name}" if self.overload_name else "")

    @property
    def base_name(self) -> str:
        return self.name[:-1] if self.is_inplace else self.name

    @property
    def is_inplace(self) -> bool:
        return self.name.endswith("_") and not self.name.endswith("__") and bool(self.arguments) and \
            self.arguments[0].type.is_write

    @property
    def out_arguments(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if a.kwarg_only and a.type.is_write)

    @property
    def is_out(self) -> bool:
        return bool(self.out_arguments) and not self.is_inplace

    @property
    def is_view(self) -> bool:
        """Returns alias an input without writing to it: ``Tensor(a) self -> Tensor(a)`` -- except the ops that
        return their input itself (``lift_fresh``: PyTorch's view functions leave it out too)."""
        return self.name not in NOT_VIEWS and any(r.type.alias and not r.type.is_write for r in self.returns)

    @property
    def keeps_base(self) -> bool:
        """A view whose result notes its base (``_base``): every view but ``detach``, which shares the data but is no
        view to autograd (PyTorch writes its autograd kernel by hand, in VariableTypeManual.cpp, for that reason)."""
        return self.is_view and self.name != "detach"

    @property
    def functional_arguments(self) -> tuple[Argument, ...]:
        return tuple(a for a in self.arguments if not (a.kwarg_only and a.type.is_write))


# schemas that alias their input in the result but return the input itself, not a view of it
NOT_VIEWS = frozenset({"lift_fresh"})


@dataclass
class NativeFunction:
    schema: FunctionSchema
    variants: tuple[str, ...]
    dispatch: dict[str, str]
    python_module: str | None
    loc: str
    tags: tuple[str, ...] = field(default_factory=tuple)
    meta: str | None = None     # ember: how the Meta kernel is derived, see ember/aten/meta.py
    device_check: str = "ExactSame"  # "NoCheck": arguments may be on different devices (copy_)

    @property
    def is_composite(self) -> bool:
        return "CompositeImplicitAutograd" in self.dispatch


_VALID_KEYS = {"func", "variants", "dispatch", "python_module", "tags", "device_check", "device_guard",
               "structured", "structured_delegate", "manual_cpp_binding", "autogen", "meta", "category_override"}


def load_native_functions(path: str) -> list[NativeFunction]:
    import yaml  # type: ignore[import-untyped]

    with open(path) as f:
        text = f.read()
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        raise SchemaError(f"{path}: {e}") from None
    if root is None:
        return []
    entries = yaml.safe_load(text)
    out: list[NativeFunction] = []
    seen: dict[str, str] = {}
    for node, entry in zip(root.value, entries):
        loc = f"{path}:{node.start_mark.line + 1}"
        if not isinstance(entry, dict) or "func" not in entry:
            raise SchemaError(f"{loc}: every entry needs a 'func' key")
        unknown = set(entry) - _VALID_KEYS
        if unknown:
            raise SchemaError(f"{loc}: unknown key(s) {sorted(unknown)}")
        try:
            schema = FunctionSchema.parse(entry["func"])
        except SchemaError as e:
            raise SchemaError(f"{loc}: {e}") from None
        if schema.full_name in seen:
            raise SchemaError(f"{loc}: duplicate operator {schema.full_name} (first at {seen[schema.full_name]})")
        seen[schema.full_name] = loc
        variants = tuple(v.strip() for v in str(entry.get("variants", "function")).split(","))
        dispatch = {}
        for keys, kernel in (entry.get("dispatch") or {}).items():
            for k in str(keys).split(","):
                dispatch[k.strip()] = kernel
        tags = entry.get("tags", ())
        tags = (tags,) if isinstance(tags, str) else tuple(tags)
        out.append(NativeFunction(schema, variants, dispatch, entry.get("python_module"), loc, tags,
                                  entry.get("meta"), str(entry.get("device_check", "ExactSame"))))
    return out
