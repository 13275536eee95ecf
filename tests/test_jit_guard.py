"""jit's guarded call (``transforms/jit/guard.py``) and the fast caller's inline output tree
(``pytree.unflatten_source``): arguments of the kept signature run its runner without the
signature's lookup; arguments that differ anywhere (a leaf's kind, type, shape, dtype or weak
type, a container's type or length, a dict's keys, keyword arguments, a config flag) get
what the general path returns (a new ``jit`` of the function: traced on its first call).
Values are compared exactly: doubling is exact in every dtype here, on both paths."""
import collections

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.core.pytree import tree_flatten, tree_unflatten, unflatten_source
from functrans.transforms.jit import api
from functrans.transforms.jit.guard import GUARD_AFTER_HITS, GUARD_MAX_BUILDS, GUARD_MAX_LEAVES

Pair = collections.namedtuple("Pair", "a b")
_weak = {}


def _weak_array():
    if "x" not in _weak:
        _weak["x"] = ft.jit(lambda v: v * 1.0)(2.0)
    return _weak["x"]


LEAVES = [
    lambda: 1.5, lambda: 3, lambda: True, lambda: 1.0 + 2.0j,
    lambda: np.float32(1.25), lambda: np.int32(7), lambda: np.float64(-2.5),
    lambda: fnp.arange(3, dtype=np.float32), lambda: fnp.arange(4, dtype=np.float32),
    lambda: fnp.arange(3), lambda: fnp.ones((2, 3)), lambda: fnp.asarray(0.75),
    lambda: np.arange(3.0), lambda: np.array(0.5, np.float32), _weak_array,
]

leaves = st.sampled_from(range(len(LEAVES))).map(lambda k: LEAVES[k]())
trees = st.recursive(
    leaves | st.none(),
    lambda kids: st.one_of(
        st.lists(kids, max_size=3).map(tuple), st.lists(kids, max_size=3),
        st.dictionaries(st.sampled_from("abc"), kids, max_size=3),
        st.tuples(kids, kids).map(lambda ab: Pair(*ab))),
    max_leaves=6)
calls = st.tuples(st.lists(trees, max_size=3), st.dictionaries(st.sampled_from("xy"), trees,
                                                                max_size=2))


def _hot(f, *args, **kwargs):
    """Call ``f`` until its signature is guarded (the first call keeps the runner; the
    lookups that follow count)."""
    for _ in range(GUARD_AFTER_HITS + 1):
        out = f(*args, **kwargs)
    return out


def _double(*args, **kwargs):
    return ft.tree_util.tree_map(lambda v: v * 2, (args, kwargs))


def _assert_same(got, want):
    got_leaves, got_tree = tree_flatten(got)
    want_leaves, want_tree = tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        g, w = fnp.asarray(g), fnp.asarray(w)
        assert (g.dtype, g.shape, g.weak_type) == (w.dtype, w.shape, w.weak_type)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


@settings(max_examples=60, deadline=None)
@given(first=calls, second=calls)
def test_calls_after_the_guarded_one_return_what_the_general_path_returns(first, second):
    f = ft.jit(_double)
    _assert_same(_hot(f, *first[0], **first[1]), ft.jit(_double)(*first[0], **first[1]))
    for args, kwargs in (second, first, second):
        _assert_same(f(*args, **kwargs), ft.jit(_double)(*args, **kwargs))


def test_the_kept_signature_runs_without_its_lookup(monkeypatch):
    f = ft.jit(lambda p, x, scale=1.0: [w * x * scale for w in p])
    p, x = (fnp.ones(3), fnp.arange(3.0)), fnp.asarray(2.0)
    first = f(p, x, scale=0.5)
    assert f._guard is None  # (a signature called once or twice gets no guard)
    _hot(f, p, x, scale=0.5)
    assert f._guard is not None
    looked_up = []
    original = api._fast_signature
    monkeypatch.setattr(api, "_fast_signature",
                        lambda *a: looked_up.append(1) or original(*a))
    for _ in range(3):
        _assert_same(f(p, x, scale=0.5), first)
    assert looked_up == []
    _assert_same(f(p, x, scale=2), [w * x * 2 for w in p])  # an int: another signature
    assert looked_up


@pytest.mark.parametrize("change", ["dtype", "shape", "weak type", "container", "length",
                                    "dict keys", "keyword", "None", "x64"])
def test_each_difference_misses_the_guard(change):
    def f(tree, **kw):
        return _double(tree, **kw)

    strong = fnp.asarray(np.float64(1.0))
    assert not strong.weak_type and _weak_array().weak_type
    base = {"w": fnp.ones(3, dtype=np.float32), "b": [strong, None]}
    other, kwargs, x64 = dict(base), {}, ft.config.enable_x64
    if change == "dtype":
        other["w"] = fnp.ones(3, dtype=np.int32)
    elif change == "shape":
        other["w"] = fnp.ones(4, dtype=np.float32)
    elif change == "weak type":
        other["b"] = [_weak_array(), None]
    elif change == "container":
        other["b"] = (strong, None)
    elif change == "length":
        other["b"] = [strong, None, None]
    elif change == "dict keys":
        other["c"] = other.pop("w")
    elif change == "keyword":
        kwargs = {"k": 1.0}
    elif change == "None":
        other["b"] = [strong, 2.0]
    else:
        x64 = not x64
    g = ft.jit(f)
    _hot(g, base)
    assert g._guard is not None
    with ft.config.override(enable_x64=x64):
        _assert_same(g(other, **kwargs), ft.jit(f)(other, **kwargs))
    _assert_same(g(base), ft.jit(f)(base))


def test_placed_arrays_and_large_trees_keep_the_lookup():
    f = ft.jit(lambda xs: sum(xs))
    many = [np.float32(k) for k in range(GUARD_MAX_LEAVES + 1)]
    _hot(f, many)
    assert len(f._fast) == 1 and f._guard is None
    placed = ft.device_put(fnp.ones(3), ft.devices()[0])
    g = ft.jit(lambda x: x * 2)
    _hot(g, placed)
    if placed._sharding is not None:
        assert g._guard is None
    _assert_same(g(placed), placed * 2)


def test_the_cache_cleared_drops_the_guard():
    f = ft.jit(lambda x: x + 1)
    _hot(f, 1.0)
    assert f._guard is not None
    f.clear_cache()
    assert f._guard is None and float(f(2.0)) == 3.0


def test_the_guard_moves_to_another_hot_signature_a_few_times():
    f = ft.jit(lambda x: x * 2)
    xs = [fnp.ones(k) for k in range(1, GUARD_MAX_BUILDS + 3)]
    guards = []
    for x in xs:
        _assert_same(_hot(f, x), x * 2)
        guards.append(f._guard)
    assert len(set(map(id, guards[:GUARD_MAX_BUILDS]))) == GUARD_MAX_BUILDS
    assert guards[GUARD_MAX_BUILDS:] == [guards[GUARD_MAX_BUILDS - 1]] * 2  # no more builds
    for x in xs:  # every signature still runs, guarded or looked up
        _assert_same(f(x), x * 2)


class Opaque:  # a registered node: the output tree needs tree_unflatten
    def __init__(self, v):
        self.v = v


ft.tree_util.register_pytree_node(Opaque, lambda o: ((o.v,), None), lambda _, c: Opaque(c[0]))


@settings(max_examples=100, deadline=None)
@given(tree=trees)
def test_the_inline_output_tree_is_tree_unflatten(tree):
    found, treedef = tree_flatten(tree)
    names = [f"leaf{k}" for k in range(len(found))]
    space = {n: k for n, k in zip(names, range(len(found)))}
    source = unflatten_source(treedef, names, space)
    built = eval(source, space)  # noqa: S307 - the source under test
    want = tree_unflatten(treedef, list(range(len(found))))
    assert tree_flatten(built)[1] == tree_flatten(want)[1]
    assert tree_flatten(built)[0] == list(range(len(found)))
    assert unflatten_source(tree_flatten([Opaque(1.0), tree])[1], names + ["z"], {}) is None


def test_a_program_returning_a_registered_node_keeps_tree_unflatten():
    f = ft.jit(lambda x: (Opaque(x * 2), {"y": x + 1}))
    for _ in range(3):
        out = f(fnp.arange(3.0))
        assert type(out[0]) is Opaque
        np.testing.assert_array_equal(out[0].v, [0.0, 2.0, 4.0])
        np.testing.assert_array_equal(out[1]["y"], [1.0, 2.0, 3.0])
