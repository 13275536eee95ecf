"""Householder QR in LAPACK's packed form (lax.linalg's geqrf, ormqr, householder_product and
jnp.linalg.qr(mode="raw")) against NumPy's LAPACK-backed ``np.linalg.qr``: the same packed
reflectors and scalars (LAPACK's ?larfg conventions) to rounding, 1e-12 in float64 (the
loop's and LAPACK's blocked order of operations differ by a few ulp of O(1) values)."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.lax.linalg_householder import geqrf
from functrans.transforms.autodiff.check import check_grads

rng = np.random.default_rng(5)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (1, 3), (3, 1)])
def test_geqrf_is_lapacks_packed_qr(shape):
    a = rng.normal(size=shape)
    h, taus = geqrf(a)
    h_np, taus_np = np.linalg.qr(a, mode="raw")  # LAPACK ?geqrf, h transposed
    np.testing.assert_allclose(h, h_np.T, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(taus, taus_np, rtol=1e-12, atol=1e-12)
    h2, taus2 = fnp.linalg.qr(a, mode="raw")
    np.testing.assert_array_equal(h2, np.asarray(h).T)
    np.testing.assert_array_equal(taus2, taus)


def test_geqrf_of_a_zero_column_is_the_identity_reflector():
    h, taus = geqrf(np.zeros((3, 2)))
    np.testing.assert_array_equal(h, np.zeros((3, 2)))
    np.testing.assert_array_equal(taus, np.zeros(2))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_ormqr_multiplies_by_q_without_forming_it(left, transpose, shape):
    a = rng.normal(size=shape)
    m = shape[0]
    h, taus = geqrf(a)
    q = np.linalg.qr(a, mode="complete")[0]  # the same reflectors: the same Q
    op = q.T if transpose else q
    c = rng.normal(size=(m, 2) if left else (2, m))
    got = lax.linalg.ormqr(h, taus, c, left=left, transpose=transpose)
    np.testing.assert_allclose(got, op @ c if left else c @ op, rtol=1e-12, atol=1e-12)


def _crand(shape, dtype):
    return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dtype)


# complex64 compares at 64 * 5 float32 eps (O(n eps) of LAPACK's blocked order vs the loop's)
@pytest.mark.parametrize("dtype,tol", [("complex128", 1e-12), ("complex64", 4e-5)])
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (1, 3), (3, 1)])
def test_complex_geqrf_and_ormqr_are_lapacks(dtype, tol, shape):
    a = _crand(shape, dtype)
    h, taus = geqrf(a)
    h_np, taus_np = np.linalg.qr(a, mode="raw")  # zgeqrf: complex taus, real diagonal of R
    np.testing.assert_allclose(h, h_np.T, rtol=tol, atol=tol)
    np.testing.assert_allclose(taus, taus_np, rtol=tol, atol=tol)
    q = np.linalg.qr(a, mode="complete")[0]
    m = shape[0]
    for left in (True, False):
        c = _crand((m, 2) if left else (2, m), dtype)
        for transpose, op in ((False, q), (True, q.conj().T)):  # transpose: Q^H
            got = lax.linalg.ormqr(h, taus, c, left=left, transpose=transpose)
            np.testing.assert_allclose(got, op @ c if left else c @ op, rtol=tol, atol=tol)
    if m >= shape[1]:
        np.testing.assert_allclose(lax.linalg.householder_product(h, taus),
                                   np.linalg.qr(a)[0], rtol=tol, atol=tol)


def test_complex_alpha_over_a_zero_column_is_reflected_real():
    """?larfg reflects a complex alpha even when the column below it is zero (tau != 0), so
    R's diagonal is real."""
    a = np.array([[1j, 1.0], [0.0, 2.0]])
    h, taus = geqrf(a)
    h_np, taus_np = np.linalg.qr(a, mode="raw")
    np.testing.assert_allclose(h, h_np.T, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(taus, taus_np, rtol=1e-15, atol=1e-15)
    assert complex(taus[0]) == 1 + 1j


def test_householder_product_is_the_reduced_q():
    a = rng.normal(size=(2, 5, 3))  # a batch
    h, taus = geqrf(a)
    np.testing.assert_allclose(lax.linalg.householder_product(h, taus), np.linalg.qr(a)[0],
                               rtol=1e-12, atol=1e-12)


def test_vmap_and_jit_match_loops_and_eager():
    a, c = rng.normal(size=(3, 4, 3)), rng.normal(size=(3, 4, 2))
    h, taus = ft.vmap(geqrf)(a)
    for i in range(3):
        hi, ti = geqrf(a[i])
        np.testing.assert_allclose(h[i], hi, rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(taus[i], ti, rtol=1e-14, atol=1e-14)
    got = ft.vmap(lambda h, t, c: lax.linalg.ormqr(h, t, c, transpose=True))(h, taus, c)
    for i in range(3):
        np.testing.assert_allclose(got[i], lax.linalg.ormqr(h[i], taus[i], c[i], transpose=True),
                                   rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(ft.jit(geqrf)(a[0])[0], geqrf(a[0])[0], rtol=1e-14, atol=1e-14)


def test_derivatives_match_finite_differences():
    # JAX gives these no derivative rules; as compositions of lax operations they have
    # derivatives wherever the reflectors are smooth (no zero columns): central differences,
    # float64 tolerances 1e-5, first order.
    a = rng.normal(size=(4, 3))
    check_grads(lambda a: geqrf(a)[0], (a,), order=1)
    h, taus = geqrf(a)
    c = rng.normal(size=(4, 2))
    check_grads(lambda h, t, c: lax.linalg.ormqr(h, t, c), (h, taus, c), order=1)
    z = _crand((4, 3), "complex128")  # complex tangents through the complex reflectors
    check_grads(lambda a: geqrf(a)[0], (z,), order=1)
    hz, tz = geqrf(z)
    check_grads(lambda h, t, c: lax.linalg.ormqr(h, t, c, transpose=True),
                (hz, tz, _crand((4, 2), "complex128")), order=1)


def test_bad_input_raises_clearly():
    h, taus = geqrf(rng.normal(size=(4, 3)))
    with pytest.raises(ValueError, match="as many rows"):
        lax.linalg.ormqr(h, taus, np.ones((3, 2)))
    with pytest.raises(ValueError, match="at most min"):
        lax.linalg.ormqr(h, np.ones(4), np.ones((4, 2)))
    with pytest.raises(TypeError, match="complex64 or complex128 operands, got i32"):
        geqrf(np.ones((2, 2), np.int32))
    with pytest.raises(ValueError, match="at least as many rows"):
        lax.linalg.householder_product(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="mode must be"):
        fnp.linalg.qr(np.ones((2, 2)), mode="economic")
