"""eigh by LAPACK's ?syevd/?heevd on the Fortran layout (functrans/primitives/lapack_eigh.py):
the same eigenvalues and eigenvectors, signs included, as SciPy's call of the same routines
(JAX's CPU kernel calls them so too), where np.linalg.eigh's eigenvector signs differ for some
matrices. Both compute with the same library, so results agree to a few ulp (in practice
bitwise): held to 1e-5 (float32) / 1e-12 (float64) relative to the matrix's scale."""
from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.primitives import lapack_eigh

sl = pytest.importorskip("scipy.linalg")
pytestmark = pytest.mark.skipif(not lapack_eigh.available(), reason="no LAPACK library found")

TOL = {"float32": 1e-5, "float64": 1e-12, "complex64": 1e-5, "complex128": 1e-12}


def _hermitian(rng, n, dtype):
    a = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((n, n))
    a = a.astype(dtype)
    return ((a @ a.conj().T) + (a @ a.conj().T).conj().T) / 2


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("lower", [True, False])
def test_eigenpairs_and_signs_match_lapack_called_by_scipy(dtype, lower):
    rng = np.random.default_rng(3)
    mats = np.stack([_hermitian(rng, 5, dtype) for _ in range(40)]).reshape(2, 20, 5, 5)
    w, v = lapack_eigh.eigh(mats, lower)
    assert w.dtype == np.empty(0, dtype).real.dtype and v.dtype == dtype
    assert w.shape == (2, 20, 5) and v.shape == (2, 20, 5, 5)
    for idx in np.ndindex(2, 20):
        want_w, want_v = sl.eigh(mats[idx], lower=lower, driver="evd")
        scale = np.abs(want_w).max()
        np.testing.assert_allclose(w[idx], want_w, atol=TOL[dtype] * scale)
        np.testing.assert_allclose(v[idx], want_v, atol=TOL[dtype] * 10)


def test_only_the_named_triangle_is_read_and_empty_and_nan_inputs():
    a = np.array([[2.0, 100.0], [1.0, 2.0]])  # lower triangle [[2, 1], [1, 2]]
    assert lapack_eigh.eigh(a, True)[0].tolist() == [1.0, 3.0]
    np.testing.assert_allclose(lapack_eigh.eigh(a, False)[0], [-98.0, 102.0], rtol=1e-14)
    w, v = lapack_eigh.eigh(np.zeros((3, 0, 0)), True)
    assert w.shape == (3, 0) and v.shape == (3, 0, 0)
    w, v = lapack_eigh.eigh(np.full((2, 2), np.nan, np.float32), True)
    assert np.isnan(w).all() and np.isnan(v).all()
    with pytest.raises(TypeError, match="int32"):
        lapack_eigh.eigh(np.eye(2, dtype=np.int32), True)


def test_fnp_eigh_gives_lapacks_signs_eagerly_under_jit_and_vmap():
    # matrices for which np.linalg.eigh's eigenvector signs differ from ?syevd's on the
    # Fortran layout (found by search over this seed); fnp.linalg.eigh follows LAPACK's
    rng = np.random.default_rng(0)
    mats = []
    while len(mats) < 3:
        a = rng.standard_normal((4, 4)).astype(np.float32)
        c = a @ a.T + np.eye(4, dtype=np.float32)
        c = (c + c.T) / 2
        if (np.sum(np.linalg.eigh(c)[1] * sl.eigh(c, driver="evd")[1], 0) < 0).any():
            mats.append(c)
    mats = np.stack(mats)
    want = np.stack([sl.eigh(c, driver="evd")[1] for c in mats])
    eager = np.stack([np.asarray(fnp.linalg.eigh(c)[1]) for c in mats])
    jitted = np.asarray(ft.jit(lambda m: fnp.linalg.eigh(m)[1])(mats))
    mapped = np.asarray(ft.vmap(lambda m: fnp.linalg.eigh(m)[1])(mats))
    for got in (eager, jitted, mapped):
        np.testing.assert_allclose(got, want, atol=1e-5)
