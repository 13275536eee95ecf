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


def test_unhashable_aux_data_is_compared_not_hashed_as_in_jax():
    class Bag:
        def __init__(self, aux):
            self.aux = aux
    tu.register_pytree_node(Bag, lambda b: ((), b.aux), lambda aux, c: Bag(aux))
    one, same, other = (tu.tree_structure(Bag([1])), tu.tree_structure(Bag([1])),
                        tu.tree_structure(Bag([2])))
    assert one == same and hash(one) == hash(same) and one != other
    assert {one: "a"}[same] == "a" and other not in {one: "a"}


# ---- key paths ---------------------------------------------------------------------------------
@pytest.mark.parametrize("entry,rep,text,simple", [
    # repr / str / keystr(simple=True) as JAX 0.10.2 prints them
    (tu.DictKey("a"), "DictKey(key='a')", "['a']", "a"),
    (tu.DictKey(1), "DictKey(key=1)", "[1]", "1"),
    (tu.DictKey((1, "b")), "DictKey(key=(1, 'b'))", "[(1, 'b')]", "(1, 'b')"),
    (tu.SequenceKey(0), "SequenceKey(idx=0)", "[0]", "0"),
    (tu.SequenceKey(np.int64(2)), "SequenceKey(idx=2)", "[2]", "2"),
    (tu.GetAttrKey("x"), "GetAttrKey(name='x')", ".x", "x"),
    (tu.FlattenedIndexKey(3), "FlattenedIndexKey(key=3)", "[<flat index 3>]", "3"),
])
def test_key_entries_print_like_jax(entry, rep, text, simple):
    assert repr(entry) == rep and str(entry) == text
    assert tu.keystr((entry,)) == text and tu.keystr((entry,), simple=True) == simple


def test_key_entries_are_frozen_hashable_values():
    import copy
    import pickle
    assert tu.DictKey("a") == tu.DictKey("a") and hash(tu.DictKey("a")) == hash(tu.DictKey("a"))
    assert tu.DictKey("a") != tu.DictKey("b") and tu.DictKey("a") != "a"
    assert tu.DictKey(0) != tu.SequenceKey(0) and tu.SequenceKey(0) != tu.FlattenedIndexKey(0)
    assert len({tu.GetAttrKey("x"), tu.GetAttrKey("x"), tu.GetAttrKey("y")}) == 2
    assert (tu.DictKey("k").key, tu.SequenceKey(1).idx, tu.GetAttrKey("n").name,
            tu.FlattenedIndexKey(2).key) == ("k", 1, "n", 2)
    for entry in (tu.DictKey("a"), tu.SequenceKey(1), tu.GetAttrKey("x"),
                  tu.FlattenedIndexKey(0)):
        assert pickle.loads(pickle.dumps(entry)) == entry == copy.deepcopy(entry)
        with pytest.raises(AttributeError):
            entry.key = 5
    match tu.DictKey("a"):
        case tu.DictKey(k):
            assert k == "a"
    with pytest.raises(TypeError, match="unhashable"):
        hash(tu.DictKey([1]))


def test_key_entries_reject_bad_fields():
    with pytest.raises(TypeError, match="SequenceKey: idx must be an int, got str"):
        tu.SequenceKey("a")
    with pytest.raises(TypeError, match="FlattenedIndexKey: key must be an int, got float"):
        tu.FlattenedIndexKey(1.5)
    with pytest.raises(TypeError, match="GetAttrKey: name must be a str, got int"):
        tu.GetAttrKey(1)


def test_keystr_options():
    """Golden strings from JAX 0.10.2's keystr."""
    params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
    paths = [p for p, _ in tu.tree_leaves_with_path(params)]
    assert [tu.keystr(p) for p in paths] == [
        "['foo']['bar']['bat'][0]", "['foo']['bar']['bat'][1]", "['foo']['bar']['baz']"]
    assert [tu.keystr(p, simple=True, separator="/") for p in paths] == [
        "foo/bar/bat/0", "foo/bar/bat/1", "foo/bar/baz"]
    # entries that are not key entries print with str()
    assert tu.keystr((tu.DictKey("a"), "foo", 3)) == "['a']foo3"
    assert tu.keystr((tu.DictKey("a"), "foo", 3), simple=True, separator=".") == "a.foo.3"
    assert tu.keystr(()) == ""
    assert repr(tu.KeyEntry) == "~KeyEntry" and repr(tu.KeyPath) == "tuple[~KeyEntry, ...]"


class Unkeyed:  # registered without keys: children are FlattenedIndexKey(i)
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_node(Unkeyed, lambda u: ((u.a, u.b), None), lambda _, c: Unkeyed(*c))


class Keyed:  # registered with keys of its own choosing, in a custom order
    def __init__(self, a, b):
        self.a, self.b = a, b


tu.register_pytree_with_keys(
    Keyed, lambda k: (((tu.GetAttrKey("a"), k.a), (tu.DictKey("bee"), k.b)), "aux"),
    lambda aux, c: Keyed(*c))


@tu.register_dataclass
@dataclasses.dataclass
class WithStatic:
    w: object
    n: int = dataclasses.field(default=1, metadata=dict(static=True))
    v: object = 0


def test_paths_of_builtin_nodes_match_jax():
    """Every (keystr, leaf) pair and the treedef below are what JAX 0.10.2 gives."""
    tree = {"b": [1, (2, None, Point(3, 4))], "a": OrderedDict([("z", 5), ("y", 6)]),
            "c": defaultdict(list, {2: 7, 1: 8})}
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert [(tu.keystr(p), x) for p, x in pairs] == [
        ("['a']['z']", 5), ("['a']['y']", 6), ("['b'][0]", 1), ("['b'][1][0]", 2),
        ("['b'][1][2].x", 3), ("['b'][1][2].y", 4), ("['c'][1]", 8), ("['c'][2]", 7)]
    assert pairs[4][0] == (tu.DictKey("b"), tu.SequenceKey(1), tu.SequenceKey(2),
                           tu.GetAttrKey("x"))
    assert treedef == tu.tree_structure(tree)
    assert tu.tree_flatten_with_path(7) == ([((), 7)], tu.tree_structure(7))
    assert tu.tree_flatten_with_path(None) == ([], tu.tree_structure(None))
    assert tu.tree_leaves_with_path({(1, "b"): 1, (0, "z"): [2]}) == [
        ((tu.DictKey((0, "z")), tu.SequenceKey(0)), 2), ((tu.DictKey((1, "b")),), 1)]


def test_paths_of_registered_nodes_match_jax():
    """Golden keystr strings from JAX 0.10.2 for the same registrations."""
    tree = [Unkeyed(1, [2, 3]), WithStatic(1, 2, 3), Keyed(4, (5, {"k": 6})),
            tu.Partial(max, 1.0, key=abs)]
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert [tu.keystr(p) for p, _ in pairs] == [
        "[0][<flat index 0>]", "[0][<flat index 1>][0]", "[0][<flat index 1>][1]",
        "[1].w", "[1].v", "[2].a", "[2]['bee'][0]", "[2]['bee'][1]['k']",
        "[3][<flat index 0>][0]", "[3][<flat index 1>]['key']"]
    assert [x for _, x in pairs] == tu.tree_leaves(tree)
    assert treedef == tu.tree_structure(tree)
    assert repr(treedef) == ("PyTreeDef([CustomNode(Unkeyed[None], [*, [*, *]]), "
                             "CustomNode(WithStatic[(2,)], [*, *]), CustomNode(Keyed[aux], "
                             "[*, (*, {'k': *})]), CustomNode(Partial[<built-in function max>], "
                             "[(*,), {'key': *}])])")
    back = tu.tree_unflatten(treedef, range(10))
    assert (back[2].a, back[2].b) == (5, (6, {"k": 7}))


def _follow(tree, path):
    """The subtree a key path names, found with ordinary indexing and attribute access."""
    for entry in path:
        if isinstance(entry, tu.DictKey):
            tree = tree[entry.key]
        elif isinstance(entry, tu.SequenceKey):
            tree = tree[entry.idx]
        else:
            tree = getattr(tree, entry.name)
    return tree


@given(trees)
def test_every_path_leads_to_its_leaf(tree):
    pairs, treedef = tu.tree_flatten_with_path(tree)
    assert treedef == tu.tree_structure(tree)
    assert [x for _, x in pairs] == tu.tree_leaves(tree)
    assert len({p for p, _ in pairs}) == len(pairs)
    for path, leaf in pairs:
        assert _follow(tree, path) is leaf
    assert tu.tree_leaves_with_path(tree) == pairs
    assert ft.tree.leaves_with_path(tree) == pairs and ft.tree.flatten_with_path(tree) == (
        pairs, treedef)


def test_is_leaf_with_and_without_path():
    """Results as JAX 0.10.2 gives them."""
    assert tu.tree_leaves_with_path(
        [1, [2, 3]], is_leaf=lambda x: isinstance(x, list) and len(x) == 2) == [((), [1, [2, 3]])]
    assert tu.tree_leaves_with_path([1, [2, 3]], is_leaf=lambda p, x: len(p) == 1,
                                    is_leaf_takes_path=True) == [
        ((tu.SequenceKey(0),), 1), ((tu.SequenceKey(1),), [2, 3])]
    assert tu.tree_leaves_with_path([None], is_leaf=lambda x: x is None) == [
        ((tu.SequenceKey(0),), None)]
    seen = []
    ft.tree.map_with_path(lambda p, x: x, {"a": (1,)}, is_leaf_takes_path=True,
                          is_leaf=lambda p, x: seen.append(tu.keystr(p)) or False)
    assert seen == ["", "['a']", "['a'][0]"]


def test_map_with_path():
    out = tu.tree_map_with_path(lambda p, x, y: (tu.keystr(p), x + y),
                                {"a": 1, "b": [2]}, {"a": 10, "b": [20]})
    assert out == {"a": ("['a']", 11), "b": [("['b'][0]", 22)]}  # as JAX 0.10.2 gives
    assert ft.tree.map_with_path(lambda p, x: x + p[0].idx, [1, 2, 3]) == [1, 3, 5]
    # rest trees may be finer than the first: their subtrees are passed whole
    assert tu.tree_map_with_path(lambda p, x, y: y, [0], [(1, 2)]) == [(1, 2)]
    with pytest.raises(ValueError, match="tree_map_with_path: .*expected a list of length 1"):
        tu.tree_map_with_path(lambda p, x, y: x, [0], [0, 1])


def test_register_pytree_with_keys_class():
    @tu.register_pytree_with_keys_class
    class Special:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def tree_flatten_with_keys(self):
            return ((tu.GetAttrKey("x"), self.x), (tu.GetAttrKey("y"), self.y)), None

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children)

    assert tu.tree_leaves_with_path(Special(1, 2)) == [((tu.GetAttrKey("x"),), 1),
                                                       ((tu.GetAttrKey("y"),), 2)]
    assert repr(tu.tree_structure(Special(1, 2))) == "PyTreeDef(CustomNode(Special[None], [*, *]))"
    back = tu.tree_map(lambda v: v * 10, Special(1, [2]))
    assert type(back) is Special and (back.x, back.y) == (10, [20])

    flattened = []

    @tu.register_pytree_with_keys_class
    class Fast(Special):  # a tree_flatten of its own is what plain flattening uses
        def tree_flatten(self):
            flattened.append(self)
            return (self.x, self.y), None

    assert tu.tree_leaves(Fast(1, 2)) == [1, 2] and len(flattened) == 1
    assert [tu.keystr(p) for p, _ in tu.tree_leaves_with_path(Fast(1, 2))] == [".x", ".y"]
    assert len(flattened) == 1

    with pytest.raises(TypeError, match="NoKeys has no tree_flatten_with_keys method"):
        tu.register_pytree_with_keys_class(type("NoKeys", (), {"tree_unflatten": None}))


def test_register_static():
    @tu.register_static
    class Mode:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            return type(other) is Mode and other.name == self.name

        def __hash__(self):
            return hash(self.name)

        def __repr__(self):
            return f"Mode({self.name})"

    leaves, treedef = tu.tree_flatten([Mode("add"), 2.0])
    assert leaves == [2.0] and tu.tree_leaves_with_path([Mode("add"), 2.0]) == [
        ((tu.SequenceKey(1),), 2.0)]
    assert repr(treedef) == "PyTreeDef([CustomNode(Mode[Mode(add)], []), *])"  # as JAX prints
    assert tu.tree_unflatten(treedef, [5.0]) == [Mode("add"), 5.0]
    assert tu.tree_structure(Mode("a")) == tu.tree_structure(Mode("a"))
    assert tu.tree_structure(Mode("a")) != tu.tree_structure(Mode("b"))
    static_def = treedef.children()[0]
    assert (static_def.num_nodes, static_def.num_leaves) == (1, 0)
    assert static_def.node_data() == (Mode, Mode("add")) and tu.treedef_is_leaf(static_def)

    traces = []

    @ft.jit
    def f(x, mode):
        traces.append(mode)
        return x + 1.0 if mode.name == "add" else x - 1.0

    assert float(f(1.0, Mode("add"))) == 2.0 and float(f(1.0, Mode("sub"))) == 0.0
    assert float(f(3.0, Mode("add"))) == 4.0 and traces == [Mode("add"), Mode("sub")]

    @tu.register_static
    class Unhashable:
        __hash__ = None

    # As in JAX, unhashable aux data is compared, not hashed: structures holding it hash, and
    # jit takes them (equal ones, by ==, share a trace).
    calls = []
    g = ft.jit(lambda x, u: calls.append(u) or x + 1.0)
    u = Unhashable()
    assert hash(tu.tree_structure(u)) == hash(tu.tree_structure(Unhashable()))
    assert tu.tree_structure(u) == tu.tree_structure(u) != tu.tree_structure(Unhashable())
    assert float(g(1.0, u)) == 2.0 and float(g(2.0, u)) == 3.0 and calls == [u]
    assert float(g(1.0, Unhashable())) == 2.0 and len(calls) == 2


def test_register_dataclass_paths_and_field_checks():
    assert tu.tree_leaves_with_path(WithStatic(1, 2, 3)) == [
        ((tu.GetAttrKey("w"),), 1), ((tu.GetAttrKey("v"),), 3)]
    assert tu.tree_leaves_with_path(Explicit(7, "e")) == [((tu.GetAttrKey("x"),), 7)]

    def fresh():
        @dataclasses.dataclass
        class Fresh:
            x: int
            y: int = 0
        return Fresh

    # the error types are JAX's
    with pytest.raises(ValueError, match=r"must not overlap; both name \['x'\]"):
        tu.register_dataclass(fresh(), data_fields=["x"], meta_fields=["x", "y"])
    with pytest.raises(TypeError, match="must both be given"):
        tu.register_dataclass(fresh(), data_fields=["x"])
    with pytest.raises(ValueError, match=r"Missing fields: \['y'\].*drop_fields"):
        tu.register_dataclass(fresh(), data_fields=["x"], meta_fields=[])
    with pytest.raises(ValueError, match=r"Unexpected fields: \['z'\]"):
        tu.register_dataclass(fresh(), data_fields=["x", "z"], meta_fields=["y"])

    class Plain:  # not a dataclass: explicit fields, rebuilt by keyword
        def __init__(self, a, b):
            self.a, self.b = a, b

    tu.register_dataclass(Plain, data_fields=["a"], meta_fields=["b"])
    assert repr(tu.tree_structure(Plain(1, 2))) == "PyTreeDef(CustomNode(Plain[(2,)], [*]))"
    assert tu.tree_leaves_with_path(Plain(1, 2)) == [((tu.GetAttrKey("a"),), 1)]


def test_tree_static_field():
    @tu.register_dataclass
    @dataclasses.dataclass
    class Op:
        x: float
        kind: str = ft.tree.static(default="add", metadata={"doc": "operation"})

    f = dataclasses.fields(Op)[1]
    assert f.metadata == {"static": True, "doc": "operation"} and f.default == "add"
    assert tu.tree_flatten(Op(1.0)) == ([1.0], tu.tree_structure(Op(2.0)))
    assert tu.tree_structure(Op(1.0)) != tu.tree_structure(Op(1.0, kind="mul"))


# ---- one-level flattening, node queries, treedef helpers ----------------------------------------
def test_flatten_one_level_like_jax():
    """Results as JAX 0.10.2 gives them (a namedtuple's aux data is its class)."""
    assert tu.flatten_one_level({"b": {"c": 3}, "a": [1, 2]}) == (([1, 2], {"c": 3}), ("a", "b"))
    assert tu.flatten_one_level((1, 2)) == ((1, 2), None)
    assert tu.flatten_one_level(None) == ((), None)
    assert tu.flatten_one_level(OrderedDict(b=1, a=2)) == ([1, 2], ("b", "a"))
    assert tuple(tu.flatten_one_level(Point(1, 2))[0]) == (1, 2)
    assert tu.flatten_one_level(Point(1, 2))[1] is Point
    assert tu.flatten_one_level(Keyed(1, 2)) == ([1, 2], "aux")
    assert tu.flatten_one_level_with_keys({"a": [1, 2], "b": 3}) == (
        ((tu.DictKey("a"), [1, 2]), (tu.DictKey("b"), 3)), ("a", "b"))
    assert tu.flatten_one_level_with_keys(Unkeyed(1, 2)) == (
        [(tu.FlattenedIndexKey(0), 1), (tu.FlattenedIndexKey(1), 2)], None)
    assert list(tu.flatten_one_level_with_keys(Point(1, 2))[0]) == [
        (tu.GetAttrKey("x"), 1), (tu.GetAttrKey("y"), 2)]
    for leaf in (1, "x", np.ones(2), fnp.ones(2)):
        with pytest.raises(ValueError, match="can't tree-flatten type"):
            tu.flatten_one_level(leaf)
        with pytest.raises(ValueError, match="can't tree-flatten type"):
            tu.flatten_one_level_with_keys(leaf)


def test_is_tree_node():
    nodes = [tuple, list, dict, type(None), Point, OrderedDict, defaultdict, tu.Partial, Unkeyed,
             Keyed, WithStatic, Pair]
    assert all(tu.is_tree_node(t) for t in nodes)
    assert not any(tu.is_tree_node(t) for t in (int, np.ndarray, ft.Array, str, {}, (), 1))


def test_treedef_tuple_children_and_leafness():
    x, y = tu.tree_structure([1, 2]), tu.tree_structure({"a": 1})
    assert tu.treedef_tuple([x, y]) == tu.tree_structure(([1, 2], {"a": 1}))
    assert tu.treedef_tuple(iter([])) == tu.tree_structure(())
    with pytest.raises(TypeError, match="element 1 is a int, not a PyTreeDef"):
        tu.treedef_tuple([x, 3])
    assert tu.treedef_children(tu.tree_structure([(1, 2), 3, {"a": 4}])) == [
        tu.tree_structure((1, 2)), tu.tree_structure(3), tu.tree_structure({"a": 4})]
    assert tu.treedef_children(tu.tree_structure(1)) == []
    # JAX: a single node is a leaf structure, so None and () count too
    assert tu.treedef_is_leaf(tu.tree_structure(None)) and tu.treedef_is_leaf(tu.tree_structure(()))
    assert tu.all_leaves([1, "a", fnp.ones(2)]) and not tu.all_leaves([None])
    assert not tu.all_leaves([Point(1, 2)]) and not tu.all_leaves([()])
    assert tu.all_leaves([None], is_leaf=lambda x: x is None)
    assert not tu.all_leaves([[1]], is_leaf=lambda x: isinstance(x, list))  # (not itself)


def test_pytreedef_compose_walk_from_iterable_tree_node_data():
    """Results as JAX 0.10.2's PyTreeDef methods give them."""
    td = tu.tree_structure({"a": (1, 2), "b": [3], "c": None})
    assert (td.num_leaves, td.num_nodes) == (3, 7)
    assert td.node_data() == (dict, ["a", "b", "c"]) and tu.tree_structure(1).node_data() is None
    assert tu.tree_structure(Point(1, 2)).node_data() == (Point, None)
    assert tu.tree_structure(defaultdict(list, a=1)).node_data() == (defaultdict, (list, ("a",)))
    assert td.walk(lambda kids, aux: ("N", kids, aux), lambda x: ("L", x), [10, 20, 30]) == (
        "N", (("N", (("L", 10), ("L", 20)), None), ("N", (("L", 30),), None), ("N", (), None)),
        ["a", "b", "c"])
    assert tu.tree_structure(1).walk(None, lambda x: x * 2, [5]) == 10
    with pytest.raises(ValueError, match="has 1 leaves, got 2"):
        tu.tree_structure(1).walk(None, None, [5, 6])
    s = tu.tree_structure([1, (2, 3)])
    assert s.from_iterable_tree(["a", iter(["b", "c"])]) == ["a", ("b", "c")]
    assert tu.tree_structure({"b": 1, "a": 2}).from_iterable_tree([5, 6]) == {"a": 5, "b": 6}
    with pytest.raises(ValueError, match="arity mismatch: PyTreeDef\\(\\(\\*, \\*\\)\\) has 2"):
        s.from_iterable_tree(["a", ["b"]])
    with pytest.raises(TypeError, match="expected an iterable"):
        s.from_iterable_tree(["a", 5])
    assert repr(tu.tree_structure([1, 2]).compose(tu.tree_structure((1, {"a": 2})))) == \
        "PyTreeDef([(*, {'a': *}), (*, {'a': *})])"
    assert tu.tree_structure(5).compose(s) == s
    with pytest.raises(TypeError, match="expected a PyTreeDef"):
        s.compose([1])


# ---- broadcast, transpose, reductions ------------------------------------------------------------
def test_tree_broadcast_like_jax():
    """Results (and error types) as JAX 0.10.2 gives them."""
    assert tu.tree_broadcast((1, 2, 3), (0, {"a": 0, "b": 0}, (0, 0))) == (
        1, {"a": 2, "b": 2}, (3, 3))
    assert tu.tree_broadcast(1, {"a": None, "b": 2}) == {"a": None, "b": 1}
    # is_leaf applies to the prefix only
    assert ft.tree.broadcast(1, [[0, 0]], is_leaf=lambda x: isinstance(x, list)) == [[1, 1]]
    assert ft.tree.broadcast([1, 2], [[0, 0], 0], is_leaf=lambda x: x == 2) == [[1, 1], 2]
    with pytest.raises(ValueError, match=r"at \[1\]: expected None, got tuple"):
        tu.tree_broadcast((1, None), (0, (0, 0)))
    with pytest.raises(ValueError, match="expected a tuple of length 2, got length 3"):
        tu.tree_broadcast((1, 2), (0, 0, 0))


def test_tree_transpose_like_jax():
    outer = tu.tree_structure([0, 0])
    assert tu.tree_transpose(outer, None, [(1, 2), (3, 4)]) == ([1, 3], [2, 4])
    # only the leaf count is checked (JAX 0.10.2 gives these results and error type)
    assert tu.tree_transpose(outer, tu.tree_structure([0, 0]), [(1, 2), (3, 4)]) == [
        [1, 3], [2, 4]]
    with pytest.raises(TypeError, match="has 4 leaves, but outer .* has 2"):
        tu.tree_transpose(outer, tu.tree_structure([0]), [(1, 2), (3, 4)])
    assert tu.tree_transpose(tu.tree_structure([]), tu.tree_structure((0, 0)), []) == ([], [])
    with pytest.raises(ValueError, match="cannot infer inner_treedef"):
        tu.tree_transpose(tu.tree_structure([]), None, [])


def test_reductions_like_jax():
    assert tu.tree_reduce(lambda a, b: (a, b), [1], None) == (None, 1)  # None is an initializer
    with pytest.raises(TypeError):
        tu.tree_reduce(max, [])
    assert tu.tree_all([[0]], is_leaf=lambda x: isinstance(x, list))
    assert not tu.tree_all([[0]])
    # the balanced grouping JAX 0.10.2 uses
    add = lambda a, b: f"({a}+{b})"  # noqa: E731
    assert tu.tree_reduce_associative(add, [1, (2, 3), [4, 5, 6]]) == "((1+(2+3))+(4+(5+6)))"
    assert tu.tree_reduce_associative(add, list(range(7))) == "((0+(1+2))+((3+4)+(5+6)))"
    assert tu.tree_reduce_associative(add, [7], identity=0) == 7
    assert tu.tree_reduce_associative(add, [], identity=0) == 0
    assert ft.tree.reduce_associative(add, {}, identity=None) is None
    one = lambda x: isinstance(x, list) and len(x) == 1  # noqa: E731
    assert ft.tree.reduce_associative(add, [[1], [2]], is_leaf=one) == "([1]+[2])"
    with pytest.raises(TypeError, match="pass identity="):
        tu.tree_reduce_associative(add, [None])


def test_every_jax_tree_util_name_exists():
    """The public names of jax.tree_util and jax.tree in JAX 0.10.2, less default_registry
    (functrans has one registry)."""
    tree_util_names = [
        "DictKey", "FlattenedIndexKey", "GetAttrKey", "KeyEntry", "KeyPath", "Partial",
        "PyTreeDef", "SequenceKey", "all_leaves", "flatten_one_level",
        "flatten_one_level_with_keys", "is_tree_node", "keystr", "register_dataclass",
        "register_pytree_node", "register_pytree_node_class", "register_pytree_with_keys",
        "register_pytree_with_keys_class", "register_static", "tree_all", "tree_broadcast",
        "tree_flatten", "tree_flatten_with_path", "tree_leaves", "tree_leaves_with_path",
        "tree_map", "tree_map_with_path", "tree_reduce", "tree_reduce_associative",
        "tree_structure", "tree_transpose", "tree_unflatten", "treedef_children",
        "treedef_is_leaf", "treedef_tuple"]
    tree_names = ["all", "broadcast", "flatten", "flatten_with_path", "leaves",
                  "leaves_with_path", "map", "map_with_path", "reduce", "reduce_associative",
                  "static", "structure", "transpose", "unflatten"]
    assert [n for n in tree_util_names if not hasattr(tu, n)] == []
    assert [n for n in tree_names if not hasattr(ft.tree, n)] == []
    assert sorted(ft.tree.__all__) == tree_names
