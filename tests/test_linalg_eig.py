"""Eigenvalues and eigenvectors of general matrices (``fnp.linalg.eig``/``eigvals``,
``lax.linalg.eig``), and what is built on them (``fnp.roots``, ``fnp.poly`` of a matrix).

Oracles: NumPy's ``np.linalg.eig`` (the impl calls it, so values compare exactly), the
defining identities ``A V = V diag(w)`` and ``U^H A = diag(w) U^H`` within LAPACK's backward
error (``64 n eps |A|``, as test_linalg_decomp.py states for the other decompositions), finite
differences for derivatives (``check_grads``), Python loops for vmap, eager for jit.
Derivatives are checked at matrices with well-separated eigenvalues, where they are defined.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.autodiff.check import check_grads

# fnp.linalg functions tested here (test_numpy_linalg.py checks the list is complete).
FUNCTIONS = ["eig", "eigvals"]
DTYPES = ["float32", "float64", "complex64", "complex128"]


def _residual_bound(a):
    n = a.shape[-1]
    eps = np.finfo(np.asarray(a).real.dtype).eps
    return 64 * max(n, 1) * eps * max(np.abs(a).max(initial=0.0), 1.0)


@st.composite
def matrices(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    n = draw(st.integers(1, 5))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    r = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    a = r.normal(size=batch + (n, n))
    if dtype.kind == "c":
        a = a + 1j * r.normal(size=a.shape)
    return a.astype(dtype)


# ---- values --------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(matrices())
def test_eig_matches_numpy_and_its_identities(a):
    w, v = fnp.linalg.eig(a)
    want_w, want_v = np.linalg.eig(a)
    complex_dtype = np.result_type(a.dtype, np.complex64)
    assert w.dtype == v.dtype == complex_dtype  # always complex, as in JAX
    np.testing.assert_array_equal(w, want_w.astype(complex_dtype))
    np.testing.assert_array_equal(v, want_v.astype(complex_dtype))
    np.testing.assert_array_equal(fnp.linalg.eigvals(a), w)
    w, vl, vr = (np.asarray(x) for x in lax.linalg.eig(a))
    bound = _residual_bound(a)
    assert np.abs(a @ vr - vr * w[..., None, :]).max() <= bound
    ul = np.conj(np.swapaxes(vl, -1, -2))  # rows u_j^H
    assert np.abs(ul @ a - w[..., :, None] * ul).max() <= bound
    eps = np.finfo(w.real.dtype).eps
    np.testing.assert_allclose(np.linalg.norm(vl, axis=-2), 1, atol=16 * eps)
    largest = np.take_along_axis(vl, np.argmax(np.abs(vl), axis=-2)[..., None, :], axis=-2)
    assert np.all(largest.imag == 0) and np.all(largest.real > 0)


def test_eig_of_known_matrices():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])
    np.testing.assert_allclose(fnp.linalg.eigvals(rotation), [1j, -1j], atol=1e-15)
    w, v = fnp.linalg.eig(np.diag([3.0, 1.0, 2.0]))
    np.testing.assert_array_equal(w, [3, 1, 2])
    np.testing.assert_array_equal(v, np.eye(3))
    assert fnp.linalg.eigvals(np.array([[2]])).dtype == np.complex128  # integers as float64
    for shape in [(0, 0), (2, 0, 0), (0, 3, 3)]:
        w, v = fnp.linalg.eig(np.ones(shape))
        assert w.shape == shape[:-1] and v.shape == shape


def test_non_finite_matrices_give_nan_and_spare_their_batch_neighbours():
    a = np.stack([np.diag([1.0, 2.0]), np.array([[np.nan, 0.0], [0.0, 1.0]]),
                  np.array([[np.inf, 1.0], [0.0, 1.0]])])
    for f in (lambda x: list(fnp.linalg.eig(x)), lambda x: lax.linalg.eig(x)):
        outs = [np.asarray(o) for o in f(a)]
        for o in outs:
            assert np.isnan(o[1:].real).all() and np.isnan(o[1:].imag).all()
            assert np.isfinite(o[0]).all()
        np.testing.assert_array_equal(outs[0][0], [1, 2])


# ---- derivatives ---------------------------------------------------------------------------------
# Distinct eigenvalues: a rotation block (+-2i) and 5, then perturbed.
_BASE = np.array([[0.0, -2.0, 0.0], [2.0, 0.0, 0.0], [0.0, 0.0, 5.0]])
_r = np.random.default_rng(4)
_A = _BASE + 0.3 * _r.uniform(-1, 1, (3, 3))
_C = _BASE + 0.3 * (_r.uniform(-1, 1, (3, 3)) + 1j * _r.uniform(-1, 1, (3, 3)))
_BATCH = _BASE + 0.3 * _r.uniform(-1, 1, (2, 3, 3))
_REAL_SPECTRUM = np.diag([1.0, 2.0, 4.0]) + 0.2 * _r.uniform(-1, 1, (3, 3))

GRAD_CASES = {
    "eigvals": (fnp.linalg.eigvals, (_A,)),
    "eigvals_batch": (fnp.linalg.eigvals, (_BATCH,)),
    "eigvals_real_spectrum": (fnp.linalg.eigvals, (_REAL_SPECTRUM,)),
    "eig": (lambda a: tuple(fnp.linalg.eig(a)), (_A,)),
    "eig_real_spectrum": (lambda a: tuple(fnp.linalg.eig(a)), (_REAL_SPECTRUM,)),
    "eig_left_and_right": (lambda a: tuple(lax.linalg.eig(a)), (_BATCH,)),
    "eig_left_only": (lambda a: tuple(lax.linalg.eig(a, compute_right_eigenvectors=False)),
                      (_A,)),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_derivatives_float64(name):
    f, args = GRAD_CASES[name]
    check_grads(f, args, order=2)


def test_derivatives_of_complex_matrices():
    # Holomorphic in a: the forward mode is checked against complex finite differences, and
    # reverse mode through a real-valued function of the results.
    check_grads(lambda a: tuple(lax.linalg.eig(a)), (_C,), order=1, modes=("fwd",))
    f = lambda a: fnp.sum(fnp.abs(fnp.linalg.eig(a)[1][0]) ** 2 + fnp.real(  # noqa: E731
        fnp.linalg.eigvals(a) ** 2))
    check_grads(f, (_C.real,), order=2)


def test_derivatives_float32():
    check_grads(lambda a: tuple(fnp.linalg.eig(a)), (_A.astype(np.float32),), order=1)


def test_eigenvalue_derivative_is_the_left_right_formula():
    # dw_j = u_j^H dA v_j / (u_j^H v_j) (first-order perturbation theory), from NumPy's
    # eigenvectors: an oracle independent of the JVP rule's matrix form.
    da = _r.normal(size=(3, 3))
    _, dw = ft.jvp(fnp.linalg.eigvals, (_A,), (da,))
    w, v = np.linalg.eig(_A)
    ul = np.linalg.inv(v)  # rows: left eigenvectors scaled so that u_j^H v_j = 1
    np.testing.assert_allclose(dw, np.einsum("ji,ik,kj->j", ul, da, v), rtol=1e-12)


def test_eigenvector_tangent_matches_numpy_finite_differences():
    # NumPy's own normalization (unit norm, largest component real) differentiated: central
    # differences of np.linalg.eig, h = 1e-6 (truncation ~h^2, rounding ~eps/h: 1e-9).
    da = _r.normal(size=(3, 3))
    _, (dw, dv) = ft.jvp(lambda a: tuple(fnp.linalg.eig(a)), (_A,), (da,))
    (wp, vp), (wm, vm) = np.linalg.eig(_A + 1e-6 * da), np.linalg.eig(_A - 1e-6 * da)
    np.testing.assert_allclose(dw, (wp - wm) / 2e-6, atol=1e-7)
    np.testing.assert_allclose(dv, (vp - vm) / 2e-6, atol=1e-7)


def test_repeated_eigenvalues_give_non_finite_eigenvector_derivatives():
    # The eigenvectors of a repeated eigenvalue are not differentiable: the 1 / (w_j - w_i)
    # factor is infinite (JAX's eigh convention), not a silently wrong finite number.
    _, (dw, dv) = ft.jvp(lambda a: tuple(fnp.linalg.eig(a)), (np.eye(2),), (np.ones((2, 2)),))
    assert np.isfinite(dw).all() and not np.isfinite(dv).all()


# ---- transformations -----------------------------------------------------------------------------
def _assert_tree_equal(got, want):
    for g, w in zip(ft.tree_util.tree_leaves(got), ft.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
def test_vmap_matches_loop_and_jit_matches_eager(name):
    f, args = GRAD_CASES[name]
    xs = np.stack([args[0] * (1 + 0.05 * k) for k in range(3)])
    want = [f(x) for x in xs]
    want = ft.tree_util.tree_map(lambda *v: np.stack([np.asarray(u) for u in v]), *want)
    _assert_tree_equal(ft.vmap(f)(xs), want)
    _assert_tree_equal(ft.vmap(f, in_axes=-1, out_axes=0)(np.moveaxis(xs, 0, -1)), want)
    _assert_tree_equal(ft.jit(f)(args[0]), f(args[0]))
    _assert_tree_equal(ft.jit(ft.vmap(f))(xs), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_jit_matches_eager_for_every_dtype(dtype):
    a = np.random.default_rng(3).normal(size=(2, 3, 3)).astype(dtype)
    f = lambda a: (lambda w, v: (w * 2, v + 1))(*fnp.linalg.eig(a * 2))  # noqa: E731
    _assert_tree_equal(ft.jit(f)(a), f(a))


def test_grad_composes_with_jit_and_vmap():
    loss = lambda a: fnp.sum(fnp.real(fnp.linalg.eigvals(a)) ** 2  # noqa: E731
                             + fnp.abs(fnp.linalg.eig(a)[1][0, 0]))
    g = ft.grad(loss)(_A)
    np.testing.assert_allclose(ft.jit(ft.grad(loss))(_A), g, rtol=1e-12)
    np.testing.assert_allclose(ft.grad(ft.jit(loss))(_A), g, rtol=1e-12)
    batch = ft.vmap(ft.grad(loss))(_BATCH)
    for k in range(2):
        np.testing.assert_allclose(batch[k], ft.grad(loss)(_BATCH[k]), rtol=1e-12)
    jaxpr = str(ft.make_jaxpr(fnp.linalg.eigvals)(_A))
    assert "eig[" in jaxpr and "c128[3]" in jaxpr


def test_inside_control_flow_and_pmap():
    # A host step inside a compiled scan body, and per device under pmap (oracle: vmap).
    scan = ft.jit(lambda a: lax.scan(
        lambda c, x: (c + fnp.sum(fnp.abs(fnp.linalg.eigvals(x))), None), 0.0, a)[0])
    np.testing.assert_allclose(scan(_BATCH), np.abs(np.linalg.eigvals(_BATCH)).sum(),
                               rtol=1e-12)
    _assert_tree_equal(ft.pmap(fnp.linalg.eigvals)(_BATCH), ft.vmap(fnp.linalg.eigvals)(_BATCH))


# ---- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("call, err, match", [
    (lambda: fnp.linalg.eig(np.ones(3)), np.linalg.LinAlgError, "1-dimensional"),
    (lambda: fnp.linalg.eigvals(np.ones((2, 3))), np.linalg.LinAlgError, "square"),
    (lambda: fnp.linalg.eig(np.ones((2, 3), np.complex64)), np.linalg.LinAlgError, "square"),
    (lambda: fnp.linalg.eig(np.ones((2, 2), np.float16)), TypeError, "float16"),
    (lambda: lax.linalg.eig(np.ones(3)), ValueError, r"eig: expected a matrix.*f64\[3\]"),
    (lambda: lax.linalg.eig(np.ones((2, 2), np.int32)), TypeError, "eig: expected float32"),
])
def test_errors_name_the_problem(call, err, match):
    with pytest.raises(err, match=match):
        call()


# ---- roots and poly ------------------------------------------------------------------------------
@st.composite
def polynomials(draw):
    """Coefficients of a real polynomial with distinct roots (integers and conjugate pairs),
    scaled, with leading and trailing zeros."""
    reals = draw(st.lists(st.integers(-5, 5), unique=True, max_size=4))
    pairs = draw(st.lists(st.tuples(st.integers(-3, 3), st.integers(1, 3)), unique=True,
                          max_size=2))
    zs = [complex(r) for r in reals] + [c for a, b in pairs for c in (a + b * 1j, a - b * 1j)]
    p = np.atleast_1d(np.poly(np.array(zs))).real * draw(st.sampled_from([1.0, -2.5, 0.125]))
    lead, trail = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    return np.concatenate([np.zeros(lead), p, np.zeros(trail)])


def _match_roots(got, want):
    got, want = np.sort_complex(np.asarray(got)), np.sort_complex(np.asarray(want))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(polynomials())
def test_roots_match_numpy(p):
    got = fnp.roots(p)
    assert got.dtype == np.complex128
    _match_roots(got, np.roots(p))


def test_roots_under_jit_need_strip_zeros_false():
    p = np.array([2.0, -6.0, 4.0])
    f = ft.jit(lambda p: fnp.roots(p, strip_zeros=False))
    _match_roots(f(p), [1, 2])
    _match_roots(ft.vmap(lambda p: fnp.roots(p, strip_zeros=False))(np.stack([p, -p]))[1], [1, 2])
    with pytest.raises(ValueError, match="strip_zeros=False"):
        ft.jit(fnp.roots)(p)
    with pytest.raises(ValueError, match="rank-1"):
        fnp.roots(np.ones((2, 2)))
    assert fnp.roots(np.zeros(3)).shape == (0,) and fnp.roots(np.array([4.0])).shape == (0,)
    # A root's derivative with respect to a coefficient: d r / d c0 = -1 / p'(r) for p = x - c0
    # scaled; here p(x) = x^2 - 3x + c, root 2 moves by -1 / p'(2) = -1 per unit of c.
    droot = ft.jacfwd(lambda c: fnp.real(fnp.roots(fnp.stack([1.0, -3.0, c]),
                                                   strip_zeros=False)))(2.0)
    np.testing.assert_allclose(np.sort(np.asarray(droot)), [-1.0, 1.0], rtol=1e-12)


def test_poly_of_a_matrix_is_its_characteristic_polynomial():
    a = np.array([[1.0, 2.0, 0.0], [3.0, 4.0, 1.0], [0.0, 1.0, -2.0]])
    got = np.asarray(fnp.poly(a))
    assert got.dtype == np.complex128  # from complex eigenvalues, as in JAX
    np.testing.assert_allclose(got.real, np.poly(a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.imag, 0, atol=1e-12)
