"""lu and triangular_solve in native programs (``transforms/native/linalg_calls.py``): LAPACK
called from small Numba kernels linked into the program, so a loop around them stays native.

Oracles: SciPy (``lu_factor``, ``solve_triangular``) and the un-jitted function. The same
LAPACK routines run in both, on the same matrices, so factors agree within a few ulp (2e-13
in float64, 1e-5 in float32: the kernel factors a transposed copy, as the eager path does,
but the BLAS it calls may block differently); pivots and permutations exactly.
"""
import numpy as np
import pytest
import scipy.linalg as sla

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.jit.executable import executable_for
from functrans.transforms.lowering import lapack
from functrans.transforms.native.driver import Driver
from functrans.transforms.native.program import NativeProgram

pytestmark = pytest.mark.skipif(not lapack.AVAILABLE, reason="no LAPACK library found")

RTOL = {np.float64: 2e-13, np.float32: 1e-5}


def _native_only(jitted, *args):
    exe = executable_for(jitted.lower(*args).jaxpr, jitted.name)
    assert type(exe) is NativeProgram and exe.native_fraction == 1.0
    assert all(type(r) is Driver for r in exe.runs)


def _well_conditioned(rng, shape, dtype):
    a = rng.standard_normal(shape) + 4 * np.eye(shape[-1])
    return a.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 2, 3, 3), (4, 6), (6, 4)])
def test_lu_matches_scipy(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape).astype(dtype)
    jf = ft.jit(lax.linalg.lu)
    lu, piv, perm = jf(a)
    _native_only(jf, a)
    assert (lu.dtype, piv.dtype, perm.dtype) == (np.dtype(dtype), np.int32, np.int32)
    for idx in np.ndindex(shape[:-2]):
        m, n = shape[-2:]
        if m == n:
            want_lu, want_piv = sla.lu_factor(a[idx])
            np.testing.assert_allclose(lu[idx], want_lu, rtol=RTOL[dtype], atol=RTOL[dtype])
            np.testing.assert_array_equal(piv[idx], want_piv)
        p, l, u = sla.lu(a[idx])  # a = p l u, whatever the shape
        np.testing.assert_allclose(np.tril(lu[idx], -1)[:, :min(m, n)] + np.eye(m, min(m, n)),
                                   l, rtol=RTOL[dtype], atol=RTOL[dtype])
        np.testing.assert_allclose(np.triu(lu[idx])[:min(m, n)], u, rtol=RTOL[dtype],
                                   atol=10 * RTOL[dtype])
        np.testing.assert_array_equal(a[idx][perm[idx]], (p.T @ a[idx]).astype(dtype))
    for g, w in zip((lu, piv, perm), lax.linalg.lu(a)):  # the eager path: one LAPACK
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype])


# Each flag both ways (every combination would compile 16 kernels per dtype, seconds each).
@pytest.mark.parametrize("left_side, lower, transpose_a, unit_diagonal, dtype", [
    (True, True, False, True, np.float64), (True, False, True, False, np.float64),
    (False, True, True, False, np.float64), (False, False, False, True, np.float64),
    (True, True, False, False, np.float32)])
def test_triangular_solve_matches_scipy(left_side, lower, transpose_a, unit_diagonal, dtype):
    rng = np.random.default_rng(7)
    a = _well_conditioned(rng, (3, 4, 4), dtype)
    b = rng.standard_normal((3, 4, 2) if left_side else (3, 2, 4)).astype(dtype)
    solve = ft.jit(lambda a, b: lax.linalg.triangular_solve(
        a, b, left_side=left_side, lower=lower, transpose_a=transpose_a,
        unit_diagonal=unit_diagonal))
    x = solve(a, b)
    _native_only(solve, a, b)
    assert x.dtype == dtype and x.shape == b.shape
    for q in range(3):
        # x @ op(a) = b is op(a)^T x^T = b^T.
        rhs, trans = (b[q], transpose_a) if left_side else (b[q].T, not transpose_a)
        want = sla.solve_triangular(a[q], rhs, lower=lower, trans=int(trans),
                                    unit_diagonal=unit_diagonal)
        np.testing.assert_allclose(x[q] if left_side else x[q].T, want, rtol=50 * RTOL[dtype])


def test_a_loop_solving_with_lu_factors_stays_native_and_matches_eager():
    # The shape of an implicit ODE step: a Newton iteration in a while loop, each step solving
    # with the LU factors of a Jacobian (diffrax's Kvaerno solvers through lineax).
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])

    def newton(y0):
        def body(c):
            y, i = c
            resid = a @ y + 0.1 * fnp.sin(y) - 1.0
            jac = a + 0.1 * fnp.diag(fnp.cos(y))
            return y - ft.scipy.linalg.lu_solve(ft.scipy.linalg.lu_factor(jac), resid), i + 1
        return lax.while_loop(lambda c: c[1] < 8, body, (y0, 0))[0]

    y0 = np.zeros(3)
    jf = ft.jit(newton)
    np.testing.assert_allclose(jf(y0), newton(y0), rtol=1e-13)
    _native_only(jf, y0)
    y = jf(y0)
    np.testing.assert_allclose(a @ y + 0.1 * np.sin(y), 1.0, atol=1e-12)  # converged
    np.testing.assert_allclose(ft.jit(ft.vmap(newton))(np.zeros((2, 3))), [y, y], rtol=1e-13)
