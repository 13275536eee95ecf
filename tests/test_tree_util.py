"""Pytrees: flatten/unflatten round trips, registration, tree_map, prefixes, PyTreeDef.

Leaf orders are checked against a small independent reference flattener written here, and
PyTreeDef reprs against the strings JAX prints for the same trees.
"""
import dataclasses
from collections import OrderedDict, defaultdict, namedtuple

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import tree_util as tu
from functrans.core.eval import eval_jaxpr

Point = namedtuple("Point", "x y")


def reference_leaves(tree):
    """Leaves in JAX's order for the built-in node types: dicts by sorted key, None empty."""
    if tree is None:
        return []
    if isinstance(tree, (dict, OrderedDict, defaultdict)):
        keys = list(tree) if type(tree) is OrderedDict else sorted(tree)
        return [leaf for k in keys for leaf in reference_leaves(tree[k])]
    if isinstance(tree, (tuple, list)):
        return [leaf for c in tree for leaf in reference_leaves(c)]
    return [tree]


def same_tree(a, b):
    """Equal values *and* identical container types all the way down."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):  # (only an OrderedDict keeps its key order through a round trip)
        same_keys = list(a) == list(b) if type(a) is OrderedDict else sorted(a) == sorted(b)
        return same_keys and all(same_tree(a[k], b[k]) for k in a) and \
            getattr(a, "default_factory", None) is getattr(b, "default_factory", None)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(same_tree(x, y) for x, y in zip(a, b))
    return a == b


leaves = st.integers(-5, 5)
keys = st.sampled_from(["a", "b", "c", "d"])
trees = st.recursive(
    leaves | st.none(),
    lambda kids: st.one_of(
        st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
        st.dictionaries(keys, kids, max_size=3),
        st.tuples(kids, kids).map(lambda t: Point(*t)),
        st.dictionaries(keys, kids, max_size=3).map(lambda d: OrderedDict(reversed(d.items()))),
        st.dictionaries(keys, kids, max_size=3).map(lambda d: defaultdict(list, d))),
    max_leaves=10)


@given(trees)
def test_flatten_unflatten_round_trip(tree):
    leaves_, treedef = tu.tree_flatten(tree)
    assert leaves_ == reference_leaves(tree)
    assert treedef.num_leaves == len(leaves_)
    assert same_tree(tu.tree_unflatten(treedef, leaves_), tree)
    assert tu.tree_structure(tree) == treedef and hash(tu.tree_structure(tree)) == hash(treedef)
    assert tu.tree_leaves(tree) == leaves_
    assert same_tree(treedef.unflatten(leaves_), tree)


@given(trees, st.data())
def test_tree_map_with_several_trees(tree, data):
    n = len(tu.tree_leaves(tree))
    values = data.draw(st.lists(leaves, min_size=n, max_size=n))
    other = tu.tree_unflatten(tu.tree_structure(tree), values)

    class Triple:  # not a pytree node: a leaf of the result
        def __init__(self, *abc):
            self.abc = abc

    out = tu.tree_map(Triple, tree, other, other)
    assert tu.tree_structure(out) == tu.tree_structure(tree)
    assert [t.abc for t in tu.tree_leaves(out)] == list(zip(reference_leaves(tree), values, values))
    assert tu.tree_map(lambda a, b: a - b, other, tree) == \
        tu.tree_unflatten(tu.tree_structure(tree),
                          [v - r for v, r in zip(values, reference_leaves(tree))])


def test_dict_keys_are_sorted_and_none_is_an_empty_node():
    leaves_, treedef = tu.tree_flatten({"b": 1, "a": (2, None), "c": None})
    assert leaves_ == [2, 1]
    assert treedef.num_leaves == 2 and treedef.num_nodes == 6
    assert tu.tree_unflatten(treedef, ["x", "y"]) == {"a": ("x", None), "b": "y", "c": None}
    assert tu.tree_leaves([None, (None,), {}]) == []
    assert tu.tree_leaves([None, 1], is_leaf=lambda x: x is None) == [None, 1]


def test_is_leaf_stops_descent():
    tree = {"p": Point(1, 2), "q": [3, (4,)]}
    leaves_, treedef = tu.tree_flatten(tree, is_leaf=lambda x: isinstance(x, (Point, tuple)))
    assert leaves_ == [Point(1, 2), 3, (4,)]
    assert tu.tree_unflatten(treedef, leaves_) == tree


# ---- registration ------------------------------------------------------------------------------
class Box:
    def __init__(self, value, label):
        self.value, self.label = value, label

    def __eq__(self, other):
        return type(other) is Box and (self.value, self.label) == (other.value, other.label)


tu.register_pytree_node(Box, lambda b: ((b.value,), b.label), lambda label, c: Box(c[0], label))


@tu.register_pytree_node_class
class Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def tree_flatten(self):
        return (self.a, self.b), "pair"

    @classmethod
    def tree_unflatten(cls, aux, children):
        assert aux == "pair"
        return cls(*children)


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    b: object
    n: int = dataclasses.field(default=1, metadata=dict(static=True))


@dataclasses.dataclass
class Explicit:
    x: object
    name: str
    scratch: object = None


tu.register_dataclass(Explicit, data_fields=["x"], meta_fields=["name"], drop_fields=["scratch"])


def test_custom_nodes_round_trip():
    tree = [Box({"k": 1}, "lbl"), Pair(2, Point(3, 4)), Params(5, [6], n=3), Explicit(7, "e")]
    leaves_, treedef = tu.tree_flatten(tree)
    assert leaves_ == [1, 2, 3, 4, 5, 6, 7]
    back = tu.tree_unflatten(treedef, [v * 10 for v in leaves_])
    assert back[0] == Box({"k": 10}, "lbl")
    assert (back[1].a, back[1].b) == (20, Point(30, 40))
    assert back[2] == Params(50, [60], n=3) and back[3] == Explicit(70, "e")
    # static fields are part of the structure, not leaves
    assert tu.tree_structure(Params(1, 2, n=3)) != tu.tree_structure(Params(1, 2, n=4))
    assert tu.tree_structure(Box(1, "a")) != tu.tree_structure(Box(1, "b"))


def test_registration_errors():
    with pytest.raises(ValueError, match="already registered"):
        tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: Box(None, None))
    with pytest.raises(TypeError, match="not a dataclass"):
        tu.register_dataclass(type("NotADataclass", (), {}))


def test_partial_is_a_pytree():
    p = tu.Partial(np.add, 1.0)
    leaves_, treedef = tu.tree_flatten(p)
    assert leaves_ == [1.0]
    q = tu.tree_unflatten(treedef, [2.0])
    assert isinstance(q, tu.Partial) and q(3.0) == 5.0


def test_pytrees_through_make_jaxpr():
    """Transformations flatten arguments and outputs with these pytrees."""
    def f(p, extra):
        return {"out": Params(p.w * 2, p.b + extra["v"], n=p.n)}

    args = (Params(np.ones(2), np.zeros(2), n=7), {"v": 3.0})
    jaxpr, shape = ft.make_jaxpr(f, return_shape=True)(*args)
    ft.check_jaxpr(jaxpr)
    assert shape["out"].n == 7 and shape["out"].w.shape == (2,)
    outs = eval_jaxpr(jaxpr, *tu.tree_leaves(args))
    np.testing.assert_array_equal(np.asarray(outs[0]), [2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(outs[1]), [3.0, 3.0])


# ---- prefixes and mismatches -----------------------------------------------------------------------
@pytest.mark.parametrize("tree,other,message", [
    ({"a": 1, "b": 2}, {"a": 1, "c": 2}, r"at the root: expected a dict with keys \['a', 'b'\], "
                                         r"got keys \['a', 'c'\]"),
    ((1, 2), (1, 2, 3), "at the root: expected a tuple of length 2, got length 3"),
    ((1, [2]), (1, (2,)), r"at \[1\]: expected a list, got a tuple"),
    ({"a": [1, None]}, {"a": [1, 5]}, r"at \['a'\]\[1\]: expected None, got int"),
    ([Point(1, 2)], [(1, 2)], r"at \[0\]: expected a namedtuple Point, got a tuple"),
    ((1, 2), 3, "at the root: expected a tuple, got a int \\(a leaf\\)"),
    (Box(1, "a"), Box(1, "b"), "node data 'a'.*got node data 'b'"),
])
def test_mismatch_errors_name_the_place_and_difference(tree, other, message):
    with pytest.raises(ValueError, match=message):
        tu.tree_map(lambda a, b: a, tree, other)
    with pytest.raises(ValueError, match=message):
        tu.flatten_up_to(tu.tree_structure(tree), other)


def test_flatten_up_to_keeps_subtrees_whole():
    treedef = tu.tree_structure((0, {"a": 0}))
    assert tu.flatten_up_to(treedef, ([1, 2], {"a": (3, None)})) == [[1, 2], (3, None)]
    assert treedef.flatten_up_to(((1,), {"a": 2})) == [(1,), 2]


def test_broadcast_prefix():
    full = ((5, 6), [7, {"k": 8, "j": 9}], 10)
    assert tu.broadcast_prefix((0, 1, None), full) == [0, 0, 1, 1, 1, None]
    assert tu.broadcast_prefix((0, [1, 2], 3), full) == [0, 0, 1, 2, 2, 3]
    assert tu.broadcast_prefix(7, full) == [7] * 6
    with pytest.raises(ValueError, match="in_axes: .*expected a tuple of length 2, got length 3"):
        tu.broadcast_prefix((0, 1), full, what="in_axes")
    with pytest.raises(ValueError, match=r"at \[1\]: expected a tuple, got a list"):
        tu.broadcast_prefix((0, (1, 2), 3), full)


def test_tree_transpose_reduce_all():
    outer = tu.tree_structure([0, 0])
    inner = tu.tree_structure((0, {"a": 0}))
    x = [(1, {"a": 2}), (3, {"a": 4})]
    assert tu.tree_transpose(outer, inner, x) == ([1, 3], {"a": [2, 4]})
    assert tu.tree_reduce(lambda a, b: a + b, x) == 10
    assert tu.tree_reduce(lambda a, b: a + b, x, 100) == 110
    assert tu.tree_all([True, (1, {"a": True})]) and not tu.tree_all([True, (0,)])
    assert tu.all_leaves([1, fnp.ones(2)]) and not tu.all_leaves([1, (2,)])


# ---- PyTreeDef -------------------------------------------------------------------------------------
@tu.register_dataclass
@dataclasses.dataclass
class D:
    w: int
    n: int = dataclasses.field(default=1, metadata=dict(static=True))


class C:
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_node(C, lambda c: ((c.a,), c.b), lambda aux, ch: C(ch[0], aux))


@pytest.mark.parametrize("tree,expected", [
    ((1, [2, 3], {"b": 4, "a": None}), "PyTreeDef((*, [*, *], {'a': None, 'b': *}))"),
    ((1,), "PyTreeDef((*,))"),
    (None, "PyTreeDef(None)"),
    (5, "PyTreeDef(*)"),
    (Point(1, (2,)), "PyTreeDef(CustomNode(namedtuple[Point], [*, (*,)]))"),
    (OrderedDict([("b", 1), ("a", 2)]), "PyTreeDef(CustomNode(OrderedDict[('b', 'a')], [*, *]))"),
    (defaultdict(list, {"z": 1, "y": [2]}),
     "PyTreeDef(CustomNode(defaultdict[(<class 'list'>, ('y', 'z'))], [[*], *]))"),
    (D(1, 2), "PyTreeDef(CustomNode(D[(2,)], [*]))"),
    (C(1, "x"), "PyTreeDef(CustomNode(C[x], [*]))"),
])
def test_treedef_repr_like_jax(tree, expected):
    """Expected strings are what JAX prints for the same trees."""
    assert repr(tu.tree_structure(tree)) == expected


def test_treedef_equality_and_hash():
    a = tu.tree_structure({"x": (1, 2), "y": None})
    assert a == tu.tree_structure({"y": None, "x": (5, 6)})
    assert hash(a) == hash(tu.tree_structure({"y": None, "x": (5, 6)}))
    assert len({a, tu.tree_structure({"y": None, "x": (5, 6)})}) == 1
    assert a != tu.tree_structure({"x": [1, 2], "y": None})
    assert tu.tree_structure((1, 2)) != tu.tree_structure([1, 2])
    assert tu.tree_structure(Point(1, 2)) != tu.tree_structure((1, 2))
    assert tu.tree_structure(OrderedDict(a=1, b=2)) != tu.tree_structure(OrderedDict(b=2, a=1))
    assert tu.tree_structure(None) != tu.tree_structure(1)
    assert a != "not a treedef"
    children = tu.tree_structure((1, [2, 3])).children()
    assert children == [tu.tree_structure(1), tu.tree_structure([2, 3])]
    assert tu.treedef_is_leaf(tu.tree_structure(1)) and not tu.treedef_is_leaf(a)


def test_unflatten_checks_leaf_count():
    with pytest.raises(ValueError, match="has 2 leaves, got 3"):
        tu.tree_unflatten(tu.tree_structure((1, 2)), [1, 2, 3])


def test_unhashable_aux_data_is_reported():
    class Bag:
        pass
    tu.register_pytree_node(Bag, lambda b: ((), [1]), lambda aux, c: Bag())
    with pytest.raises(TypeError, match="hashable"):
        hash(tu.tree_structure(Bag()))
