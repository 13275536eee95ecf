"""Pytrees on optree's C++ traversal (``functrans.core.pytree_fast``) against the pure-Python
path: the same leaves (the same objects), structures that are equal across the two paths
with the same hash and repr, the same unflattened trees (dict key order included), on
generated trees of every node kind. The suite runs the pytree tests with optree in use (the
dev install has it); this module runs them again on the pure-Python path."""
import collections
import copy
import dataclasses
import os
import pickle
import subprocess
import sys
import time
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrans as ft
from functrans import tree_util as tu
from functrans.core import pytree

optree = pytest.importorskip("optree")

# The pytree tests, again on the pure-Python path (the autouse fixture below switches it).
from test_tree import *  # noqa: E402,F401,F403
from test_tree_util import *  # noqa: E402,F401,F403


@pytest.fixture(autouse=True)
def _python_path(request):
    """Tests imported from the pytree test files run on the pure-Python path; this module's
    own tests start on optree's (whatever FUNCTRANS_OPTREE says) and switch themselves."""
    previous = pytree._fast
    pytree.use_optree(request.function.__module__ == __name__)
    yield
    pytree._fast = previous


def _both(f):
    """``(f() on the Python path, f() on optree's)``; each an exception's type and message
    if it raised."""
    out = []
    for fast in (False, True):
        assert pytree.use_optree(fast) == fast
        try:
            out.append(f())
        except Exception as e:  # noqa: BLE001 - compared across the two paths
            out.append((type(e), str(e)))
    pytree.use_optree(True)
    return out


# ---- node kinds ----------------------------------------------------------------------------
class Point(NamedTuple):
    x: object
    y: object


class Box:
    """A node registered with flatten/unflatten functions; its aux data is a tag."""

    def __init__(self, items, tag):
        self.items, self.tag = tuple(items), tag

    def __repr__(self):
        return f"Box({list(self.items)!r}, {self.tag!r})"


tu.register_pytree_node(Box, lambda b: (b.items, b.tag), lambda tag, c: Box(c, tag))


class Named:
    """A node registered with keys."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def __repr__(self):
        return f"Named({self.a!r}, {self.b!r})"


tu.register_pytree_with_keys(
    Named, lambda n: (((tu.GetAttrKey("a"), n.a), (tu.GetAttrKey("b"), n.b)), None),
    lambda _, c: Named(*c))


@tu.register_dataclass
@dataclasses.dataclass
class Params:
    w: object
    b: object
    n: int = dataclasses.field(default=1, metadata=dict(static=True))


@tu.register_static
class Mode(str):
    pass


class Opaque:
    """A leaf compared by identity."""

    def __repr__(self):
        return "Opaque"


LEAVES = st.one_of(st.integers(-5, 5), st.floats(allow_nan=False, width=32),
                   st.sampled_from(["s", b"b"]), st.builds(Opaque),
                   st.just(collections.deque([1, 2])),  # a leaf to JAX, a node to optree
                   st.just(time.gmtime(0)))  # a structseq: likewise
KEYS = st.sampled_from(["a", "b", "c", "kernel", "bias", "z"])


def _trees(children):
    dict_items = st.lists(st.tuples(KEYS, children), max_size=4, unique_by=lambda kv: kv[0])
    return st.one_of(
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        dict_items.map(dict),  # in generated (unsorted) insertion order
        dict_items.map(collections.OrderedDict),
        dict_items.map(lambda kv: collections.defaultdict(list, kv)),
        st.lists(st.tuples(st.integers(0, 3), children), max_size=3,
                 unique_by=lambda kv: kv[0]).map(dict),  # int keys
        st.builds(Point, children, children),
        st.builds(Box, st.lists(children, max_size=3), st.sampled_from(["t", ("u", 1), None])),
        st.builds(Named, children, children),
        st.builds(Params, children, children, st.integers(0, 2)),
        st.builds(Mode, st.sampled_from(["train", "eval"])),
    )


TREES = st.recursive(st.one_of(LEAVES, st.none()), _trees, max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(TREES)
def test_generated_trees_agree(tree):
    py, fast = _both(lambda: tu.tree_flatten(tree))
    assert type(py) is type(fast)
    if type(py) is not tuple or isinstance(py[0], type):  # both raised the same error
        assert py == fast
        return
    (lp, tp), (lf, tf) = py, fast
    assert len(lp) == len(lf) and all(a is b for a, b in zip(lp, lf))
    assert tp == tf and tf == tp and not (tp != tf)
    assert hash(tp) == hash(tf)
    assert repr(tp) == repr(tf)
    assert (tp.num_leaves, tp.num_nodes) == (tf.num_leaves, tf.num_nodes)
    assert tp.children() == tf.children()
    assert tp.node_data() == tf.node_data()
    # Unflattening (each with its own structure and with the other's) gives the same tree.
    back_py, back_fast = _both(lambda: (repr(tu.tree_unflatten(tp, lp)),
                                        repr(tu.tree_unflatten(tf, lf))))
    assert back_py[0] == back_py[1] == back_fast[0] == back_fast[1]
    mapped = _both(lambda: repr(tu.tree_map(lambda x: [x], tree)))
    assert mapped[0] == mapped[1]
    pairs = _both(lambda: repr(tu.tree_map(lambda x, y: (x, y), tree, tree)))
    assert pairs[0] == pairs[1]
    assert _both(lambda: tu.tree_leaves_with_path(tree)) == [tu.tree_leaves_with_path(tree)] * 2


def _cut(tree, draw):
    """A prefix of ``tree``: some subtrees replaced by a leaf."""
    if draw(st.booleans()):
        return 0
    leaves, td = pytree.tree_flatten(tree, lambda x: x is not tree)
    if td.num_nodes == 1:  # a leaf or an empty node
        return tree
    return pytree.tree_unflatten(td, [_cut(c, draw) for c in leaves])


@settings(max_examples=150, deadline=None)
@given(TREES, st.data())
def test_flatten_up_to_prefixes_agree(tree, data):
    """tree_map over a tree and a prefix of it (the prefix's leaves stand for whole
    subtrees): the same elements, the same objects, on both paths."""
    prefix = _cut(tree, data.draw)
    py, fast = _both(lambda: tu.tree_structure(prefix).flatten_up_to(tree))
    if isinstance(py, tuple):  # both raised the same error (a prefix with deque leaves...)
        assert py == fast
        return
    assert len(py) == len(fast) and all(a is b for a, b in zip(py, fast))
    mapped = _both(lambda: repr(tu.tree_map(lambda p, x: (p, x), prefix, tree)))
    assert mapped[0] == mapped[1]


@pytest.mark.parametrize("other", [collections.OrderedDict(a=1, b=(2,)),
                                   collections.defaultdict(list, a=1, b=(2,)),
                                   {"a": 1}, {"a": 1, "b": (2,), "c": 3}, ((1,), [2])])
def test_flatten_up_to_mismatches_raise_on_both_paths(other):
    py, fast = _both(lambda: tu.tree_structure({"a": 0, "b": 0}).flatten_up_to(other))
    assert py == fast and py[0] is ValueError
    py, fast = _both(lambda: tu.tree_structure(((0,), (0,))).flatten_up_to(other))
    assert py == fast and py[0] is ValueError


@settings(max_examples=60, deadline=None)
@given(TREES, st.sampled_from(["tuple", "point", "box", "none"]))
def test_generated_trees_with_is_leaf_agree(tree, kind):
    is_leaf = {"tuple": lambda x: type(x) is tuple, "point": lambda x: isinstance(x, Point),
               "box": lambda x: isinstance(x, Box), "none": lambda x: x is None}[kind]
    py, fast = _both(lambda: tu.tree_flatten(tree, is_leaf))
    if isinstance(py[0], type):
        assert py == fast
        return
    assert all(a is b for a, b in zip(py[0], fast[0])) and len(py[0]) == len(fast[0])
    assert py[1] == fast[1] and hash(py[1]) == hash(fast[1]) and repr(py[1]) == repr(fast[1])


def test_fast_path_is_in_use_for_plain_trees():
    leaves, td = pytree.tree_flatten({"b": [1, None], "a": (2, Point(3, 4))})
    assert type(td).__name__ == "SpecTreeDef" and leaves == [2, 3, 4, 1]
    assert isinstance(td, tu.PyTreeDef)


def test_dicts_unflatten_in_key_order():
    tree = {"kernel": 1, "bias": {"z": 2, "a": 3}}
    _, td = pytree.tree_flatten(tree)
    assert list(td.unflatten([10, 20, 30])) == ["bias", "kernel"]
    assert list(tu.tree_map(lambda x: x, tree)["bias"]) == ["a", "z"]
    # With a custom node in the tree, each structure keeps its own spec.
    out = tu.tree_map(lambda x: x, Box([{"z": 1, "a": 2}], "t"))
    assert list(out.items[0]) == ["a", "z"]


@pytest.mark.parametrize("tree,error", [
    ({1: "x", "a": "y"}, "pytree dict keys must be sortable"),
    ({"k": {None: 1, 2: 2}}, "pytree dict keys must be sortable"),
])
def test_unsortable_keys_raise_as_on_the_python_path(tree, error):
    with pytest.raises(TypeError, match=error):
        tu.tree_flatten(tree)


def test_deques_and_structseqs_are_leaves():
    d, s = collections.deque([1, 2]), time.gmtime(0)
    leaves, td = tu.tree_flatten([d, s, (d,)])
    assert leaves == [d, s, d] and repr(td) == "PyTreeDef([*, *, (*,)])"


def test_node_registered_after_first_flatten():
    class Late:
        def __init__(self, v):
            self.v = v

    x = Late(1.0)
    assert tu.tree_leaves([x]) == [x]  # a leaf while unregistered
    tu.register_pytree_node(Late, lambda o: ((o.v,), None), lambda _, c: Late(*c))
    leaves, td = tu.tree_flatten([x])
    assert leaves == [1.0] and type(td).__name__ == "SpecTreeDef"
    assert repr(td) == "PyTreeDef([CustomNode(Late[None], [*])])"
    assert td.unflatten([2.0])[0].v == 2.0


def test_registry_entries_added_directly_are_mirrored():
    class Direct:
        def __init__(self, v):
            self.v = v

    tu.tree_leaves(0)  # the fast path is loaded
    pytree._registry[Direct] = pytree._NodeType(lambda o: ((o.v,), "aux"),
                                                lambda aux, c: Direct(*c))
    assert tu.tree_leaves([Direct(3)]) == [3]


def test_key_arrays_are_public_leaves_and_core_nodes():
    k = ft.random.key(0)
    leaves, td = tu.tree_flatten({"k": k, "x": 1.0})
    assert leaves[0] is k and leaves[1] == 1.0 and repr(td) == "PyTreeDef({'k': *, 'x': *})"
    core_leaves, core_td = pytree.tree_flatten({"k": k})
    assert core_leaves[0].dtype == np.uint32 and core_td.num_nodes == 3
    # With a user is_leaf too.
    assert tu.tree_leaves([k, (1, 2)], is_leaf=lambda x: type(x) is tuple) == [k, (1, 2)]


def test_treedefs_mix_across_paths_as_dict_keys():
    trees = [{"a": 1, "b": (2, None)}, [Point(1, 2)], Box([1, {"z": 2}], "t"), Params(1, 2, 3)]
    py = [tu.tree_structure(t) for t in trees]
    fast = {}
    for t in trees:
        fast[tu.tree_structure(t)] = t
    pytree.use_optree(False)
    try:
        assert [fast[td] for td in py] == trees
    finally:
        pytree.use_optree(True)


def test_spec_treedef_pickles_copies_and_composes():
    _, td = tu.tree_flatten({"a": [1, Point(2, None)], "b": Box([3], ("t", 1))})
    assert type(td).__name__ == "SpecTreeDef"
    for other in (pickle.loads(pickle.dumps(td)), copy.deepcopy(td), copy.copy(td)):
        assert other == td and hash(other) == hash(td) and repr(other) == repr(td)
    inner = tu.tree_structure((0, 0))
    assert td.compose(inner).num_leaves == 2 * td.num_leaves
    assert tu.treedef_tuple([td, inner]).children() == [td, inner]
    assert td.flatten_up_to({"a": [[9], Point(8, None)], "b": Box([7], ("t", 1))}) == [[9], 8, 7]


def test_flatten_up_to_errors_name_the_mismatch_on_the_fast_path():
    td = tu.tree_structure({"a": 1, "b": (2, 3)})
    with pytest.raises(ValueError, match=r"tree_map: tree structure mismatch at \['b'\]"):
        tu.tree_map(lambda x, y: x, {"a": 1, "b": (2, 3)}, {"a": 1, "b": [2, 3]})
    assert td.flatten_up_to({"a": [1], "b": ([2], 3)}) == [[1], [2], 3]


def test_unflatten_with_wrong_leaf_count_raises():
    _, td = tu.tree_flatten((1, [2]))
    with pytest.raises(ValueError, match=r"tree_unflatten: PyTreeDef\(\(\*, \[\*\]\)\) has 2 "
                                         r"leaves, got 3"):
        tu.tree_unflatten(td, [1, 2, 3])


def test_jit_cache_is_shared_by_both_paths():
    traces = []

    @ft.jit
    def f(p):
        traces.append(1)
        return p["w"] * 2 + p["b"]

    p = {"w": np.ones(2, np.float32), "b": np.ones(2, np.float32)}
    try:
        for fast in (True, False, True):
            pytree.use_optree(fast)
            np.testing.assert_allclose(f(p), 3.0)
    finally:
        pytree.use_optree(True)
    assert len(traces) == 1


def _in_fresh_process(code, env=None) -> str:
    """What ``code`` prints, run by a new interpreter (the registry and the loaded paths are
    per process)."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_import_does_not_load_optree_and_env_switch_turns_it_off():
    """Neither the import nor a first program loads optree; a process that keeps flattening
    (LOAD_AFTER trees) does, unless FUNCTRANS_OPTREE=0."""
    code = ("import sys, functrans as ft, functrans.tree_util as tu; "
            "from functrans.core import pytree; "
            "assert 'optree' not in sys.modules, 'imported with functrans'; "
            "ft.jit(lambda t: t['a'] + 1)({'a': 1.0}); "
            "print('optree' in sys.modules); "
            "[tu.tree_flatten({'a': 1}) for _ in range(pytree.LOAD_AFTER)]; "
            "print('optree' in sys.modules, type(tu.tree_structure({'a': 1})).__name__)")
    env = dict(os.environ)
    env.pop("FUNCTRANS_OPTREE", None)
    assert _in_fresh_process(code, env).split() == ["False", "True", "SpecTreeDef"]
    env["FUNCTRANS_OPTREE"] = "0"
    assert _in_fresh_process(code, env).split() == ["False", "False", "PyTreeDef"]


def test_without_optree_installed_the_python_path_runs():
    code = ("import sys; sys.modules['optree'] = None; "
            "import functrans.tree_util as tu; from functrans.core import pytree; "
            "[tu.tree_flatten({'b': 1, 'a': (2, None)}) for _ in range(pytree.LOAD_AFTER)]; "
            "l, td = tu.tree_flatten({'b': 1, 'a': (2, None)}); "
            "print(l, td, type(td).__name__, pytree._fast, pytree.use_optree(True))")
    assert _in_fresh_process(code).strip() == \
        "[2, 1] PyTreeDef({'a': (*, None), 'b': *}) PyTreeDef None False"


def test_registering_a_type_optree_has_built_in_keeps_functrans_semantics():
    # A subclass of deque is not optree's built-in: registering it is mirrored.
    class Ring(collections.deque):
        pass

    tu.register_pytree_node(Ring, lambda r: (tuple(r), r.maxlen),
                            lambda n, c: Ring(c, maxlen=n))
    leaves, td = tu.tree_flatten([Ring([1, 2], maxlen=3), collections.deque([3])])
    assert leaves[:2] == [1, 2] and isinstance(leaves[2], collections.deque)
    assert repr(td) == "PyTreeDef([CustomNode(Ring[3], [*, *]), *])"
    assert td.unflatten([4, 5, 6])[0] == Ring([4, 5])


def test_registering_deque_itself_goes_the_python_way():
    # optree refuses to register its built-in types; functrans's registration still holds
    # (in a fresh process: the registry is global).
    code = ("import collections, functrans.tree_util as tu; tu.tree_leaves(0); "
            "tu.register_pytree_node(collections.deque, lambda d: (tuple(d), None), "
            "lambda _, c: collections.deque(c)); "
            "l, td = tu.tree_flatten([collections.deque([1, 2])]); print(l, td)")
    assert _in_fresh_process(code).strip() == \
        "[1, 2] PyTreeDef([CustomNode(deque[None], [*, *])])"


def test_turning_the_fast_path_off_and_on_keeps_structures_equal():
    tree = {"b": Box([1, Params(2, 3)], "t")}
    _, before = tu.tree_flatten(tree)
    pytree.use_optree(False)
    pytree.use_optree(True)
    _, after = tu.tree_flatten(tree)
    assert type(before) is type(after) and before == after and hash(before) == hash(after)


def test_structures_whose_dict_keys_hash_alike_are_told_apart():
    # The verdicts are looked up by the spec's hash; dict keys' hashes collide (-1 and -2,
    # a str and the int of its hash), so such structures are compared with the one judged.
    assert tu.tree_leaves({"z": 1, "x": 2}) == [2, 1]
    with pytest.raises(TypeError, match="pytree dict keys must be sortable"):
        tu.tree_flatten({hash("z"): 1, "x": 2})
    for k in (-1, -2, -1):
        assert list(tu.tree_map(lambda v: v, {k: 1, -5: 2})) == sorted([k, -5])
        assert tu.tree_structure({k: 0}).node_data() == (dict, [k])


def test_jit_cache_entries_move_to_optrees_form():
    # A signature first traced on the pure-Python path (optree loads after a few hundred
    # flattens) is found again with optree's PyTreeDef and kept under it from then on, by
    # the fast path's runners and by the general cache: lookups compare two optree forms
    # (one C++ call), not the two forms node by node.
    import functrans as ft
    from functrans.core import background
    f = ft.jit(lambda t: t["w"] * 2.0 + t["b"][0])
    tree = {"w": np.arange(3.0), "b": (np.float64(1.0), Box([1], "t"))}
    pytree.use_optree(False)
    try:
        first = np.asarray(f(tree))
        background.wait_all()  # (compiled: the next call keeps a fast-path runner)
        np.testing.assert_array_equal(np.asarray(f(tree)), first)
    finally:
        pytree.use_optree(True)
    [(key, entry)] = f._cache.items()
    [fast_key] = f._fast_trees
    assert type(key[0]) is pytree.PyTreeDef and type(fast_key[0]) is pytree.PyTreeDef
    np.testing.assert_array_equal(np.asarray(f(tree)), first)  # the runner, no new trace
    [(fast_key, (_, tree_type))] = f._fast_trees.items()
    assert type(fast_key[0]) is not pytree.PyTreeDef and tree_type is type(fast_key[0])
    f._fast_trees.clear()  # the general path: the same entry, no new trace
    np.testing.assert_array_equal(np.asarray(f(tree)), first)
    [(key2, entry2)] = f._cache.items()
    assert entry2 is entry and type(key2[0]) is not pytree.PyTreeDef
    np.testing.assert_array_equal(np.asarray(f(tree)), first)
    assert len(f._cache) == 1
