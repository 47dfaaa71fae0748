"""Calling a module with other parameters and buffers (``torch/nn/utils/stateless.py``; ``torch.func`` has the
same ``functional_call``): the given tensors stand in for the module's own during one call, then the module is
restored, so gradients flow to the given tensors rather than to the module's parameters."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

__all__ = ["functional_call"]


def _owner(module: Any, name: str) -> tuple[Any, str]:
    *path, leaf = name.split(".")
    for p in path:
        module = getattr(module, p)
    return module, leaf


def _tied_names(module: Any) -> dict[str, list[str]]:
    """Each parameter or buffer name with every other name the same tensor is registered under."""
    by_tensor: dict[int, list[str]] = {}
    for n, t in list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(
            remove_duplicate=False)):
        by_tensor.setdefault(id(t), []).append(n)
    return {n: names for names in by_tensor.values() for n in names}


@contextlib.contextmanager
def _reparametrize(module: Any, tensors: dict[str, Any], tie_weights: bool, strict: bool) -> Iterator[None]:
    if tie_weights:
        tied = _tied_names(module)
        expanded = dict(tensors)
        for name, t in tensors.items():
            for other in tied.get(name, [name]):
                if other in tensors and tensors[other] is not t:
                    keys = sorted(n for n in tied[name] if n in tensors)
                    raise ValueError(f"functional_call got multiple values for keys {keys}, which are tied. Consider "
                                     "using tie_weights=False")
                expanded[other] = t
        tensors = expanded
    if strict:
        own = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
              {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(own - set(tensors)), sorted(set(tensors) - own)
        if missing or unexpected:
            msg = ""
            if unexpected:
                msg += "\n\tUnexpected key(s): " + ", ".join(repr(k) for k in unexpected) + "."
            if missing:
                msg += "\n\tMissing key(s): " + ", ".join(repr(k) for k in missing) + "."
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:{msg}")
    saved = []
    try:
        for name, t in tensors.items():
            owner, leaf = _owner(module, name)
            for store in (owner._parameters, owner._buffers):
                if leaf in store:
                    saved.append((store, leaf, store[leaf]))
                    store[leaf] = t
                    break
            else:
                saved.append((owner.__dict__, leaf, owner.__dict__.get(leaf, _MISSING)))
                owner.__dict__[leaf] = t
        yield
    finally:
        for store, leaf, old in reversed(saved):
            if old is _MISSING:
                store.pop(leaf, None)
            else:
                store[leaf] = old


_MISSING = object()


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None, kwargs: Any = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with ``parameter_and_buffer_dicts`` (a dict of name -> tensor, or a sequence
    of them) standing in for the module's parameters and buffers of those names."""
    if isinstance(parameter_and_buffer_dicts, dict):
        tensors = dict(parameter_and_buffer_dicts)
    else:
        tensors = {}
        for d in parameter_and_buffer_dicts:
            dup = set(d) & set(tensors)
            if dup:
                raise ValueError(f"{sorted(dup)} appeared in multiple dictionaries; behavior of functional call is "
                                 "ambiguous")
            tensors.update(d)
    if kwargs is None:
        kwargs = {}
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, tensors, tie_weights, strict):
        return module(*args, **kwargs)
