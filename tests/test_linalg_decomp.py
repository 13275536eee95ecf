"""Decompositions (lax.linalg primitives, fnp.linalg, functrans.scipy.linalg) against NumPy and
SciPy, their reconstruction identities, derivatives, vmap, jit and errors.

Inputs are well conditioned by construction (diagonally dominant matrices: condition numbers
of a few units; SPD matrices ``a a^T + n I``; distinct eigen/singular values), so LAPACK's
backward-stable results differ from the oracle's by ``O(n eps cond)``: values are compared
with ``rtol = atol = 64 n eps`` of the dtype (n <= 5, cond <= ~10: a margin of about 10 over
the bound's constant). jit runs the primitives as host steps on the same LAPACK and vmap
calls the same routines per matrix, so those agree to a few ulp (``TIGHT``: 1e-12 float64,
1e-5 float32). Derivatives use check_grads' defaults (see test_autodiff.py): central
differences, float64 to second order and float32 to first order.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from hypothesis import given, settings, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.scipy import linalg as fsl
from functrans.transforms.autodiff.check import check_grads

FLOATS = ["float32", "float64"]
# fnp.linalg functions tested here (test_numpy_linalg.py checks the list is complete).
DECOMPOSITIONS = ["cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "det", "slogdet", "inv",
                  "solve", "pinv", "lstsq", "matrix_rank", "cond", "tensorsolve", "tensorinv"]


def _tol(dtype, n=5):
    return 64 * n * np.finfo(dtype).eps


TIGHT = {np.dtype("float32"): 1e-5, np.dtype("float64"): 1e-12}


def well(rng, shape, dtype="float64"):
    """Diagonally dominant: singular values within a small factor of n."""
    n = shape[-1]
    a = rng.uniform(-1, 1, shape) + n * np.eye(shape[-2], n)
    return a.astype(dtype)


def spd(rng, shape, dtype="float64"):
    a = rng.uniform(-1, 1, shape)
    return (a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def assert_close(got, want, rtol, atol=None):
    atol = rtol if atol is None else atol
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


@st.composite
def batched(draw, square=True):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n = draw(st.integers(1, 5))
    m = n if square else draw(st.integers(1, 5))
    dtype = draw(st.sampled_from(FLOATS))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    return np.random.default_rng(seed), batch + (m, n), dtype


def mT(x):
    return np.swapaxes(x, -1, -2)


# ---- values and identities -------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(batched())
def test_cholesky_eigh_match_numpy(case):
    rng, shape, dtype = case
    a = spd(rng, shape, dtype)
    tol = _tol(dtype)
    L = fnp.linalg.cholesky(a)
    assert_close(L, np.linalg.cholesky(a), tol)
    assert_close(np.asarray(L) @ mT(np.asarray(L)), a, tol * shape[-1])
    assert_close(fnp.linalg.cholesky(a, upper=True), mT(np.linalg.cholesky(a)), tol)
    w, v = fnp.linalg.eigh(a)
    assert_close(w, np.linalg.eigvalsh(a), tol * shape[-1])
    assert_close((np.asarray(v) * np.asarray(w)[..., None, :]) @ mT(np.asarray(v)), a, tol * shape[-1])
    assert_close(mT(np.asarray(v)) @ np.asarray(v), np.broadcast_to(np.eye(shape[-1]), shape), tol)
    assert_close(fnp.linalg.eigvalsh(a, UPLO="U"), np.linalg.eigvalsh(a, UPLO="U"), tol * shape[-1])


@settings(max_examples=25, deadline=None)
@given(batched(square=False))
def test_qr_svd_match_numpy(case):
    rng, shape, dtype = case
    a = rng.uniform(-1, 1, shape).astype(dtype)
    tol = _tol(dtype)
    for mode in ("reduced", "complete"):
        q, r = fnp.linalg.qr(a, mode=mode)
        wq, wr = np.linalg.qr(a, mode=mode)
        assert_close(q, wq, tol)
        assert_close(r, wr, tol)
        assert_close(np.asarray(q) @ np.asarray(r), a, tol)
        assert np.all(np.tril(np.asarray(r), -1) == 0)
    assert_close(fnp.linalg.qr(a, mode="r"), np.linalg.qr(a, mode="r"), tol)
    s = fnp.linalg.svdvals(a)
    assert_close(s, np.linalg.svd(a, compute_uv=False), tol)
    for full in (True, False):
        u, s2, vh = fnp.linalg.svd(a, full_matrices=full)
        k = min(shape[-2:])
        u, s2, vh = (np.asarray(x) for x in (u, s2, vh))
        assert_close((u[..., :, :k] * s2[..., None, :]) @ vh[..., :k, :], a, tol)
        assert u.shape == np.linalg.svd(a, full_matrices=full)[0].shape
        assert vh.shape == np.linalg.svd(a, full_matrices=full)[2].shape


@settings(max_examples=25, deadline=None)
@given(batched())
def test_lu_composites_match_numpy(case):
    rng, shape, dtype = case
    a = well(rng, shape, dtype)
    tol = _tol(dtype)
    assert_close(fnp.linalg.det(a), np.linalg.det(a), tol, atol=0)
    sign, logdet = fnp.linalg.slogdet(a)
    wsign, wlogdet = np.linalg.slogdet(a)
    np.testing.assert_array_equal(sign, wsign)
    assert_close(logdet, wlogdet, tol)
    assert_close(fnp.linalg.inv(a), np.linalg.inv(a), tol)
    b = rng.uniform(-1, 1, shape[:-1] + (2,)).astype(dtype)
    assert_close(fnp.linalg.solve(a, b), np.linalg.solve(a, b), tol)
    vec = rng.uniform(-1, 1, shape[-1]).astype(dtype)
    assert_close(fnp.linalg.solve(a, vec), np.linalg.solve(a, vec), tol)
    assert_close(fnp.linalg.pinv(a), np.linalg.pinv(a), tol)
    assert np.array_equal(fnp.linalg.matrix_rank(a), np.linalg.matrix_rank(a))
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        assert_close(fnp.linalg.cond(a, p), np.linalg.cond(a, p), tol * 4)
        assert_close(fnp.linalg.norm(a, p, axis=(-2, -1)), np.linalg.norm(a, p, axis=(-2, -1)), tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_lu_primitive_and_scipy_lu(dtype):
    rng = np.random.default_rng(0)
    for shape in [(4, 4), (5, 3), (3, 5), (2, 3, 3)]:
        a = rng.uniform(-1, 1, shape).astype(dtype)
        lu_, piv, perm = lax.linalg.lu(a)
        for i in np.ndindex(shape[:-2]):
            wlu, wpiv = sl.lu_factor(a[i]) if shape[-1] == shape[-2] else (None, None)
            p, l, u = fsl.lu(a[i])
            wp, wl, wu = sl.lu(a[i])
            tol = _tol(dtype)
            assert_close(p, wp, 0)
            assert_close(l, wl, tol)
            assert_close(u, wu, tol)
            assert_close(np.asarray(p) @ np.asarray(l) @ np.asarray(u), a[i], tol)
            assert_close(np.asarray(a[i])[np.asarray(perm[i])], np.asarray(l) @ np.asarray(u), tol)
            if wlu is not None:
                assert_close(lu_[i], wlu, tol)
                np.testing.assert_array_equal(piv[i], wpiv)
        pl, u = fsl.lu(a, permute_l=True)
        assert_close(np.asarray(pl) @ np.asarray(u), a, _tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_scipy_solvers_match_scipy(dtype):
    rng = np.random.default_rng(1)
    tol = _tol(dtype)
    a = well(rng, (4, 4), dtype)
    b = rng.uniform(-1, 1, (4, 3)).astype(dtype)
    for lower in (True, False):
        for trans in (0, 1, "T"):
            for unit in (True, False):
                assert_close(fsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit),
                      sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit), tol)
    s = spd(rng, (4, 4), dtype)
    for lower in (True, False):
        c = fsl.cho_factor(s, lower=lower)
        wc = sl.cho_factor(s, lower=lower)
        tri = np.tril if lower else np.triu
        assert_close(c[0], tri(wc[0]), tol)
        assert_close(fsl.cho_solve(c, b), sl.cho_solve(wc, b), tol)
        assert_close(fsl.cho_solve(c, b[:, 0]), sl.cho_solve(wc, b[:, 0]), tol)
    lu_piv = fsl.lu_factor(a)
    wlu = sl.lu_factor(a)
    assert_close(lu_piv[0], wlu[0], tol)
    np.testing.assert_array_equal(lu_piv[1], wlu[1])
    for trans in (0, 1):
        assert_close(fsl.lu_solve(lu_piv, b, trans=trans), sl.lu_solve(wlu, b, trans=trans), tol)
        assert_close(fsl.lu_solve(lu_piv, b[:, 1], trans=trans), sl.lu_solve(wlu, b[:, 1], trans=trans),
              tol)
    blocks = [np.ones((2, 2), dtype), np.array([3.0], dtype), np.arange(3).astype(dtype)]
    np.testing.assert_array_equal(fsl.block_diag(*blocks), sl.block_diag(*blocks))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("scale", [1e-3, 0.1, 0.5, 1.5, 4.0, 20.0])
def test_expm_matches_scipy(dtype, scale):
    """Each scale reaches a different Pade degree (or squarings): relative to ||expm(A)||,
    the error is a few eps times the squarings' growth."""
    rng = np.random.default_rng(2)
    a = rng.normal(size=(4, 4)) * scale / 4
    want = sl.expm(a)
    got = fsl.expm(a.astype(dtype))
    rtol = 1e-11 if dtype == "float64" else 2e-5
    assert_close(got, want, rtol, atol=rtol * np.abs(want).max())
    upper = np.triu(a)
    assert_close(fsl.expm(upper.astype(dtype), upper_triangular=True), sl.expm(upper), rtol,
          atol=rtol * np.abs(sl.expm(upper)).max())
    batch = np.stack([a, 2 * a, upper])
    assert_close(fsl.expm(batch.astype(dtype)), np.stack([sl.expm(x) for x in batch]), rtol,
          atol=rtol * np.abs(sl.expm(2 * a)).max())


def test_lstsq_matches_numpy():
    rng = np.random.default_rng(3)
    for m, n in [(5, 3), (3, 5), (4, 4)]:
        a = rng.uniform(-1, 1, (m, n))
        for b in (rng.uniform(-1, 1, m), rng.uniform(-1, 1, (m, 2))):
            got, want = fnp.linalg.lstsq(a, b), np.linalg.lstsq(a, b)
            for g, w in zip(got, want):
                assert np.shape(g) == np.shape(w)
                assert_close(g, w, _tol("float64"))
    rank_deficient = np.outer(np.arange(1.0, 5.0), np.ones(3))
    got = fnp.linalg.lstsq(rank_deficient, np.ones(4))
    want = np.linalg.lstsq(rank_deficient, np.ones(4))
    assert int(got[2]) == want[2] == 1 and got[1].shape == want[1].shape == (0,)
    assert_close(got[0], want[0], _tol("float64"))


def test_tensor_solve_and_inv_match_numpy():
    rng = np.random.default_rng(4)
    a = well(rng, (6, 6)).reshape(2, 3, 6)
    b = rng.uniform(-1, 1, (2, 3))
    assert_close(fnp.linalg.tensorsolve(a, b), np.linalg.tensorsolve(a, b), _tol("float64"))
    a4 = well(rng, (6, 6)).reshape(6, 2, 3)
    assert_close(fnp.linalg.tensorinv(a4, ind=1), np.linalg.tensorinv(a4, ind=1), _tol("float64"))


def test_singular_and_indefinite_inputs_like_numpy_and_jax():
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert float(fnp.linalg.det(singular)) == 0.0
    sign, logdet = fnp.linalg.slogdet(singular)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    assert float(fnp.linalg.cond(singular, 1)) == np.inf
    assert int(fnp.linalg.matrix_rank(singular)) == 1
    assert_close(fnp.linalg.pinv(singular), np.linalg.pinv(singular), _tol("float64"))
    # Not positive definite: NaN (LAPACK-backed JAX's answer), batch neighbours unaffected.
    L = np.asarray(fnp.linalg.cholesky(np.stack([np.eye(2), -np.eye(2)])))
    np.testing.assert_array_equal(L[0], np.eye(2))
    assert np.isnan(L[1]).all()
    # Integers compute in float64, as NumPy.
    assert fnp.linalg.det(np.array([[2, 1], [1, 2]])).dtype == np.float64
    assert int(fnp.linalg.matrix_rank(np.array([0.0, 1.0]))) == 1
    # Empty matrices, as NumPy.
    for shape in [(0, 0), (2, 0, 0)]:
        e = np.ones(shape)
        for name in ("det", "inv", "slogdet", "svdvals", "eigvalsh", "cholesky", "pinv",
                     "matrix_rank"):
            got, want = getattr(fnp.linalg, name)(e), getattr(np.linalg, name)(e)
            for g, w in zip(*(v if isinstance(v, tuple) else (v,) for v in (got, want))):
                assert np.shape(g) == np.shape(w)
                np.testing.assert_array_equal(g, w)
        with pytest.raises(np.linalg.LinAlgError, match="empty"):
            fnp.linalg.cond(e)


# ---- derivatives -------------------------------------------------------------------------------
rng = np.random.default_rng(5)
_A = well(rng, (3, 3))
_S = spd(rng, (3, 3))
_T = well(rng, (4, 3))
_W = well(rng, (3, 4))
_B = rng.uniform(-1, 1, (3, 2))
_BATCH = well(rng, (2, 3, 3))

GRAD_CASES = {
    "cholesky": (fnp.linalg.cholesky, (_S,)),
    "cholesky_batch": (fnp.linalg.cholesky, (spd(rng, (2, 3, 3)),)),
    "eigh": (lambda a: fnp.linalg.eigh(a), (_S,)),
    "eigh_upper": (lambda a: lax.linalg.eigh(a, lower=False, symmetrize_input=False), (_S,)),
    "eigvalsh": (fnp.linalg.eigvalsh, (_BATCH,)),
    "qr_tall": (lambda a: fnp.linalg.qr(a), (_T,)),
    "qr_batch": (lambda a: fnp.linalg.qr(a), (_BATCH,)),
    "svd_square": (lambda a: fnp.linalg.svd(a, full_matrices=False), (_A,)),
    "svd_tall": (lambda a: fnp.linalg.svd(a, full_matrices=False), (_T,)),
    "svd_wide": (lambda a: fnp.linalg.svd(a, full_matrices=False), (_W,)),
    "svdvals": (fnp.linalg.svdvals, (_BATCH,)),
    "det": (fnp.linalg.det, (_BATCH,)),
    "slogdet": (lambda a: fnp.linalg.slogdet(a)[1], (_A,)),
    "inv": (fnp.linalg.inv, (_A,)),
    "solve": (fnp.linalg.solve, (_A, _B)),
    "solve_batch_vector": (lambda a, b: fnp.linalg.solve(a, b), (_BATCH, _B[:, 0])),
    "pinv": (fnp.linalg.pinv, (_T,)),
    "lstsq": (lambda a, b: fnp.linalg.lstsq(a, b)[0], (_T, rng.uniform(-1, 1, 4))),
    "cond": (fnp.linalg.cond, (_A,)),
    "cond_1": (lambda a: fnp.linalg.cond(a, 1), (_A,)),
    "norm_2": (lambda a: fnp.linalg.norm(a, 2), (_A,)),
    "norm_nuc": (lambda a: fnp.linalg.norm(a, "nuc"), (_T,)),
    "norm_m2": (lambda a: fnp.linalg.norm(a, -2), (_W,)),
    "lu": (lambda a: lax.linalg.lu(a)[0], (_A,)),
    "lu_tall": (lambda a: lax.linalg.lu(a)[0], (_T,)),
    "lu_wide": (lambda a: lax.linalg.lu(a)[0], (_W,)),
    "scipy_lu": (lambda a: fsl.lu(a)[1:], (_A,)),
    "solve_triangular": (lambda a, b: fsl.solve_triangular(a, b, lower=True), (_A, _B)),
    "solve_triangular_t": (lambda a, b: fsl.solve_triangular(a, b, trans=1, unit_diagonal=True),
                           (_A, _B)),
    "triangular_right": (lambda a, b: lax.linalg.triangular_solve(a, b.T, lower=True),
                         (_A, _B)),
    "cho_solve": (lambda a, b: fsl.cho_solve(fsl.cho_factor(a), b), (_S, _B)),
    "lu_solve": (lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=1), (_A, _B)),
    "expm": (fsl.expm, (_A / 4,)),
    "expm_squarings": (fsl.expm, (_A,)),
    "block_diag": (lambda a, b: fsl.block_diag(a, b), (_A, _B)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_derivatives_float64(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2)


def test_one_by_one_matrices_differentiate():
    a = np.array([[2.0]])
    for f in (fnp.linalg.cholesky, fnp.linalg.det, fnp.linalg.inv, fnp.linalg.eigvalsh,
              fnp.linalg.svdvals, lambda x: fnp.linalg.eigh(x), lambda x: fnp.linalg.qr(x),
              lambda x: fnp.linalg.svd(x), fsl.expm):
        check_grads(f, (a,), order=2)


@pytest.mark.parametrize("name", ["cholesky", "eigh", "qr_tall", "svd_tall", "det", "solve",
                                  "inv", "lu", "expm"])
def test_derivatives_float32(name):
    f, args = GRAD_CASES[name]
    check_grads(f, tuple(np.asarray(a, np.float32) for a in args), order=1)


# Functions whose derivatives are well conditioned on any input of the given family (no
# eigenvector or singular vector derivatives, which blow up at near-equal values).
BATCHED_GRADS = {
    "cholesky": (fnp.linalg.cholesky, spd),
    "eigvalsh": (fnp.linalg.eigvalsh, spd),
    "qr": (lambda a: fnp.linalg.qr(a), well),
    "svdvals": (fnp.linalg.svdvals, well),
    "det": (fnp.linalg.det, well),
    "inv": (fnp.linalg.inv, well),
    "lu": (lambda a: lax.linalg.lu(a)[0], well),
    "solve_triangular": (lambda a: fsl.solve_triangular(a, a[..., :1] * 2.0, lower=True), well),
}


@settings(max_examples=20, deadline=None)
@given(batched(), st.sampled_from(sorted(BATCHED_GRADS)))
def test_derivatives_with_random_batch_shapes(case, name):
    rng, shape, _ = case
    f, family = BATCHED_GRADS[name]
    check_grads(f, (family(rng, shape),), order=1)


def test_det_gradient_is_the_cofactor_matrix():
    # d det(A) / dA = det(A) A^-T (Jacobi's formula)
    g = ft.grad(fnp.linalg.det)(_A)
    assert_close(g, np.linalg.det(_A) * np.linalg.inv(_A).T, 1e-12)


def test_pinv_derivative_at_a_rank_deficient_matrix():
    """Along a curve of constant rank the pseudo-inverse is smooth; its JVP there must match
    central differences of that curve (float64, h = 1e-5: truncation ~1e-10)."""
    r = np.random.default_rng(7)
    u, v, du = r.normal(size=(4, 1)), r.normal(size=(1, 3)), r.normal(size=(4, 1))
    curve = lambda t: np.asarray(fnp.linalg.pinv((u + t * du) @ v))  # noqa: E731
    _, jv = ft.jvp(fnp.linalg.pinv, (u @ v,), (du @ v,))
    assert_close(jv, (curve(1e-5) - curve(-1e-5)) / 2e-5, 1e-7)


def test_unsupported_derivatives_are_refused_clearly():
    with pytest.raises(NotImplementedError, match=r"qr: derivatives.*\(3, 4\)"):
        ft.jvp(lambda a: fnp.linalg.qr(a), (_W,), (_W,))
    with pytest.raises(NotImplementedError, match=r"svd: derivatives.*\(4, 3\)"):
        ft.jvp(lambda a: fnp.linalg.svd(a), (_T,), (_T,))


# ---- vmap and jit ------------------------------------------------------------------------------
TRANSFORM_CASES = {k: GRAD_CASES[k] for k in (
    "cholesky", "eigh", "qr_tall", "svd_tall", "svd_wide", "det", "slogdet", "inv", "solve",
    "pinv", "cond", "cond_1", "norm_2", "lu", "lu_tall", "scipy_lu", "solve_triangular",
    "triangular_right", "cho_solve", "lu_solve", "expm", "expm_squarings", "block_diag")}
TRANSFORM_CASES["matrix_rank"] = (fnp.linalg.matrix_rank, (_A,))
TRANSFORM_CASES["lstsq_tall"] = (lambda a, b: fnp.linalg.lstsq(a, b)[:2], (_T, rng.uniform(
    -1, 1, 4)))


def _perturbed(args, size, seed):
    r = np.random.default_rng(seed)
    return [np.stack([a * (1 + 0.1 * r.uniform(-1, 1, a.shape)) for _ in range(size)])
            for a in args]


def _assert_tree_close(got, want, rtol):
    for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("name", sorted(TRANSFORM_CASES))
def test_vmap_matches_loop(name):
    f, args = TRANSFORM_CASES[name]
    xs = _perturbed(args, 3, 0)
    want = [f(*[x[i] for x in xs]) for i in range(3)]
    want = ft.tree_util.tree_map(lambda *v: np.stack([np.asarray(u) for u in v]), *want)
    _assert_tree_close(ft.vmap(f)(*xs), want, 1e-12)
    # batch axis last, and only the first argument batched
    moved = [np.moveaxis(x, 0, -1) for x in xs]
    _assert_tree_close(ft.vmap(f, in_axes=-1)(*moved), want, 1e-12)
    if len(args) > 1:
        got = ft.vmap(f, in_axes=(0,) + (None,) * (len(args) - 1))(xs[0], *args[1:])
        want1 = [f(xs[0][i], *args[1:]) for i in range(3)]
        want1 = ft.tree_util.tree_map(lambda *v: np.stack([np.asarray(u) for u in v]), *want1)
        _assert_tree_close(got, want1, 1e-12)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(TRANSFORM_CASES))
def test_jit_matches_eager(name, dtype):
    f, args = TRANSFORM_CASES[name]
    args = [np.asarray(a, dtype) for a in args]
    _assert_tree_close(ft.jit(f)(*args), f(*args), TIGHT[np.dtype(dtype)])


def test_grad_of_jit_and_jit_of_grad_and_vmap():
    f = lambda a, b: fnp.sum(fnp.linalg.solve(a, b) ** 2) + fnp.linalg.slogdet(a)[1]  # noqa
    want = ft.grad(f)(_A, _B)
    assert_close(ft.jit(ft.grad(f))(_A, _B), want, 1e-12)
    assert_close(ft.grad(ft.jit(f))(_A, _B), want, 1e-12)
    xs = _perturbed([_A], 2, 1)[0]
    assert_close(ft.jit(ft.vmap(ft.grad(f), (0, None)))(xs, _B),
          np.stack([ft.grad(f)(x, _B) for x in xs]), 1e-12)


def test_inside_control_flow_and_pmap():
    """A loop or branch containing a host step runs on the host as a whole; pmap's per-shard
    programs run them like jit."""
    b = _B[:, 0]
    loop = lambda a, b: lax.fori_loop(  # noqa: E731
        0, 3, lambda i, x: fnp.linalg.solve(a, x) + fnp.linalg.det(a), b)
    assert_close(ft.jit(loop)(_A, b), loop(_A, b), 1e-12)
    scanned = lambda a, b: fnp.sum(lax.scan(  # noqa: E731
        lambda c, x: (fnp.linalg.solve(a, c) * x, c.sum()), b, np.arange(1.0, 4.0))[0])
    assert_close(ft.jit(ft.grad(scanned))(_A, b), ft.grad(scanned)(_A, b), 1e-12)
    check_grads(scanned, (_A, b), order=1)
    branch = lambda p, a: lax.cond(p, fnp.linalg.inv, lambda x: x, a)  # noqa: E731
    assert_close(ft.jit(branch)(True, _A), np.linalg.inv(_A), _tol("float64"))
    stacked = np.stack([_A, _A.T])
    assert_close(ft.pmap(fnp.linalg.inv)(stacked), np.linalg.inv(stacked), _tol("float64"))


def test_jit_calls_lapack_in_kernels_or_runs_host_steps():
    """cholesky/triangular_solve/lu call LAPACK inside the kernel; qr/eigh/svd are host steps
    between compiled segments."""
    from functrans.transforms.lowering import lapack
    f = lambda a: fnp.linalg.qr(fnp.linalg.cholesky(a * 2.0) + 1.0)[0] * 3.0  # noqa: E731
    exe = ft.jit(f).lower(_S).compile()._exe
    names = [s.prim.name if hasattr(s, "prim") else "kernel" for s in exe.steps]
    if lapack.AVAILABLE:
        assert names == ["kernel", "qr", "kernel"]
    else:
        assert names == ["kernel", "cholesky", "kernel", "qr", "kernel"]
    assert_close(ft.jit(f)(_S), f(_S), 1e-12)


# ---- errors ------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, err, match", [
    (lambda: fnp.linalg.det(np.ones((2, 3))), np.linalg.LinAlgError, r"square.*\(2, 3\)"),
    (lambda: fnp.linalg.inv(np.ones(3)), np.linalg.LinAlgError, r"1-dimensional.*\(3,\)"),
    (lambda: fnp.linalg.cholesky(np.ones((3, 2))), np.linalg.LinAlgError, r"square.*\(3, 2\)"),
    (lambda: fnp.linalg.eigh(np.ones((2, 3))), np.linalg.LinAlgError, "square"),
    (lambda: fnp.linalg.svd(np.ones(3)), np.linalg.LinAlgError, "two-dimensional"),
    (lambda: fnp.linalg.solve(np.eye(3), np.ones(2)), ValueError, r"\(3, 3\).*\(2,\)"),
    (lambda: fnp.linalg.solve(np.ones((2, 3, 3)), np.ones((4, 3, 1))), ValueError,
     r"batch.*\(2, 3, 3\).*\(4, 3, 1\)"),
    (lambda: fnp.linalg.det(np.eye(2, dtype=np.float16)), TypeError, "float16"),
    (lambda: fnp.linalg.qr(np.eye(2), mode="rawr"), ValueError, "mode must be.*'rawr'"),
    (lambda: fnp.linalg.eigh(np.eye(2), UPLO="X"), ValueError, "UPLO"),
    (lambda: fnp.linalg.lstsq(np.ones((3, 2)), np.ones(4)), np.linalg.LinAlgError,
     r"\(3, 2\).*\(4,\)"),
    (lambda: fnp.linalg.pinv(np.eye(2), rcond=0.1, rtol=0.1), ValueError, "both"),
    (lambda: fnp.linalg.tensorinv(np.eye(4), ind=0), ValueError, "ind"),
    (lambda: fsl.solve_triangular(np.eye(3), np.ones(2)), ValueError, r"\(3, 3\).*\(2,\)"),
    (lambda: fsl.solve_triangular(np.eye(3), np.ones(3), trans=3), ValueError, "trans"),
    (lambda: fsl.cho_solve((np.eye(3), True), np.ones((2, 1))), ValueError, r"\(2, 1\)"),
    (lambda: fsl.lu_solve((np.eye(3), np.zeros(2, np.int32)), np.ones(3)), ValueError,
     "pivots"),
    (lambda: fsl.block_diag(np.ones((2, 2, 2))), ValueError, r"\(2, 2, 2\)"),
    (lambda: fsl.expm(np.ones((2, 3))), np.linalg.LinAlgError, r"square.*\(2, 3\)"),
    (lambda: lax.linalg.triangular_solve(np.eye(3), np.ones((2, 3)), left_side=True),
     ValueError, r"rows \(2\).*size 3"),
    (lambda: lax.linalg.triangular_solve(np.ones((2, 3, 3)), np.ones((4, 3, 3))), ValueError,
     "batch"),
    (lambda: lax.linalg.cholesky(np.ones((2, 3))), ValueError, r"square.*\(2, 3\)"),
    (lambda: lax.linalg.lu(np.ones(3)), ValueError, r"at least 2.*f64\[3\]"),
    (lambda: lax.linalg.qr(np.ones((2, 2), np.int32)), TypeError, "float32 or float64"),
    (lambda: lax.linalg.triangular_solve(np.eye(2), np.eye(2, dtype=np.float32)), TypeError,
     "one dtype"),
])
def test_errors_name_the_problem(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_errors_are_raised_when_tracing_too():
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        ft.jit(fnp.linalg.inv)(np.ones((2, 3)))
    with pytest.raises(ValueError, match="batch"):
        ft.vmap(lambda a, b: fnp.linalg.solve(a, b))(np.ones((2, 2, 3, 3)), np.ones((2, 4, 3, 1)))


def test_lu_pivots_to_permutation_matches_the_lu_primitive():
    a = np.random.default_rng(6).uniform(-1, 1, (2, 3, 5, 4))
    _, pivots, perm = lax.linalg.lu(a)
    np.testing.assert_array_equal(lax.linalg.lu_pivots_to_permutation(pivots, 5), perm)
    np.testing.assert_array_equal(
        ft.jit(lambda p: lax.linalg.lu_pivots_to_permutation(p, 5))(pivots), perm)
    np.testing.assert_array_equal(
        ft.vmap(lambda p: lax.linalg.lu_pivots_to_permutation(p, 5))(pivots), perm)
    with pytest.raises(TypeError, match="integer"):
        lax.linalg.lu_pivots_to_permutation(np.zeros(3), 3)
    with pytest.raises(ValueError, match="4 pivots.*size 3"):
        lax.linalg.lu_pivots_to_permutation(np.zeros(4, np.int32), 3)


@pytest.mark.parametrize("dtype", FLOATS)
def test_scipy_linalg_wrappers_match_scipy(dtype):
    r = np.random.default_rng(8)
    tol = _tol(dtype)
    a = well(r, (4, 4), dtype)
    s = spd(r, (4, 4), dtype)
    b = r.uniform(-1, 1, (4, 2)).astype(dtype)
    for lower in (True, False):
        # Junk in the triangle that is not read.
        junk = s + (np.triu(np.ones((4, 4)), 1) if lower else np.tril(np.ones((4, 4)), -1))
        junk = junk.astype(dtype)
        for assume_a in ("gen", "sym", "pos"):
            assert_close(fsl.solve(junk, b, lower=lower, assume_a=assume_a),
                  sl.solve(junk, b, lower=lower, assume_a=assume_a), tol)
        w, v = fsl.eigh(junk, lower=lower)
        assert_close(w, sl.eigh(junk, lower=lower, eigvals_only=True), tol)
        assert_close(fsl.eigh(junk, lower=lower, eigvals_only=True), w, 0)
    tall = a[:, :3]
    for mode in ("full", "economic", "r"):
        got, want = fsl.qr(tall, mode=mode), sl.qr(tall, mode=mode)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w, tol)
    assert_close(fsl.det(a), sl.det(a), tol, atol=0)
    assert_close(fsl.inv(a), sl.inv(a), tol)
    for g, w in zip(fsl.svd(a), sl.svd(a)):
        assert_close(g, w, tol)
    assert_close(fsl.cholesky(s), sl.cholesky(s), tol)
    with pytest.raises(ValueError, match="assume_a"):
        fsl.solve(a, b, assume_a="banded")
    with pytest.raises(ValueError, match="mode"):
        fsl.qr(a, mode="raw")


def test_jit_edge_cases_match_eager():
    """Empty matrices and batches, and a matrix that is not positive definite (NaN) in the
    kernels' LAPACK calls, as eagerly."""
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        e = np.ones(shape)
        for f in (fnp.linalg.det, fnp.linalg.inv, fnp.linalg.cholesky, lambda a: fsl.lu(a)[1],
                  lambda a: fsl.solve_triangular(a, a)):
            got, want = ft.jit(f)(e), f(e)
            assert np.shape(got) == np.shape(want)
            np.testing.assert_array_equal(got, want)
    mixed = np.stack([np.eye(3), -np.eye(3)])
    got = np.asarray(ft.jit(fnp.linalg.cholesky)(mixed))
    np.testing.assert_array_equal(got[0], np.eye(3))
    assert np.isnan(got[1]).all()
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert float(ft.jit(fnp.linalg.det)(singular)) == 0.0


def test_scipy_lapack_still_works_after_jit_calls_lapack():
    """jit's kernels call NumPy's OpenBLAS (64-bit integers) by symbol; SciPy ships its own
    OpenBLAS (32-bit integers) with many of the same internal symbol names. SciPy loaded first,
    functrans next, a LAPACK kernel compiled: SciPy's routines must still bind to their own
    library (run in a fresh interpreter, where the import order is what this test says). Whether
    a wrong binding shows depends on which of SciPy's calls were bound before, so the test also
    checks the cause: NumPy's OpenBLAS must not join the process's global symbol scope."""
    import subprocess
    import sys
    program = (
        "import numpy as np, scipy.linalg as sl\n"
        "import functrans as ft, functrans.numpy as fnp\n"
        "import ctypes\n"
        "from functrans.transforms.lowering import lapack\n"
        "a = np.eye(4) * 4 + 1\n"
        "ft.jit(fnp.linalg.cholesky)(a)\n"
        "# The cause, checked directly: its symbols are not in the process's global scope.\n"
        "assert not hasattr(ctypes.CDLL(None), lapack.FOUND.pattern.format('dgetrf_'))\n"
        "assert not hasattr(ctypes.CDLL(None), 'blas_memory_alloc')\n"
        "np.testing.assert_allclose(sl.svd(a)[1], np.linalg.svd(a)[1], rtol=1e-12)\n"
        "b = np.arange(8.0).reshape(4, 2)\n"
        "for assume_a in ('gen', 'sym', 'pos'):\n"
        "    np.testing.assert_allclose(sl.solve(a, b, assume_a=assume_a),\n"
        "                               np.linalg.solve(a, b), rtol=1e-12)\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_gradient_of_solve_with_64_bit_values_off():
    # JAX's default (x64 off): lu's derivative builds its triangular masks from int32 indices
    # and constants alike (an int64 constant there was narrowed and no longer matched).
    rng = np.random.default_rng(7)
    a = well(rng, (4, 4), "float32")
    b = rng.standard_normal(4).astype(np.float32)
    with ft.enable_x64(False):
        def f(lam):
            return fnp.sum(fnp.linalg.solve(a + lam * fnp.eye(4), b) ** 2)
        got = float(ft.grad(f)(0.5))
    x = np.linalg.solve(a.astype(np.float64) + 0.5 * np.eye(4), b)
    # d/dlam |x|^2 = -2 x^T (A + lam I)^{-1} x
    want = -2.0 * x @ np.linalg.solve(a.astype(np.float64) + 0.5 * np.eye(4), x)
    assert abs(got - want) <= 1e-4 * abs(want)
