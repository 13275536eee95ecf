"""Complex64/complex128 decompositions and solves (lax.linalg, fnp.linalg, scipy.linalg)
against NumPy and SciPy, their derivatives against finite differences, vmap against loops and
jit against eager runs.

Inputs are well conditioned by construction (diagonally dominant matrices; Hermitian positive
definite ``a a^H + n I``), as in test_linalg_decomp.py, so values are compared with
``rtol = atol = 64 n eps`` of the parts' precision (complex64: float32's eps): LAPACK's
backward-stable results differ from the oracle's by ``O(n eps cond)`` with cond of a few
units. jit and vmap call the same LAPACK routines per matrix (in a kernel or as host steps),
so they agree with eager runs to a few ulp (``TIGHT``). Derivatives use check_grads'
defaults (central differences with complex tangents; float64 to second order).

Gradients of real-valued functions of complex inputs follow JAX's convention,
``grad f = df/dx - i df/dy`` (twice the Wirtinger derivative ``df/dz``), which the
finite-difference oracle ``_real_grad`` computes directly.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.primitives import lapack
from functrans.primitives.linalg_decomp import eigh_p, svd_p
from functrans.scipy import linalg as fsl
from functrans.transforms.autodiff.check import check_grads

COMPLEX = ["complex64", "complex128"]
TIGHT = {np.dtype("complex64"): 1e-5, np.dtype("complex128"): 1e-12}


def _tol(dtype, n=5):
    return 64 * n * np.finfo(np.dtype(dtype)).eps


def crand(rng, shape, dtype="complex128"):
    return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dtype)


def well(rng, shape, dtype="complex128"):
    """Diagonally dominant: singular values within a small factor of n."""
    return (crand(rng, shape) + shape[-1] * np.eye(shape[-2], shape[-1])).astype(dtype)


def hpd(rng, shape, dtype="complex128"):
    a = crand(rng, shape)
    return (a @ mH(a) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def assert_close(got, want, tol):
    np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)


def _real_grad(f, x, eps=1e-6):
    """JAX's gradient of the real-valued ``f`` at complex ``x``: df/dx - i df/dy, by central
    differences (float64: truncation ~eps^2, rounding ~1e-16/eps, both far below 1e-7)."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for step, weight in ((1.0, 1.0), (1j, -1j)):
            e = np.zeros_like(x)
            e[idx] = step * eps
            g[idx] += weight * (float(f(x + e)) - float(f(x - e))) / (2 * eps)
    return g


# ---- values -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", COMPLEX)
def test_decompositions_match_numpy(dtype):
    rng = np.random.default_rng(0)
    tol = _tol(dtype)
    h, a, tall = hpd(rng, (2, 4, 4), dtype), well(rng, (2, 4, 4), dtype), well(rng, (5, 3), dtype)
    L = fnp.linalg.cholesky(h)
    assert L.dtype == dtype
    assert_close(L, np.linalg.cholesky(h), tol)
    assert_close(fnp.linalg.cholesky(h, upper=True), mH(np.linalg.cholesky(h)), tol)
    w, v = fnp.linalg.eigh(h)
    assert w.dtype == np.finfo(np.dtype(dtype)).dtype  # real eigenvalues
    assert_close(w, np.linalg.eigvalsh(h), tol * 8)
    assert_close(np.asarray(h) @ np.asarray(v), np.asarray(v) * np.asarray(w)[..., None, :],
                 tol * 8)
    for mode in ("reduced", "complete"):
        q, r = fnp.linalg.qr(tall, mode=mode)
        q2, r2 = np.linalg.qr(tall, mode=mode)  # the same LAPACK routines: the same phases
        assert_close(q, q2, tol)
        assert_close(r, r2, tol)
    u, s, vh = fnp.linalg.svd(tall, full_matrices=False)
    assert s.dtype == np.finfo(np.dtype(dtype)).dtype
    assert_close(s, np.linalg.svd(tall, compute_uv=False), tol)
    assert_close((np.asarray(u) * np.asarray(s)) @ np.asarray(vh), tall, tol)
    assert fnp.linalg.svd(tall)[0].shape == (5, 5)
    assert_close(fnp.linalg.cond(a), np.linalg.cond(a), tol * 4)
    assert int(fnp.linalg.matrix_rank(tall)) == 3


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
def test_matrix_norms_and_condition_numbers_match_numpy(ord):
    """The spectral norms (2, -2, 'nuc') take the complex matrix's singular values, not those
    of its elementwise moduli; the others depend on |x| only."""
    a = well(np.random.default_rng(7), (2, 3, 3))
    tol = _tol("complex128")
    assert_close(fnp.linalg.norm(a, ord, axis=(1, 2)), np.linalg.norm(a, ord, axis=(1, 2)), tol)
    assert_close(fnp.linalg.cond(a, ord), np.linalg.cond(a, ord), tol * 4)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_lu_and_solves_match_numpy_and_scipy(dtype):
    rng = np.random.default_rng(1)
    tol = _tol(dtype)
    a, b = well(rng, (4, 4), dtype), crand(rng, (4, 2), dtype)
    lu, piv, perm = lax.linalg.lu(a)
    lu2, piv2 = sl.lu_factor(a)
    assert_close(lu, lu2, tol)
    np.testing.assert_array_equal(piv, piv2)
    l, u = np.tril(np.asarray(lu), -1) + np.eye(4), np.triu(np.asarray(lu))
    assert_close(l @ u, a[np.asarray(perm)], tol)
    assert_close(fnp.linalg.solve(a, b), np.linalg.solve(a, b), tol)
    assert_close(fnp.linalg.solve(a, b[:, 0]), np.linalg.solve(a, b[:, 0]), tol)
    assert_close(fnp.linalg.inv(a), np.linalg.inv(a), tol)
    assert_close(fnp.linalg.det(a), np.linalg.det(a), tol * abs(np.linalg.det(a)))
    sign, logdet = fnp.linalg.slogdet(a)
    sign2, logdet2 = np.linalg.slogdet(a)
    assert logdet.dtype == np.finfo(np.dtype(dtype)).dtype
    assert_close(sign, sign2, tol)
    assert_close(logdet, logdet2, tol)
    assert complex(fnp.linalg.slogdet(np.zeros((2, 2), dtype))[0]) == 0
    assert_close(fnp.linalg.pinv(a[:, :3]), np.linalg.pinv(a[:, :3]), tol)
    x, res, rank, s = fnp.linalg.lstsq(a[:, :3], b)
    x2, res2, rank2, s2 = np.linalg.lstsq(a[:, :3], b)
    assert_close(x, x2, tol)
    assert res.dtype == res2.dtype
    assert_close(res, res2, tol * 4)
    assert int(rank) == rank2
    for trans in (0, 1, 2):  # SciPy's lu_solve takes integers only
        assert_close(fsl.lu_solve(fsl.lu_factor(a), b, trans=trans),
                     sl.lu_solve(sl.lu_factor(a), b, trans=trans), tol)
    h = hpd(rng, (4, 4), dtype)
    for lower in (True, False):
        assert_close(fsl.cho_solve(fsl.cho_factor(h, lower=lower), b),
                     sl.cho_solve(sl.cho_factor(h, lower=lower), b), tol)
        assert_close(fsl.cholesky(h, lower=lower), sl.cholesky(h, lower=lower), tol)
    assert_close(fsl.solve(h, b, assume_a="pos"), np.linalg.solve(h, b), tol)
    assert_close(fsl.solve(np.triu(h), b, assume_a="her"), np.linalg.solve(h, b), tol)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a,conjugate_a", [(False, False), (True, False),
                                                     (True, True), (False, True)])
def test_triangular_solve_matches_scipy(dtype, left_side, lower, transpose_a, conjugate_a):
    rng = np.random.default_rng(2)
    a = well(rng, (3, 3), dtype)  # both triangles filled: only one may be read
    b = crand(rng, (3, 2) if left_side else (2, 3), dtype)
    x = lax.linalg.triangular_solve(a, b, left_side=left_side, lower=lower,
                                    transpose_a=transpose_a, conjugate_a=conjugate_a)
    t = np.tril(a) if lower else np.triu(a)
    op = np.conj(t) if conjugate_a else t
    op = op.T if transpose_a else op
    want = np.linalg.solve(op, b) if left_side else np.linalg.solve(op.T, b.T).T
    assert_close(x, want, _tol(dtype))


def test_scipy_solve_triangular_conjugate_transpose():
    rng = np.random.default_rng(3)
    a, b = well(rng, (4, 4)), crand(rng, (4,))
    for trans in (0, 1, 2, "T", "C"):
        assert_close(fsl.solve_triangular(a, b, trans=trans, lower=True),
                     sl.solve_triangular(a, b, trans=trans, lower=True), _tol("complex128"))


def test_eigh_and_svd_types_are_real_for_complex_operands():
    for dtype, real in (("complex64", "float32"), ("complex128", "float64")):
        a = np.eye(3, dtype=dtype)
        v, w = eigh_p.bind_all(a, lower=True)
        assert (v.dtype, w.dtype) == (np.dtype(dtype), np.dtype(real))
        s, u, vt = svd_p.bind_all(a, full_matrices=False, compute_uv=True)
        assert (s.dtype, u.dtype, vt.dtype) == (np.dtype(real), np.dtype(dtype), np.dtype(dtype))
        jaxpr = ft.make_jaxpr(lambda x: fnp.linalg.svd(x, compute_uv=False))(a)
        assert jaxpr.out_avals[0].dtype == np.dtype(real)


def test_one_triangle_is_read_with_a_real_diagonal():
    """cholesky and eigh read a Hermitian matrix from the lower triangle (LAPACK ignores the
    diagonal's imaginary parts), so garbage elsewhere changes nothing."""
    rng = np.random.default_rng(4)
    h = hpd(rng, (3, 3))
    noisy = np.tril(h) + np.triu(crand(rng, (3, 3)), 1) + 1j * np.diag(rng.uniform(size=3))
    assert_close(lax.linalg.cholesky(noisy, symmetrize_input=False), np.linalg.cholesky(h),
                 _tol("complex128"))
    v, w = lax.linalg.eigh(noisy, symmetrize_input=False)
    assert_close(w, np.linalg.eigvalsh(h), _tol("complex128") * 8)


# ---- derivatives --------------------------------------------------------------------------------
_RNG = np.random.default_rng(5)
_A, _H, _B = well(_RNG, (3, 3)), hpd(_RNG, (3, 3)), crand(_RNG, (3, 2))
_TALL, _WIDE = well(_RNG, (4, 3)), well(_RNG, (3, 4))

DERIVATIVES = {
    "cholesky": (fnp.linalg.cholesky, (_H,)),
    # the primitive alone: tangents of the Hermitian matrix its lower triangle defines
    "cholesky_primitive": (lambda h: lax.linalg.cholesky(h, symmetrize_input=False), (_H,)),
    "triangular_solve": (lambda a, b: lax.linalg.triangular_solve(
        a, b, left_side=True, lower=True, transpose_a=True, conjugate_a=True), (_A, _B)),
    "triangular_solve_right": (lambda a, b: lax.linalg.triangular_solve(
        a, b.T, left_side=False, lower=False, conjugate_a=True), (_A, _B)),
    "lu": (lambda a: lax.linalg.lu(a)[0], (_A,)),
    "solve": (fnp.linalg.solve, (_A, _B)),
    "inv": (fnp.linalg.inv, (_A,)),
    "det": (fnp.linalg.det, (_A,)),
    "slogdet": (lambda a: fnp.linalg.slogdet(a)[1], (_A,)),
    "qr": (lambda a: fnp.linalg.qr(a), (_TALL,)),
    "eigh_values": (lambda h: fnp.linalg.eigh(h)[0], (_H,)),
    "eigh_vectors_gauge_free": (lambda h: fnp.abs(fnp.linalg.eigh(h)[1]), (_H,)),
    # the primitive alone, gauge-free: V diag(w) V^H rebuilds the matrix it read
    "eigh_primitive": (lambda h: (lambda v, w: (v * w.astype(h.dtype)) @ fnp.conj(v.T))(
        *lax.linalg.eigh(h, symmetrize_input=False)), (_H,)),
    "svdvals": (lambda a: fnp.linalg.svd(a, compute_uv=False), (_TALL,)),
    "svd_product": (lambda a: (lambda u, s, vh: (u * s) @ vh)(
        *fnp.linalg.svd(a, full_matrices=False)), (_TALL,)),
    "svd_tall_vectors": (lambda a: fnp.abs(fnp.linalg.svd(a, full_matrices=False)[0]), (_TALL,)),
    "svd_wide_vectors": (lambda a: fnp.abs(fnp.linalg.svd(a, full_matrices=False)[2]), (_WIDE,)),
    "pinv": (fnp.linalg.pinv, (_TALL,)),
    "cho_solve": (lambda h, b: fsl.cho_solve(fsl.cho_factor(h), b), (_H, _B)),
    "lu_solve_conjugate_transpose": (lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=2),
                                     (_A, _B)),
}


@pytest.mark.parametrize("name", sorted(DERIVATIVES))
def test_derivatives_with_complex_tangents(name):
    f, args = DERIVATIVES[name]
    check_grads(f, args, order=2, modes=("fwd", "rev"))


GRADS = {
    "slogdet": lambda a: fnp.linalg.slogdet(a)[1],
    "solve": lambda a: fnp.sum(fnp.abs(fnp.linalg.solve(a, _B)) ** 2),
    "cholesky": lambda a: fnp.sum(fnp.real(fnp.linalg.cholesky(a @ fnp.conj(a.T)))),
    "qr": lambda a: fnp.sum(fnp.real(fnp.linalg.qr(a)[1]) * fnp.arange(3.0)),
    "svd": lambda a: fnp.sum(fnp.linalg.svd(a, compute_uv=False) ** 3),
    "eigvalsh": lambda a: fnp.sum(fnp.linalg.eigvalsh(a + fnp.conj(a.T)) * fnp.arange(3.0)),
    "triangular": lambda a: fnp.sum(fnp.abs(fsl.solve_triangular(a, _B, trans="C")) ** 2),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_grads_of_real_functions_follow_jax_convention(name):
    f = GRADS[name]
    got = ft.grad(f)(_A)
    assert got.dtype == np.complex128
    # differences of O(1) values in float64 at eps=1e-6: errors ~1e-10 relative
    assert_close(got, _real_grad(f, _A), 1e-7)


# ---- vmap and jit -------------------------------------------------------------------------------
def _programs(dtype):
    rng = np.random.default_rng(6)
    a, h, b = well(rng, (3, 4, 4), dtype), hpd(rng, (3, 4, 4), dtype), crand(rng, (3, 4, 2), dtype)
    return {
        "solve": (fnp.linalg.solve, (a, b)),
        "cholesky": (fnp.linalg.cholesky, (h,)),
        "lu": (lambda x: lax.linalg.lu(x)[0], (a,)),
        "triangular_solve": (lambda x, y: fsl.solve_triangular(x, y, trans="C"), (a, b)),
        "qr": (lambda x: fnp.linalg.qr(x)[1], (a,)),
        "eigh": (lambda x: fnp.linalg.eigh(x)[0], (h,)),
        "svd": (lambda x: fnp.linalg.svd(x, compute_uv=False), (a,)),
        "slogdet": (lambda x: fnp.linalg.slogdet(x)[0], (a,)),
    }


@pytest.mark.parametrize("dtype", COMPLEX)
def test_vmap_matches_loop_and_jit_matches_eager(dtype):
    for name, (f, args) in _programs(dtype).items():
        loop = np.stack([np.asarray(f(*(x[i] for x in args))) for i in range(3)])
        assert_close(ft.vmap(f)(*args), loop, TIGHT[np.dtype(dtype)])
        assert_close(ft.jit(f)(*args), f(*args), TIGHT[np.dtype(dtype)])


def test_jit_of_grad_matches_eager_grad():
    f = GRADS["solve"]
    assert_close(ft.jit(ft.grad(f))(_A), ft.grad(f)(_A), TIGHT[np.dtype("complex128")])


# ---- errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,err,match", [
    (lambda: fnp.linalg.solve(np.eye(2, dtype=np.float16), np.ones(2, np.float16)), TypeError,
     "float16 is unsupported.*complex64 and complex128"),
    (lambda: fnp.linalg.svd(np.eye(2, dtype=np.float16)), TypeError, "float16"),
    (lambda: lax.linalg.cholesky(np.eye(2, dtype=np.int32), symmetrize_input=False), TypeError,
     "cholesky.*complex128 operands, got i32"),
    (lambda: lax.linalg.triangular_solve(np.eye(2, dtype=np.complex64), np.eye(2)), TypeError,
     "one dtype"),
    (lambda: lapack.trsm(np.eye(2, dtype=complex), np.eye(2, dtype=complex), left_side=True,
                         lower=True, transpose_a=False, unit_diagonal=False, conjugate_a=True),
     ValueError, "conjugate_a needs transpose_a"),
    (lambda: lapack.getrf(np.eye(2, dtype=np.float16)), TypeError, "getrf has no variant for "
     "float16"),
    (lambda: fsl.solve_triangular(np.eye(2, dtype=complex), np.ones(2), trans="H"), ValueError,
     "trans"),
])
def test_errors_name_the_problem(call, err, match):
    with pytest.raises(err, match=match):
        call()
