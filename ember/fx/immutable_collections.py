"""``torch.fx.immutable_collections``: the list and dict types of a Node's arguments, which refuse mutation
(a node's arguments change only by assigning new ones, so that the users bookkeeping stays right)."""
from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["immutable_list", "immutable_dict"]

_HELP = ("If you are attempting to modify the kwargs or args of a torch.fx.Node object,\n"
         "instead create a new copy of it and assign the copy to the node:\n"
         "    new_args = ... # copy and mutate args\n"
         "    node.args = new_args\n")


def _no_mutation(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"'{type(self).__name__}' object does not support mutation. {_HELP}")


class immutable_list(list):  # noqa: N801 (PyTorch's name)
    """A list that refuses mutation."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = append = clear = extend = insert = pop = remove = \
        reverse = sort = _no_mutation  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))

    def __reduce__(self) -> Any:
        return (immutable_list, (tuple(iter(self)),))


class immutable_dict(dict):  # noqa: N801
    """A dict that refuses mutation."""

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = \
        _no_mutation  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self.items()))

    def __reduce__(self) -> Any:
        return (immutable_dict, (iter(self.items()),))
