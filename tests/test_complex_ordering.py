"""Complex numbers ordered as in JAX and NumPy: lexicographically, real parts first.

NumPy is the oracle for NaN-free values (its order is the same); the NaN cases, where JAX
differs from NumPy (its max/min select ``x if x > y else y``, so a NaN is not propagated),
use golden values read off JAX 0.10.2 on CPU with x64 enabled. Every comparison is exact:
these functions select or compare values, they compute none (only the sign of a zero may
differ between two equal candidates, which ``assert_array_equal`` does not look at).
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st
from hypothesis.extra import numpy as hnp

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

nan, inf = np.nan, np.inf
C = complex

# Pairs whose real parts tie, NaN in either part, and signed zeros.
A = np.array([1 + 2j, 1 + 3j, C(nan, 0), C(nan, nan), 2 + 0j, 1 + 2j, C(-0.0, 0), 0j],
             np.complex64)
B = np.array([1 + 3j, 1 + 2j, 1 + 0j, 1 + 0j, 1 + 5j, 1 + 2j, 0j, C(-0.0, 0)], np.complex64)
X = np.array([C(nan, 0), 1 + 0j, C(1, nan), 1 + 1j, C(nan, nan), C(0, nan)])
Y = np.array([1 + 0j, C(nan, 0), 1 + 1j, C(1, nan), 0j, 1j])
Z = np.array([C(nan, 3), C(nan, 1), C(2, nan), 2 + 1j, C(nan, nan), C(2, -inf), C(-inf, 5),
              C(nan, -1), 2 + 0j])


def assert_same(got, expected, dtype=None):
    """Equal parts, NaNs at the same places (``assert_array_equal`` on complex values calls
    nan+0j and nan+nanj equal), and the dtype."""
    got, expected = np.asarray(got), np.asarray(expected)
    np.testing.assert_array_equal(got.real, expected.real)
    np.testing.assert_array_equal(got.imag, expected.imag)
    assert got.dtype == (dtype or expected.dtype), (got.dtype, expected.dtype)


MODES = {"eager": lambda f: f, "jit": ft.jit}


# ---- golden values from JAX ----------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
def test_elementwise_max_min_select_without_propagating_nan(mode):
    w = MODES[mode]
    assert_same(w(fnp.maximum)(A, B), np.array([1 + 3j, 1 + 3j, 1, 1, 2, 1 + 2j, 0, 0], np.complex64))
    assert_same(w(fnp.minimum)(A, B), np.array([1 + 2j, 1 + 2j, 1, 1, 1 + 5j, 1 + 2j, 0, 0],
                                        np.complex64))
    picked_y = np.array([1 + 0j, C(nan, 0), 1 + 1j, C(1, nan), 0j, 1j])  # JAX: y each time
    for f in (fnp.maximum, fnp.minimum, lax.max, lax.min):
        assert_same(w(f)(X, Y), picked_y)
    for f in (fnp.fmax, fnp.fmin):  # NaN-ignoring, as in JAX and NumPy
        assert_same(w(f)(X, Y), np.array([1, 1, 1 + 1j, 1 + 1j, 0, 1j], np.complex128))
    z4 = np.array([1 + 1j, C(nan, 1), C(1, nan), 2 + 0j])
    assert_same(w(lambda v: fnp.maximum(v, 1.5))(z4), np.array([1.5, 1.5, 1.5, 2], np.complex128))
    assert_same(w(lambda v: fnp.maximum(1.5, v))(z4), np.array([1.5, C(nan, 1), 1.5, 2]))


@pytest.mark.parametrize("mode", MODES)
def test_comparisons_are_lexicographic(mode):
    w = MODES[mode]
    T, F = True, False
    np.testing.assert_array_equal(w(fnp.greater)(A, B), [F, T, F, F, T, F, F, F])
    np.testing.assert_array_equal(w(fnp.less)(A, B), [T, F, F, F, F, F, F, F])
    np.testing.assert_array_equal(w(fnp.greater_equal)(A, B), [F, T, F, F, T, T, T, T])
    np.testing.assert_array_equal(w(fnp.less_equal)(A, B), [T, F, F, F, F, T, T, T])
    np.testing.assert_array_equal(w(lambda a, b: a < b)(fnp.asarray(A), B),
                                  [T, F, F, F, F, F, F, F])
    for f in (fnp.greater, fnp.less, fnp.greater_equal, fnp.less_equal):
        np.testing.assert_array_equal(w(f)(X, Y), [F] * 6)
    z4 = np.array([1 + 1j, C(nan, 1), C(1, nan), 2 + 0j])
    np.testing.assert_array_equal(w(lambda v: v > 1.0)(fnp.asarray(z4)), [T, F, F, T])


@pytest.mark.parametrize("mode", MODES)
def test_reductions_fold_in_order_from_the_identity(mode):
    w = MODES[mode]
    assert_same(w(fnp.max)(A), np.complex64(2))
    assert_same(w(fnp.min)(A), np.complex64(0))
    assert_same(w(fnp.max)(Z), np.complex128(2))
    assert_same(w(fnp.min)(Z), np.complex128(2))
    assert_same(w(fnp.max)(Z[::-1].copy()), np.complex128(C(nan, 3)))
    assert_same(w(lambda v: fnp.max(v, axis=0))(Z.reshape(3, 3)), np.array([2 + 1j, C(nan, -1), 2]))
    assert_same(w(lambda v: fnp.max(v, axis=1))(Z.reshape(3, 3)), np.array([C(2, nan), C(2, -inf), 2]))
    assert_same(w(fnp.nanmax)(Z), np.complex128(2 + 1j))
    assert_same(w(fnp.nanmin)(Z), np.complex128(C(-inf, 5)))
    assert_same(w(fnp.ptp)(Z), np.complex128(0))
    assert_same(w(fnp.ptp)(np.array([1 + 2j, 3 - 1j, 5j])), np.complex128(3 - 6j))
    for xs, expected in [([1, nan, 0], 0), ([nan, 1, 0], 1), ([0, 1, nan], nan)]:
        assert_same(w(lambda v: lax.reduce_max(v, (0,)))(np.array(xs, np.complex128)),
             np.complex128(expected))
    assert_same(w(lambda v: lax.reduce_max(v, (0,)))(np.zeros(0, np.complex64)), np.complex64(-inf))
    assert_same(w(lambda v: lax.reduce_min(v, (0,)))(np.zeros(0, np.complex64)), np.complex64(inf))
    z4 = np.array([1 + 1j, C(nan, 1), C(1, nan), 2 + 0j])
    assert_same(w(lambda v: fnp.nanmax(v, axis=1))(z4.reshape(2, 2)), np.array([1 + 1j, 2]))
    assert_same(w(lambda v: fnp.nanmax(v, initial=5 + 0j))(z4), np.complex128(5))
    assert_same(w(lambda v: fnp.max(v, where=np.array([1, 0, 0, 1], bool), initial=0j))(z4),
         np.complex128(2))


@pytest.mark.parametrize("mode", MODES)
def test_the_identity_takes_part_in_the_fold_like_jax(mode):
    # JAX's identity for complex max is -inf+0j, which compares above -inf-1j.
    w = MODES[mode]
    v = np.array([C(-inf, -1), C(-inf, -2), C(-inf, -3)])
    assert_same(w(lambda u: lax.reduce_max(u, (0,)))(v), np.complex128(C(-inf, 0)))
    assert_same(w(lambda u: lax.reduce_min(u, (0,)))(-v), np.complex128(C(inf, 0)))
    assert_same(w(lax.cummax)(v[::-1].copy()), np.full(3, C(-inf, 0)))


def test_reductions_break_ties_toward_the_later_element_like_jax():
    # Equal values differ only in a zero's sign: the fold keeps the later one, as XLA does.
    r = lax.reduce_max(np.array([0j, C(-0.0, 0)]), (0,))
    assert np.signbit(np.asarray(r).real)
    r = lax.reduce_max(np.array([C(-0.0, 0), 0j]), (0,))
    assert not np.signbit(np.asarray(r).real)
    assert np.signbit(np.asarray(lax.max(np.array(0j), np.array(C(-0.0, 0)))).real)


@pytest.mark.parametrize("mode", MODES)
def test_running_extrema(mode):
    w = MODES[mode]
    assert_same(w(lax.cummax)(A), np.array([1 + 2j, 1 + 3j, C(nan, 0), C(nan, nan), 2, 2, 2, 2],
                                    np.complex64))
    assert_same(w(lax.cummin)(A), np.array([1 + 2j, 1 + 2j, C(nan, 0), C(nan, nan), 2, 1 + 2j, 0, 0],
                                    np.complex64))
    assert_same(w(lax.cummax)(np.array([0, nan, 1, 2], np.complex128)),
         np.array([0, nan, 1, 2], np.complex128))


@pytest.mark.parametrize("mode", MODES)
def test_sort_argsort_searchsorted_put_nans_last(mode):
    w = MODES[mode]
    assert_same(w(fnp.sort)(Z), np.array([C(-inf, 5), C(2, -inf), 2, 2 + 1j, C(2, nan), C(nan, -1),
                                   C(nan, 1), C(nan, 3), C(nan, nan)]))
    np.testing.assert_array_equal(w(fnp.argsort)(Z), [6, 5, 8, 3, 2, 7, 1, 0, 4])
    np.testing.assert_array_equal(w(lambda v: fnp.argsort(v, descending=True))(Z),
                                  [4, 0, 1, 7, 2, 3, 8, 5, 6])
    np.testing.assert_array_equal(w(fnp.searchsorted)(np.sort(A), A), [2, 4, 6, 7, 5, 2, 0, 0])


def test_vmap_and_jit_of_vmap():
    rows = Z.reshape(3, 3)
    for f in (ft.vmap(fnp.max), ft.jit(ft.vmap(fnp.max))):
        assert_same(f(rows), np.array([C(2, nan), C(2, -inf), 2]))
    for f in (ft.vmap(fnp.maximum), ft.jit(ft.vmap(fnp.maximum))):
        assert_same(f(X, Y), np.array([1 + 0j, C(nan, 0), 1 + 1j, C(1, nan), 0j, 1j]))
    assert_same(ft.vmap(lax.cummax)(np.stack([A, B])), np.stack([lax.cummax(A), lax.cummax(B)]))


# ---- derivatives (JAX's rules: ties share the tangent) -------------------------------------------
def test_jvp_of_max_min_and_their_reductions():
    ones = np.ones_like(A)
    _, t = ft.jvp(fnp.maximum, (A, B), (ones, 2 * ones))
    assert_same(t, np.array([2, 1, 2, 2, 1, 1.5, 1.5, 1.5], np.complex64))
    _, t = ft.jvp(fnp.max, (A,), (ones,))
    assert_same(t, np.complex64(1))
    _, t = ft.jvp(lax.cummax, (A,), (ones,))
    assert_same(t, np.array([1, 1, 0, 0, 1, 1, 1, 1], np.complex64))


def test_grad_through_complex_max():
    g = ft.grad(lambda x, y: fnp.maximum(x, y).real, argnums=(0, 1))
    assert_same(g(1 + 2j, 1 + 3j)[1], np.complex128(1))
    assert_same(g(1 + 2j, 1 + 3j)[0], np.complex128(0))
    assert_same(g(1 + 2j, 1 + 2j)[0], np.complex128(0.5))
    assert_same(ft.jit(g)(1 + 2j, 1 + 2j)[1], np.complex128(0.5))
    assert_same(ft.grad(lambda v: fnp.max(v).real)(A), np.array([0, 0, 0, 0, 1, 0, 0, 0], np.complex64))


# ---- what JAX refuses -----------------------------------------------------------------------------
def test_what_jax_refuses_stays_refused():
    z = fnp.asarray(Z)
    for f in (lax.lt, lax.gt, lax.le, lax.ge):
        with pytest.raises(TypeError, match="does not accept dtype complex128"):
            f(z, z)
    for f in (fnp.argmax, fnp.argmin, fnp.nanargmax):
        with pytest.raises(TypeError, match="does not accept dtype complex128"):
            f(z)
    with pytest.raises(ValueError, match="Complex values have no ordering"):
        fnp.clip(z, 0, 1)
    with pytest.raises(ValueError, match="Complex values have no ordering"):
        fnp.clip(np.ones(3), 0j, 1)
    for f in (fnp.median, fnp.nanmedian, lambda v: fnp.quantile(v, 0.5),
              lambda v: fnp.percentile(v, 50)):
        with pytest.raises(ValueError, match="quantile does not support complex input"):
            f(z)
    for f in (fnp.partition, fnp.argpartition):
        with pytest.raises(NotImplementedError, match="for complex dtype is not implemented"):
            f(z, 2)
    with pytest.raises(ValueError, match="top_k is not compatible with complex inputs"):
        lax.top_k(z, 2)


# ---- NumPy as the oracle: NaN-free values with repeated real parts ------------------------------
# Real parts leave out the infinities: a reduction folds from JAX's identity (-inf+0j for max),
# which beats -inf-1j where NumPy starts from the first element (the golden case above).
_REAL = st.sampled_from([-1.0, -0.0, 0.0, 0.5, 2.0])
_IMAG = st.sampled_from([-inf, -1.0, -0.0, 0.0, 0.5, 2.0, inf])


def _arrays(dtype, shape):
    return hnp.arrays(dtype, shape, elements=st.builds(complex, _REAL, _IMAG))


_SHAPES = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)


@given(st.sampled_from([np.complex64, np.complex128]), _SHAPES, st.data())
def test_elementwise_against_numpy(dtype, shape, data):
    x, y = data.draw(_arrays(dtype, shape)), data.draw(_arrays(dtype, shape))
    for name in ("maximum", "minimum", "fmax", "fmin"):
        expected = getattr(np, name)(x, y)
        assert_same(getattr(fnp, name)(x, y), expected)
        assert_same(ft.jit(getattr(fnp, name))(x, y), expected)
        assert_same(ft.vmap(getattr(fnp, name))(x, y), expected)
    for name in ("greater", "less", "greater_equal", "less_equal"):
        expected = getattr(np, name)(x, y)
        np.testing.assert_array_equal(getattr(fnp, name)(x, y), expected)
        np.testing.assert_array_equal(ft.jit(getattr(fnp, name))(x, y), expected)


@given(st.sampled_from([np.complex64, np.complex128]), _SHAPES, st.data())
def test_reductions_sorts_and_scans_against_numpy(dtype, shape, data):
    x = data.draw(_arrays(dtype, shape))
    axis = data.draw(st.sampled_from([None] + list(range(x.ndim))))
    for name in ("max", "min"):
        def f(v, name=name):
            return getattr(fnp, name)(v, axis=axis)
        expected = getattr(np, name)(x, axis=axis)
        assert_same(f(x), expected)
        assert_same(ft.jit(f)(x), expected)
    ax = 0 if axis is None else axis
    assert_same(fnp.sort(x, axis=ax), np.sort(x, axis=ax))
    assert_same(ft.jit(lambda v: fnp.sort(v, axis=ax))(x), np.sort(x, axis=ax))
    np.testing.assert_array_equal(fnp.argsort(x, axis=ax), np.argsort(x, axis=ax, kind="stable"))
    for prim, ufunc in ((lax.cummax, np.maximum), (lax.cummin, np.minimum)):
        expected = ufunc.accumulate(x, axis=ax)
        assert_same(prim(x, axis=ax), expected)
        assert_same(ft.jit(lambda v, prim=prim: prim(v, axis=ax))(x), expected)
    flat = np.sort(x.ravel())
    for side in ("left", "right"):
        np.testing.assert_array_equal(fnp.searchsorted(flat, x.ravel(), side=side),
                                      np.searchsorted(flat, x.ravel(), side=side))
