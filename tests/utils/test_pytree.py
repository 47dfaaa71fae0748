"""``ember.utils._pytree`` against ``torch.utils._pytree``: the same leaves, structure and rebuilt trees."""
from __future__ import annotations

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

from ember.utils import _pytree as ep

tp = pytest.importorskip("torch.utils._pytree", reason="PyTorch (the oracle) is not installed")

Point = namedtuple("Point", "x y")
TREES = [
    1, None, [1, 2, (3, 4)], {"b": 1, "a": [2, {"c": 3}]}, OrderedDict(z=1, y=(2, 3)), Point(1, [2, 3]),
    (), [], {}, deque([1, (2, 3)], maxlen=5), defaultdict(list, k=[1, 2]), ((1,), [(2,), {"q": None}]),
]


@pytest.mark.parametrize("tree", TREES, ids=[type(t).__name__ for t in TREES])
def test_flatten_and_unflatten_match_pytorch(tree):
    le, se = ep.tree_flatten(tree)
    lt, st = tp.tree_flatten(tree)
    assert le == lt
    assert se.num_leaves == st.num_leaves and se.num_nodes == st.num_nodes
    rebuilt = ep.tree_unflatten([x * 10 if isinstance(x, int) else x for x in le], se)
    ref = tp.tree_unflatten([x * 10 if isinstance(x, int) else x for x in lt], st)
    assert rebuilt == ref and type(rebuilt) is type(ref)
    assert ep.tree_map(lambda x: x, tree) == tree
    assert [str(ep.keystr(p)) for p, _ in ep.tree_leaves_with_path(tree)] == \
        [str(tp.keystr(p)) for p, _ in tp.tree_leaves_with_path(tree)]


def test_registered_classes_is_leaf_and_errors():
    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

    ep.register_pytree_node(Box, lambda bx: ([bx.a, bx.b], None), lambda xs, _: Box(*xs),
                            flatten_with_keys_fn=lambda bx: ([(ep.GetAttrKey("a"), bx.a), (ep.GetAttrKey("b"), bx.b)],
                                                             None))
    tree = {"box": Box(1, [2, 3])}
    leaves, spec = ep.tree_flatten(tree)
    assert leaves == [1, 2, 3]
    out = ep.tree_unflatten([4, 5, 6], spec)
    assert isinstance(out["box"], Box) and out["box"].a == 4 and out["box"].b == [5, 6]
    assert [ep.keystr(p) for p, _ in ep.tree_leaves_with_path(tree)] == ["['box'].a", "['box'].b[0]", "['box'].b[1]"]
    assert ep.tree_leaves([1, [2, 3]], is_leaf=lambda x: x == [2, 3]) == \
        tp.tree_leaves([1, [2, 3]], is_leaf=lambda x: x == [2, 3]) == [1, [2, 3]]
    assert ep.tree_map_only(int, lambda x: -x, [1, "s", (2.5, 3)]) == [-1, "s", (2.5, -3)]
    with pytest.raises(ValueError, match="already registered"):
        ep.register_pytree_node(Box, lambda bx: ([], None), lambda xs, _: Box(0, 0))
    with pytest.raises(ValueError, match="holds 3 items"):
        ep.tree_unflatten([1], spec)


def test_flatten_and_unflatten_leave_no_reference_cycle():
    """The recursions are module functions: a nested function that calls itself is a reference cycle, which
    kept the leaves (tensors) alive until the garbage collector ran."""
    import gc
    import weakref

    import ember
    from ember.utils import _pytree as pytree

    class Leaf:
        pass
    gc.collect()
    gc.disable()
    try:
        leaf = Leaf()
        ref = weakref.ref(leaf)
        tree = {"a": [leaf, (1, {"b": 2})]}
        leaves, spec = pytree.tree_flatten(tree)
        out = pytree.tree_unflatten(leaves, spec)
        pytree.tree_flatten_with_path(tree)
        pytree.tree_map(lambda v: v, tree)
        assert out["a"][0] is leaf
        del leaf, tree, leaves, out
        assert ref() is None
        t = ember.ones(3)
        tref = weakref.ref(t)
        pytree.tree_map(lambda v: v * 2, [t])
        del t
        assert tref() is None
    finally:
        gc.enable()
