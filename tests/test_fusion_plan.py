"""The fusion planner (``transforms/lowering/plan.py``): one open loop per shape, so an update
written step by step over every leaf of a parameter tree becomes one pass per leaf shape.

Oracles: the un-jitted function (values), and the planned steps themselves (counts, which are
deterministic, unlike time).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.core.ir import Literal
from functrans.transforms.lowering.plan import Group, Op, plan
from functrans.transforms.passes import optimize

EPS32, EPS64 = np.finfo(np.float32).eps, np.finfo(np.float64).eps


def _steps(f, *args):
    return plan(optimize(ft.jit(f).lower(*args).jaxpr))[0]


def _groups(steps, shape=None):
    return [s for s in steps if isinstance(s, Group) and (shape is None or s.shape == shape)]


def clip_adamw(grads, mu, nu, params, count):
    """Global-norm clipping and AdamW as optax writes them: each step is a ``tree_map`` over
    every leaf (all gradients scaled, then all first moments, then all second moments, ...)."""
    norm = fnp.sqrt(sum(fnp.sum(g * g) for g in ft.tree_util.tree_leaves(grads)))
    return adamw(grads, mu, nu, params, count, fnp.where(norm < 1.0, 1.0, 1.0 / norm))


def adamw(grads, mu, nu, params, count, scale, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=1e-4):
    tm = ft.tree_util.tree_map
    grads = tm(lambda g: (g * scale).astype(g.dtype), grads)
    mu = tm(lambda m, g: b1 * m + (1 - b1) * g, mu, grads)
    nu = tm(lambda v, g: b2 * v + (1 - b2) * g * g, nu, grads)
    count = count + 1
    c1 = 1 - b1 ** count.astype(np.float32)
    c2 = 1 - b2 ** count.astype(np.float32)
    mu_hat = tm(lambda m: (m / c1).astype(m.dtype), mu)
    nu_hat = tm(lambda v: (v / c2).astype(v.dtype), nu)
    updates = tm(lambda m, v: m / (fnp.sqrt(v) + eps), mu_hat, nu_hat)
    updates = tm(lambda u, p: u + wd * p, updates, params)
    params = tm(lambda p, u: p - lr * u, params, updates)
    return params, mu, nu, count


def _tree(shapes, dtypes, seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(d) for s, d in zip(shapes, dtypes)]


def _state(shapes, dtypes, seed=0):
    g, p = _tree(shapes, dtypes, seed), _tree(shapes, dtypes, seed + 1)
    mu = [0.1 * x for x in _tree(shapes, dtypes, seed + 2)]
    nu = [np.abs(x) for x in _tree(shapes, dtypes, seed + 3)]
    return g, mu, nu, p, np.int32(3)


def _rtol(dtypes):
    # The eager norm sums with NumPy's pairwise order, jit's loops in blocks: the clipping
    # scale differs by a few ulp, and ~10 roundings follow per element (m / (sqrt(v) + eps)
    # amplifies them by at most 2): 256 ulp of the narrowest dtype.
    return 256 * max(np.finfo(d).eps for d in dtypes)


def _assert_tree_close(got, want, rtol):
    for a, b in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=rtol)


SHAPES = [(37, 19), (19,), (19, 23), (23,), (23, 19), (19,)]  # two biases of one shape


def test_an_optimizer_step_over_a_tree_is_two_passes_per_leaf_shape():
    """Six leaves of five shapes: one loop per shape sums the squares (the global norm), one
    scalar loop computes the scale and bias corrections, one loop per shape updates
    gradients, moments and parameters: 11 loops (a planner closing its loop at every change
    of shape made 43). The leaves of the same shape (two biases) share their loops."""
    args = _state(SHAPES, [np.float32] * 6)
    steps, materialized = plan(optimize(ft.jit(clip_adamw).lower(*args).jaxpr))
    assert all(isinstance(s, Group) for s in steps), steps
    shapes = {tuple(s) for s in SHAPES}
    for shape in shapes:
        loops = _groups(steps, shape)
        assert len(loops) == 2, (shape, [g.shape for g in _groups(steps)])
        assert len(loops[0].reductions) == sum(tuple(s) == shape for s in SHAPES)
        assert not loops[1].reductions
    assert len(steps) == 2 * len(shapes) + 1, [g.shape for g in steps]
    # the update pass stores exactly the new parameters and moments: 3 arrays per leaf
    for shape in shapes:
        stored = [e for e in _groups(steps, shape)[1].eqns if e.outputs[0] in materialized]
        assert len(stored) == 3 * sum(tuple(s) == shape for s in SHAPES), shape
    _assert_tree_close(ft.jit(clip_adamw)(*args), clip_adamw(*args), _rtol([np.float32]))


def test_fused_leaves_give_the_same_bits_as_one_leaf_at_a_time():
    """Fusing the leaves changes no order of operations: each leaf's sum of squares (over
    more than one block of 4,096 elements) and its update are, bit for bit, those of the same
    program jitted on that leaf alone."""
    shapes = [(100, 50), (50,), (50, 7), (7,)]
    g, mu, nu, p, count = _state(shapes, [np.float32] * 4, seed=5)
    sums = ft.jit(lambda gs: [fnp.sum(x * x) for x in gs])(g)
    scale = np.float32(0.25)
    got = ft.jit(adamw)(g, mu, nu, p, count, scale)
    one_sum = ft.jit(lambda x: fnp.sum(x * x))
    one = ft.jit(lambda *leaf: adamw(*([x] for x in leaf[:4]), *leaf[4:]))
    for k in range(len(shapes)):
        np.testing.assert_array_equal(np.asarray(sums[k]), np.asarray(one_sum(g[k])))
        alone = one(g[k], mu[k], nu[k], p[k], count, scale)
        for part in range(3):
            np.testing.assert_array_equal(np.asarray(alone[part][0]), np.asarray(got[part][k]))


_shape = st.lists(st.integers(1, 6), min_size=0, max_size=3).map(tuple)


@settings(max_examples=12, deadline=None)
@given(shapes=st.lists(_shape, min_size=1, max_size=6),
       wide=st.lists(st.booleans(), min_size=6, max_size=6), seed=st.integers(0, 2**16))
def test_optimizer_updates_over_trees_of_many_shapes_and_dtypes(shapes, wide, seed):
    """jit of the tree update against the un-jitted function, for trees of any shapes
    (scalars, repeated shapes) and mixed float32/float64 leaves."""
    dtypes = [np.float64 if w else np.float32 for w in wide[:len(shapes)]]
    args = _state(shapes, dtypes, seed)
    got = ft.jit(clip_adamw)(*args)
    _assert_tree_close(got, clip_adamw(*args), _rtol(dtypes))


def test_a_loop_reading_a_sum_of_its_own_shape_is_split():
    """x's loop cannot read a sum it computes itself, nor a value computed from it in another
    loop: the planner closes the loop and starts another of the same shape."""
    def f(a, b):
        a1 = fnp.sin(a)
        s = fnp.sum(a1)           # finished with a's first loop
        b1 = b * s                # b's loop reads a's loop
        t = fnp.sum(b1)
        a2 = a1 * t + s           # reads b's loop, which reads a's first loop: a second loop
        return a2, b1
    a, b = np.linspace(0, 1, 30), np.linspace(-1, 1, 7).reshape(7, 1)
    steps = _steps(f, a, b)
    assert [s.shape for s in steps] == [(30,), (7, 1), (30,)], [s.shape for s in steps]
    got, want = ft.jit(f)(a, b), f(a, b)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=64 * EPS64)  # two sums of 30 and 7 terms


def test_an_index_map_of_a_value_of_its_own_loop_reads_it_from_memory():
    """A transpose of a value the open loop computes needs that value's buffer: the loop is
    emitted first and the transpose starts a loop of its own."""
    def f(x):
        y = fnp.sin(x) * 2.0
        return y.T + y
    x = np.linspace(0, 1, 16).reshape(4, 4)
    steps = _steps(f, x)
    assert len(_groups(steps, (4, 4))) == 2
    np.testing.assert_allclose(ft.jit(f)(x), f(x), rtol=32 * EPS64)


def test_a_loop_stays_open_across_a_product_it_does_not_feed():
    """Elementwise work before and after a matrix product that it does not feed is one loop,
    emitted after the product."""
    def f(x, w):
        a = fnp.tanh(x)
        b = x @ w
        return a * b + a
    x, w = np.linspace(-1, 1, 36).reshape(6, 6), np.linspace(0, 2, 36).reshape(6, 6)
    steps = _steps(f, x, w)
    assert [type(s).__name__ for s in steps] == ["Op", "Group"], steps
    assert steps[0].eqn.prim.name == "dot_general"
    np.testing.assert_allclose(ft.jit(f)(x, w), f(x, w), rtol=32 * EPS64)


def test_a_product_reading_an_open_loop_closes_it_and_the_loops_it_reads():
    """A product that reads a loop's value gets it: that loop, and the loops it reads from,
    are emitted before the product."""
    def f(x, v):
        s = fnp.sum(fnp.exp(v))   # v's loop
        a = fnp.tanh(x) * s       # x's loop reads it
        return a @ x, fnp.cos(v)
    x, v = np.linspace(-1, 1, 25).reshape(5, 5), np.linspace(0, 1, 3)
    steps = _steps(f, x, v)
    kinds = [s.shape if isinstance(s, Group) else s.eqn.prim.name for s in steps]
    assert kinds.index((3,)) < kinds.index((5, 5)) < kinds.index("dot_general"), kinds
    got, want = ft.jit(f)(x, v), f(x, v)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=64 * EPS64)


def test_loops_of_every_step_are_planned_in_an_order_that_computes_their_inputs_first():
    """Whatever the interleaving, every planned step reads only values computed by steps
    before it (or program inputs)."""
    def f(a, b, c):
        x = fnp.sin(a)
        y = fnp.exp(b) * fnp.sum(x)
        z = c * fnp.sum(y)
        x2 = x + fnp.max(z)
        y2 = y * fnp.sum(x2)
        return x2, y2, z @ z
    a, b, c = np.linspace(0, 1, 4), np.linspace(0, 1, 5), np.linspace(0, 1, 9).reshape(3, 3)
    jaxpr = optimize(ft.jit(f).lower(a, b, c).jaxpr)
    steps, _ = plan(jaxpr)
    ready = set(jaxpr.invars) | set(jaxpr.constvars)
    for s in steps:
        eqns = s.eqns + s.reductions if isinstance(s, Group) else [s.eqn]
        inner = {o for e in eqns for o in e.outputs}
        for e in eqns:
            for x in e.inputs:
                assert not hasattr(x, "aval") or type(x).__name__ == "Literal" or \
                    x in ready or x in inner, (e, s)
        ready |= inner
    got, want = ft.jit(f)(a, b, c), f(a, b, c)
    for x, y in zip(got, want):
        np.testing.assert_allclose(x, y, rtol=64 * EPS64)


@pytest.mark.parametrize("codegen", ["native", "numba"])
def test_both_code_generators_run_the_fused_tree_update(codegen):
    args = _state([(6, 4), (4,), (4, 3), (3,)], [np.float32, np.float32, np.float64,
                                                   np.float64])
    with ft.config.override(jit_codegen=codegen):
        got = ft.jit(clip_adamw)(*args)
    _assert_tree_close(got, clip_adamw(*args), _rtol([np.float32]))


def test_a_value_of_an_open_loop_read_by_an_op_is_computed_before_it():
    """Steps that are not loops (here a cumulative sum) read the open loops' values only
    after those loops are emitted."""
    def f(x):
        y = fnp.sin(x) + 1.0
        return fnp.cumsum(y) * y
    x = np.linspace(0, 3, 11)
    steps = _steps(f, x)
    assert isinstance(steps[0], Group) and isinstance(steps[1], Op), steps
    np.testing.assert_allclose(ft.jit(f)(x), f(x), rtol=64 * EPS64)


def test_a_constant_fill_read_by_loops_of_two_layers_is_not_stored():
    """A ReLU's zeros and its gradient's are one value to CSE; merged, the first loop would
    store 256 KB of zeros at a 128x512 layer for the others to read back. Each loop computes
    its own fill instead: no broadcast of a literal is materialized."""
    def loss(w1, w2, x):
        return fnp.sum(ft.nn.relu(ft.nn.relu(x @ w1) @ w2) ** 2)
    rng = np.random.default_rng(0)
    w1, w2, x = (rng.standard_normal(s).astype(np.float32) for s in ((8, 16), (16, 16), (4, 8)))
    grad = ft.grad(loss, argnums=(0, 1))
    jaxpr = optimize(ft.jit(grad).lower(w1, w2, x).jaxpr)
    producer = {o: e for e in jaxpr.eqns for o in e.outputs}
    fills = [e for e in jaxpr.eqns
             if e.prim.name == "broadcast_in_dim" and isinstance(e.inputs[0], Literal)]
    assert len(fills) >= 2  # the program has several fills to merge
    _, materialized = plan(jaxpr)
    stored = [v for v in materialized if v in producer and producer[v] in fills]
    assert stored == [], stored
    for got, want in zip(ft.jit(grad)(w1, w2, x), grad(w1, w2, x)):
        # two layers of 16-term float32 products, summed over 4 rows: 64 ulp of the values
        np.testing.assert_allclose(got, want, rtol=64 * EPS32, atol=64 * EPS32 * np.abs(want).max())
