"""lax.linalg.tridiagonal_solve (the tridiagonal_solve primitive) against NumPy's dense solve,
its derivatives against finite differences, its batching against a Python loop, and its
errors. Dense solves of the same well-conditioned systems (diagonally dominant) agree with
LAPACK's ?gtsv to a few ulp: 1e-12 relative in float64, 1e-5 in float32."""
import numpy as np
import pytest

import functrans as ft
from functrans import lax
from functrans.transforms.autodiff.check import check_grads

rng = np.random.default_rng(21)


def _system(m=6, k=2, batch=(), dtype=np.float64):
    dl, du = rng.normal(size=(2,) + batch + (m,))
    d = rng.normal(size=batch + (m,)) + 5.0  # diagonally dominant: far from singular
    b = rng.normal(size=batch + (m, k))
    return [np.asarray(v, dtype) for v in (dl, d, du, b)]


def _dense(dl, d, du):
    m = d.shape[-1]
    a = np.zeros(d.shape + (m,), d.dtype)
    i = np.arange(m)
    a[..., i, i] = d
    a[..., i[1:], i[:-1]] = dl[..., 1:]
    a[..., i[:-1], i[1:]] = du[..., :-1]
    return a


@pytest.mark.parametrize("dtype,rtol", [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_matches_numpy_dense_solve(dtype, rtol):
    dl, d, du, b = _system(batch=(3,), dtype=dtype)
    x = lax.linalg.tridiagonal_solve(dl, d, du, b)
    assert x.dtype == dtype and x.shape == b.shape
    np.testing.assert_allclose(x, np.linalg.solve(_dense(dl, d, du), b), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype,rtol", [(np.complex128, 1e-12), (np.complex64, 1e-5)])
def test_complex_systems_match_numpy_and_differentiate(dtype, rtol):
    dl, d, du, b = _system(batch=(2,), dtype=dtype)
    dl, du, b = (v + 1j * rng.normal(size=v.shape).astype(dtype) for v in (dl, du, b))
    x = lax.linalg.tridiagonal_solve(dl, d, du, b)
    assert x.dtype == dtype
    np.testing.assert_allclose(x, np.linalg.solve(_dense(dl, d, du), b), rtol=rtol, atol=rtol)
    if dtype == np.complex128:  # complex tangents in every operand, orders 1 and 2
        check_grads(lax.linalg.tridiagonal_solve, [v[0] for v in (dl, d, du, b)], order=2)


def test_unused_corners_are_ignored_and_jit_matches_eager():
    dl, d, du, b = _system()
    want = lax.linalg.tridiagonal_solve(dl, d, du, b)
    dl2, du2 = dl.copy(), du.copy()
    dl2[0], du2[-1] = 123.0, -7.0  # outside the matrix
    np.testing.assert_array_equal(lax.linalg.tridiagonal_solve(dl2, d, du2, b), want)
    np.testing.assert_array_equal(ft.jit(lax.linalg.tridiagonal_solve)(dl, d, du, b), want)


def test_singular_system_gives_nan():
    z = np.zeros(3)
    x = lax.linalg.tridiagonal_solve(z, z, z, np.ones((3, 1)))
    assert np.isnan(np.asarray(x)).all()


def test_derivatives_match_finite_differences():
    # Orders 1 and 2, forward and reverse, in every operand (check_grads: central
    # differences, float64 tolerances 1e-5).
    check_grads(lax.linalg.tridiagonal_solve, _system(m=4), order=2)


def test_transpose_solves_with_the_transposed_matrix():
    # d/db of <c, A^-1 b> is A^-T c: the transpose rule's solve with shifted diagonals.
    dl, d, du, b = _system(m=5, k=1)
    c = rng.normal(size=(5, 1))
    g = ft.grad(lambda b: (lax.linalg.tridiagonal_solve(dl, d, du, b) * c).sum())(b)
    np.testing.assert_allclose(g, np.linalg.solve(_dense(dl, d, du).T, c), rtol=1e-12)


@pytest.mark.parametrize("axes", [(None, None, None, 0), (None, None, None, 2),
                                  (0, None, 0, None), (0, 0, 0, 1)])
def test_vmap_matches_a_loop(axes):
    # Diagonals unbatched: the batch becomes more columns of b; otherwise all move to front.
    base = _system(m=4, k=2)
    args = [np.stack([v + 0.1 * i for i in range(3)], axis=ax) if ax is not None else v
            for v, ax in zip(base, axes)]
    got = ft.vmap(lax.linalg.tridiagonal_solve, in_axes=axes)(*args)
    want = np.stack([np.asarray(lax.linalg.tridiagonal_solve(
        *[v if ax is None else np.take(v, i, axis=ax) for v, ax in zip(args, axes)]))
        for i in range(3)])
    np.testing.assert_allclose(got, want, rtol=1e-13)


def test_bad_input_raises_clearly():
    dl, d, du, b = _system(m=4)
    with pytest.raises(TypeError, match="same shape"):
        lax.linalg.tridiagonal_solve(dl[:3], d, du, b)
    with pytest.raises(TypeError, match="leading ndim-1 dimensions of b"):
        lax.linalg.tridiagonal_solve(dl, d, du, b[:3])
    with pytest.raises(TypeError, match="one dtype"):
        lax.linalg.tridiagonal_solve(dl, d, du, b.astype(np.float32))
    with pytest.raises(TypeError, match="complex128 operands, got dl i32"):
        lax.linalg.tridiagonal_solve(*[v.astype(np.int32) for v in (dl, d, du, b)])
    with pytest.raises(NotImplementedError, match="perturb_singular"):
        lax.linalg.tridiagonal_solve(dl, d, du, b, perturb_singular=True)
