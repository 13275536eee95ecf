"""lax.reduce with a user's reducer: values against a NumPy left fold (XLA's CPU order, and the
values JAX 0.10.2 prints), several operands, the monoid shortcut, derivatives against
central finite differences, vmap against a Python loop, jit, and the errors. float64: the
fold is the same sequence of operations as the oracle's, so values agree to 1e-12; finite
differences (h=1e-6, tests/finite_diff.py) to 1e-6."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.laws import check_transforms
from finite_diff import fd_grad

rng = np.random.default_rng(0)


def np_fold(xs, inits, f, dims):
    """The oracle: for each kept index, acc = f(acc, x) over the reduced elements in
    row-major order, starting from inits (NumPy scalars throughout)."""
    xs = [np.asarray(x) for x in xs]
    kept = [d for d in range(xs[0].ndim) if d not in dims]
    out_shape = tuple(xs[0].shape[d] for d in kept)
    outs = [np.empty(out_shape, x.dtype) for x in xs]
    for k in np.ndindex(out_shape):
        acc = tuple(np.asarray(i, x.dtype)[()] for i, x in zip(inits, xs))
        for r in np.ndindex(tuple(xs[0].shape[d] for d in sorted(dims))):
            idx = [0] * xs[0].ndim
            for d, v in zip(kept, k):
                idx[d] = v
            for d, v in zip(sorted(dims), r):
                idx[d] = v
            acc = f(acc, tuple(x[tuple(idx)] for x in xs))
        for o, a in zip(outs, acc):
            o[k] = a
    return outs


def digits(a, b):
    return a * 10 + b


@pytest.mark.parametrize("dims", [(0, 1), (1,), (0,), (0, 2), (2,)])
def test_a_non_commutative_reducer_folds_in_row_major_order(dims):
    """``a * 10 + b`` writes the visiting order into the digits: JAX 0.10.2 gives 123456
    for arange(1, 7).reshape(2, 3) over (0, 1), [123 456] over (1,), [14 25 36] over (0,)."""
    x = np.arange(1, 13, dtype=np.int64).reshape(2, 3, 2) % 9 + 1
    if dims in ((0, 1), (1,), (0,)):
        x = np.arange(1, 7, dtype=np.int64).reshape(2, 3)
    want, = np_fold([x], [0], lambda a, b: (digits(a[0], b[0]),), dims)
    got = lax.reduce(fnp.asarray(x), np.int64(0), digits, dims)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(ft.jit(lambda v: lax.reduce(v, np.int64(0), digits, dims))(x),
                                  want)
    jax_printed = {(0, 1): 123456, (1,): [123, 456], (0,): [14, 25, 36]}
    if dims in jax_printed:
        np.testing.assert_array_equal(got, jax_printed[dims])


def _argmin_pair(a, b):
    take_a = (a[0] < b[0]) | ((a[0] == b[0]) & (a[1] <= b[1]))
    return fnp.where(take_a, a[0], b[0]), fnp.where(take_a, a[1], b[1])


def test_several_operands_argmin_and_kahan_sum():
    v = rng.normal(size=(4, 5))
    idx = np.broadcast_to(np.arange(5), (4, 5)).copy()
    got = lax.reduce((v, idx), (np.inf, np.int64(0)), _argmin_pair, (1,))
    np.testing.assert_array_equal(got[0], v.min(1))
    np.testing.assert_array_equal(got[1], v.argmin(1))

    def kahan(acc, x):  # TFP's reduce_kahan_sum reducer: (sum, compensation) pairs
        s, c = acc
        y = x[0] - c - x[1]
        t = s + y
        return t, (t - s) - y
    x = np.full(1000, 0.1, np.float32)
    total, comp = lax.reduce((x, np.zeros_like(x)), (np.float32(0), np.float32(0)), kahan, (0,))
    want = np_fold([x, np.zeros_like(x)], [0, 0], lambda a, b: tuple(
        np.float32(t) for t in kahan(a, b)), (0,))
    assert total.dtype == np.float32
    np.testing.assert_array_equal(total, want[0])
    np.testing.assert_array_equal(comp, want[1])
    assert abs(float(total) - 100.0) < abs(float(np.cumsum(x)[-1]) - 100.0)


def test_pytree_operands_and_empty_reductions():
    x = {"a": rng.normal(size=(3, 2)), "b": rng.normal(size=(3, 2))}
    out = lax.reduce(x, {"a": 0.0, "b": 1.0},
                     lambda p, q: {"a": p["a"] + q["a"], "b": p["b"] * q["b"]}, (0,))
    np.testing.assert_allclose(out["a"], x["a"].sum(0), rtol=1e-12)
    np.testing.assert_allclose(out["b"], x["b"].prod(0), rtol=1e-12)
    empty = lax.reduce(np.zeros((0, 3)), 2.5, lambda p, q: p * q + q, (0,))
    np.testing.assert_array_equal(empty, [2.5, 2.5, 2.5])


def test_monoids_with_their_identity_are_the_dedicated_reductions():
    """JAX's shortcut: the jaxpr holds reduce_sum/max, not reduce; any other init (or
    function) is the general reduce."""
    x = fnp.asarray(rng.normal(size=(2, 3)))
    names = [e.prim.name for e in ft.make_jaxpr(lambda v: lax.reduce(v, 0.0, lax.add, (0,)))(
        x).eqns]
    assert names == ["reduce_sum"]
    names = [e.prim.name for e in ft.make_jaxpr(
        lambda v: lax.reduce(v, -np.inf, lax.max, (1,)))(x).eqns]
    assert names == ["reduce_max"]
    j = ft.make_jaxpr(lambda v: lax.reduce(v, 1.0, lax.add, (0,)))(x)
    assert [e.prim.name for e in j.eqns] == ["reduce"]
    np.testing.assert_allclose(lax.reduce(x, 1.0, lax.add, (0,)), np.asarray(x).sum(0) + 1,
                               rtol=1e-12)
    ints = fnp.asarray(np.array([6, 3, 5]))
    assert int(lax.reduce(ints, np.int64(-1), lax.bitwise_and, (0,))) == 6 & 3 & 5
    # JAX: the result is weakly typed only if operand and init both are
    assert not lax.reduce(x, np.float64(0), lax.add, (0,)).weak_type


def _sq(a, b):
    return a + b * b


def _soft(a, b):
    return fnp.logaddexp(a, b * 0.5)


@pytest.mark.parametrize("reducer,init", [(_sq, 0.0), (_soft, -np.inf)])
def test_gradient_matches_finite_differences(reducer, init):
    x = rng.normal(size=(3, 4))

    def f(v):
        return fnp.sum(fnp.sin(lax.reduce(v, init, reducer, (1,))))
    want = fd_grad(lambda v: np.sum(np.sin(np_fold([v], [init], lambda a, b: (
        np.asarray(reducer(a[0], b[0])),), (1,))[0])), x)
    np.testing.assert_allclose(ft.grad(f)(x), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(ft.jit(ft.grad(f))(x), want, rtol=1e-6, atol=1e-8)
    t = rng.normal(size=x.shape)
    _, jv = ft.jvp(f, (x,), (t,))
    np.testing.assert_allclose(jv, np.sum(want * t), rtol=1e-6)


def test_the_derivative_with_respect_to_the_init_value_is_the_folds():
    """JAX raises for it; here the fold's derivative: d/di of (i + sum x^2) is 1 per output."""
    x = rng.normal(size=(2, 3))
    g = ft.grad(lambda i: fnp.sum(lax.reduce(x, i, _sq, (1,))))(0.5)
    np.testing.assert_allclose(g, 2.0, rtol=1e-12)


def test_vmap_matches_a_python_loop():
    xs = rng.normal(size=(3, 4, 5))
    f = lambda v: lax.reduce(v, 0.0, _sq, (1,))  # noqa: E731
    for axis in (0, 1, 2):
        batched = ft.vmap(f, in_axes=axis)(np.moveaxis(xs, 0, axis))
        np.testing.assert_allclose(batched, np.stack([f(x) for x in xs]), rtol=1e-12)
    inits = np.array([0.0, 1.0, -2.0])  # batched init values: JAX does not batch these
    batched = ft.vmap(lambda v, i: lax.reduce(v, i, _sq, (0, 1)))(xs, inits)
    np.testing.assert_allclose(batched, [lax.reduce(x, i, _sq, (0, 1)) for x, i in
                                         zip(xs, inits)], rtol=1e-12)
    pair = ft.vmap(lambda v: lax.reduce((v, fnp.broadcast_to(fnp.arange(5), (4, 5))),
                                       (np.inf, 0), _argmin_pair, (1,)))
    vals, idx = pair(xs)
    np.testing.assert_array_equal(vals, xs.min(2))
    np.testing.assert_array_equal(idx, xs.argmin(2))


def test_the_transformation_laws_hold():
    check_transforms(lambda v: lax.reduce(v, 0.0, _sq, (0,)), rng.normal(size=(4, 3)))


def test_bad_input_is_a_clear_error():
    x = np.ones((2, 3))
    with pytest.raises(ValueError, match="non-scalar initial value"):
        lax.reduce(x, np.zeros(2), _sq, (0,))
    with pytest.raises(TypeError, match="dtypes should match"):
        lax.reduce(x.astype(np.float32), np.float64(0), _sq, (0,))
    with pytest.raises(ValueError, match="same tree structure"):
        lax.reduce((x, x), 0.0, _sq, (0,))
    with pytest.raises(TypeError, match="structure"):
        lax.reduce(x, 0.0, lambda a, b: (a, b), (0,))
    with pytest.raises(TypeError, match="scalars"):
        lax.reduce(x, 0.0, lambda a, b: a.astype(np.int32), (0,))
    with pytest.raises(ValueError, match="out of bounds"):
        lax.reduce(x, 0.0, _sq, (2,))
    with pytest.raises(NotImplementedError, match="close over Tracers"):
        ft.grad(lambda s: lax.reduce(x, 0.0, lambda a, b: a + b * s, (0,)).sum())(1.0)
