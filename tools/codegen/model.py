"""Operator schemas and ``native_functions.yaml`` entries (mirrors ``torchgen/model.py``).

A schema string such as ``add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor`` parses
into a ``FunctionSchema`` whose ``str()`` gives the same string back.  ``load_native_functions`` reads
the YAML file and reports malformed entries with the file and line they stand on.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

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


def _split_top(s: str) -> list[str]:
    """Split on commas not inside brackets or parentheses."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur))
    return [p.strip() for p in out]


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
        m = cls._RE.match(s.strip())
        if not m:
            raise SchemaError(f"cannot parse schema '{s}'")
        full, args_s, ret_s = m.groups()
        name, _, overload = full.partition(".")
        args, kwarg_only = [], False
        for part in _split_top(args_s):
            if part == "*":
                kwarg_only = True
                continue
            decl, eq, default = part.partition("=")
            tokens = decl.rsplit(None, 1)
            if len(tokens) != 2:
                raise SchemaError(f"bad argument '{part}' in '{s}'")
            args.append(Argument(Type.parse(tokens[0]), tokens[1], default if eq else None, kwarg_only))
        ret_s = ret_s.strip()
        tuple_syntax = ret_s.startswith("(")
        rets = []
        if tuple_syntax:
            inner = ret_s[1:-1]
            for part in _split_top(inner):
                tokens = part.rsplit(None, 1)
                if len(tokens) == 2 and not tokens[1].endswith(")") and tokens[0] and \
                        not tokens[1].startswith("["):
                    rets.append(Return(Type.parse(tokens[0]), tokens[1]))
                else:
                    rets.append(Return(Type.parse(part)))
        else:
            rets.append(Return(Type.parse(ret_s)))
        return cls(name, overload, tuple(args), tuple(rets), tuple_syntax)

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
