"""Operator schemas parsed (mirrors ``aten/src/ATen/core/function_schema.h`` and ``alias_info.h``): the
``FunctionSchema`` a ``__torch_dispatch__`` handler reads as ``func._schema``, and what the dispatcher's boxed
fallbacks read of an operator's arguments (which are tensors, which alias the result, which are written).

This is ember's one schema parser: the code generator (``tools/codegen/model.py``) loads this file on its own
(without importing ember) and builds its typed model from the text each argument keeps (``type_text``,
``default_text``). It imports nothing but the standard library."""
from __future__ import annotations

from typing import Any

import math


class AliasInfo:
    """``Tensor(a!)``: the alias set and whether the operator writes through it."""

    def __init__(self, before: str, is_write: bool) -> None:
        self.before_set = {"alias::" + before}
        self.after_set = set(self.before_set)
        self.is_write = is_write

    def __repr__(self) -> str:
        return f"({next(iter(self.before_set))[7:]}{'!' if self.is_write else ''})"


class Argument:
    """One argument or return of a schema (``torch._C.Argument``)."""

    def __init__(self, name: str, type: str, default_value: Any = None, has_default: bool = False,  # noqa: A002
                 kwarg_only: bool = False, alias_info: AliasInfo | None = None, type_text: str = "",
                 default_text: str | None = None) -> None:
        self.name = name
        self.type_text = type_text or type      # as written, alias annotation included: ``Tensor(a!)``
        self.default_text = default_text        # the default as written (``Mean``, ``[]``), None without one
        self.type = type
        self.default_value = default_value
        self.has_default_value = has_default
        self.kwarg_only = kwarg_only
        self.alias_info = alias_info
        self.is_out = kwarg_only and alias_info is not None and alias_info.is_write

    def __repr__(self) -> str:
        t = self.type
        if self.alias_info is not None:
            base, opt = (t[:-1], "?") if t.endswith("?") else (t, "")
            t = base + repr(self.alias_info) + opt
        return f"{t} {self.name}".rstrip() if self.name else t


_DEFAULT_WORDS = {"None": None, "True": True, "False": False, "Mean": 1, "Sum": 2, "inf": math.inf, "-inf": -math.inf,
                  "contiguous_format": "contiguous_format"}


def _parse_default(text: str) -> Any:
    text = text.strip()
    if text in _DEFAULT_WORDS:
        return _DEFAULT_WORDS[text]
    if text[:1] in "'\"":
        return text[1:-1]
    if text.startswith("["):
        inner = text[1:-1].strip()
        return [_parse_default(p) for p in inner.split(",")] if inner else []
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _split_top(text: str) -> list[str]:
    """Split on the commas outside brackets and quotes."""
    parts, depth, cur, quote = [], 0, [], ""
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _parse_arg(text: str, kwarg_only: bool) -> Argument:
    decl, eq, default = text.partition("=")
    type_, _, name = decl.strip().rpartition(" ")
    if not type_:  # a return without a name
        type_, name = name, ""
    written = type_
    alias = None
    if "(" in type_:  # Tensor(a!) / Tensor(a)[] / Tensor(a!)?
        base, rest = type_.split("(", 1)
        inner, after = rest.split(")", 1)
        alias = AliasInfo(inner.rstrip("!"), inner.endswith("!"))
        type_ = base + after
    return Argument(name, type_, _parse_default(default) if eq else None, bool(eq), kwarg_only, alias, written,
                    default.strip() if eq else None)


_PY_KEYWORDS = {"from", "to", "lambda", "is", "in", "and", "or", "not", "def", "class", "global"}


def ident(name: str) -> str:
    """An argument's Python name: a keyword gets a trailing underscore (``from`` -> ``from_``)."""
    return name + "_" if name in _PY_KEYWORDS else name


def arg_kind(type_: str) -> str:
    """The argument parser's name for a schema type without alias annotation (``Tensor?`` -> ``T?``, ``SymInt[2]``
    -> ``int[2]``): what the bindings' signature tables and the generated fast binders check."""
    opt = type_.endswith("?")
    t = type_[:-1] if opt else type_
    base, br, size = t.partition("[")
    elem_opt = base.endswith("?")
    base = base.rstrip("?")
    q = "?" if opt else ""
    if base == "Tensor":
        if br:
            return "T?[]" if elem_opt else "T[]"
        return "T" + q
    if base in ("int", "SymInt"):
        return f"int[{size[:-1]}]{q}" if br else "int" + q
    if base in ("float", "bool"):
        return base + ("[]" if br else "") + q
    if base == "Scalar":
        return ("Scalar[]" if br else "Scalar") + q
    return {"ScalarType": "dtype?", "Device": "device?", "Generator": "gen?"}.get(base) or \
        ("str" + q if base == "str" else "any")


class FunctionSchema:
    """A parsed operator schema (``torch._C.FunctionSchema``): ``str()`` prints it as PyTorch does."""

    def __init__(self, text: str, namespace: str = "aten") -> None:
        self._text = text
        head, args_ret = text.split("(", 1)
        self.name = f"{namespace}::{head.partition('.')[0]}"
        self.overload_name = head.partition(".")[2]
        depth, i = 1, 0
        while depth:
            depth += {"(": 1, ")": -1}.get(args_ret[i], 0)
            i += 1
        arg_text, ret_text = args_ret[:i - 1], args_ret[i:].split("->", 1)[1].strip()
        self.arguments: list[Argument] = []
        kwonly = False
        for part in _split_top(arg_text):
            if part == "*":
                kwonly = True
                continue
            self.arguments.append(_parse_arg(part, kwonly))
        self.returns_tuple_syntax = ret_text.startswith("(")     # ``-> (Tensor, Tensor)``
        if self.returns_tuple_syntax:
            ret_text = ret_text[1:-1]
        self.returns = [_parse_arg(p, False) for p in _split_top(ret_text)]
        self._namespace = namespace

    @property
    def is_mutable(self) -> bool:
        return any(a.alias_info is not None and a.alias_info.is_write for a in self.arguments)

    def __str__(self) -> str:
        return f"{self._namespace}::{self._text}"

    def __repr__(self) -> str:
        return str(self)
