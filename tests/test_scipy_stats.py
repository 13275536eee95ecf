"""functrans.scipy.stats and the incomplete gamma/beta functions against SciPy.

Tolerances. Closed-form densities are a handful of correctly rounded operations on top of
``lgamma``/``log1p``; SciPy evaluates the same formulas (or ones equal to rounding), so float64
results agree to ``RTOL64 = 1e-12`` relative (the log-densities are sums of terms of size up to
~10 whose rounding, ~10 * 1e-16, is far below it). The incomplete functions iterate to the
dtype's epsilon but their prefactor ``exp(a log x - x - lgamma(a))`` loses ~``eps * |a log x|``
relative, so they get ``1e-10`` for the parameter ranges used (a <= 200). float32 results are
compared with the float64 oracle at ``2e-5`` relative: the same ~100 eps bound for float32's
eps of 1.2e-7. Derivatives are checked with ``check_grads`` (central differences in float64,
its default tolerances).
"""
import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as ss
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans.scipy import special as fs
from functrans.scipy import stats
from functrans.testing import check_grads

RTOL64 = 1e-12
RTOL_INC = 1e-10
RTOL32 = 2e-5

X = np.array([-3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0])
Q = np.array([0.0, 1e-10, 0.01, 0.3, 0.5, 0.9, 1.0])
POS = np.array([0.0, 0.1, 0.5, 1.0, 2.0, 5.0, 30.0])
UNIT = np.array([0.0, 1e-6, 0.1, 0.5, 0.77, 0.999, 1.0])
K = np.array([-1.0, 0.0, 1.0, 2.0, 3.0, 10.0, 2.5])

# (functrans function, SciPy function, args, rtol): args broadcast against each other.
CASES = [
    (stats.norm.logpdf, ss.norm.logpdf, (X, 0.5, 2.0), RTOL64),
    (stats.norm.pdf, ss.norm.pdf, (X, 0.5, 2.0), RTOL64),
    (stats.norm.cdf, ss.norm.cdf, (X, 0.5, 2.0), RTOL64),
    (stats.norm.logcdf, ss.norm.logcdf, (X * 10, 0.5, 2.0), 1e-10),
    (stats.norm.sf, ss.norm.sf, (X, 0.5, 2.0), RTOL64),
    (stats.norm.logsf, ss.norm.logsf, (X * 10, 0.5, 2.0), 1e-10),
    (stats.norm.ppf, ss.norm.ppf, (Q, 0.5, 2.0), 1e-10),
    (stats.norm.isf, ss.norm.isf, (Q, 0.5, 2.0), 1e-10),
    (stats.uniform.logpdf, ss.uniform.logpdf, (X, -1.0, 3.0), RTOL64),
    (stats.uniform.pdf, ss.uniform.pdf, (X, -1.0, 3.0), RTOL64),
    (stats.uniform.cdf, ss.uniform.cdf, (X, -1.0, 3.0), RTOL64),
    (stats.uniform.ppf, ss.uniform.ppf, (Q, -1.0, 3.0), RTOL64),
    (stats.logistic.logpdf, ss.logistic.logpdf, (X * 100, 0.5, 2.0), RTOL64),
    (stats.logistic.pdf, ss.logistic.pdf, (X, 0.5, 2.0), RTOL64),
    (stats.logistic.cdf, ss.logistic.cdf, (X, 0.5, 2.0), RTOL64),
    (stats.logistic.logcdf, ss.logistic.logcdf, (X * 100, 0.5, 2.0), RTOL64),
    (stats.logistic.sf, ss.logistic.sf, (X, 0.5, 2.0), RTOL64),
    (stats.logistic.logsf, ss.logistic.logsf, (X * 100, 0.5, 2.0), RTOL64),
    (stats.logistic.ppf, ss.logistic.ppf, (Q, 0.5, 2.0), 1e-10),
    (stats.logistic.isf, ss.logistic.isf, (Q, 0.5, 2.0), 1e-10),
    (stats.gamma.logpdf, ss.gamma.logpdf, (X, np.array([[0.5], [1.0], [7.5]]), 0.0, 1.5),
     RTOL64),
    (stats.gamma.pdf, ss.gamma.pdf, (X, 2.0, -1.0, 1.5), RTOL64),
    (stats.gamma.cdf, ss.gamma.cdf, (X, np.array([[0.5], [1.0], [7.5]]), 0.0, 1.5), RTOL_INC),
    (stats.gamma.logcdf, ss.gamma.logcdf, (POS[1:], 3.0), RTOL_INC),
    (stats.gamma.sf, ss.gamma.sf, (X * 5, np.array([[0.5], [1.0], [7.5]])), RTOL_INC),
    (stats.gamma.logsf, ss.gamma.logsf, (POS, 3.0), RTOL_INC),
    (stats.beta.logpdf, ss.beta.logpdf, (UNIT[1:-1], np.array([[0.5], [2.0]]), 3.0), RTOL64),
    (stats.beta.logpdf, ss.beta.logpdf, (X, 2.0, 3.0, -3.0, 10.0), RTOL64),
    (stats.beta.pdf, ss.beta.pdf, (UNIT, 2.0, 3.0), RTOL64),
    (stats.beta.cdf, ss.beta.cdf, (UNIT, np.array([[0.5], [2.0], [40.0]]), 3.0), RTOL_INC),
    (stats.beta.logcdf, ss.beta.logcdf, (UNIT[1:], 2.0, 3.0), RTOL_INC),
    (stats.beta.sf, ss.beta.sf, (UNIT, np.array([[0.5], [2.0], [40.0]]), 3.0), RTOL_INC),
    (stats.beta.logsf, ss.beta.logsf, (UNIT[:-1], 2.0, 3.0), RTOL_INC),
    (stats.t.logpdf, ss.t.logpdf, (X, np.array([[0.5], [3.0], [1e4]]), 0.5, 2.0), 1e-11),
    (stats.t.pdf, ss.t.pdf, (X, 3.0, 0.5, 2.0), 1e-11),
    (stats.t.cdf, ss.t.cdf, (X, np.array([[0.5], [3.0], [50.0]]), 0.5, 2.0), RTOL_INC),
    (stats.t.sf, ss.t.sf, (X, np.array([[0.5], [3.0], [50.0]])), RTOL_INC),
    (stats.poisson.logpmf, ss.poisson.logpmf, (K, np.array([[0.0], [0.5], [4.0]])), RTOL64),
    (stats.poisson.pmf, ss.poisson.pmf, (K, 3.0), RTOL64),
    (stats.poisson.logpmf, ss.poisson.logpmf, (K, 3.0, 1.0), RTOL64),
    (stats.poisson.cdf, ss.poisson.cdf, (K, np.array([[0.5], [4.0], [60.0]])), RTOL_INC),
    (stats.bernoulli.logpmf, ss.bernoulli.logpmf, (K, np.array([[0.0], [0.3], [1.0]])),
     RTOL64),
    (stats.bernoulli.pmf, ss.bernoulli.pmf, (K, 0.3), RTOL64),
    (stats.bernoulli.cdf, ss.bernoulli.cdf, (K, 0.3), RTOL64),
    (stats.bernoulli.ppf, ss.bernoulli.ppf, (Q, np.array([[0.0], [0.3], [1.0]])), RTOL64),
    (fs.gammainc, sp.gammainc, (np.array([[0.01], [0.5], [3.0], [200.0]]), POS * 10),
     RTOL_INC),
    (fs.gammaincc, sp.gammaincc, (np.array([[0.01], [0.5], [3.0], [200.0]]), POS * 10),
     RTOL_INC),
    (fs.betainc, sp.betainc, (np.array([[0.05], [1.0], [30.0]]), np.array([[[0.2]], [[9.0]]]),
                              UNIT), RTOL_INC),
]


def _id(case):
    return f"{case[0].__module__.rsplit('.', 1)[-1]}.{case[0].__name__}"


@pytest.mark.parametrize("f, oracle, args, rtol", CASES, ids=[_id(c) for c in CASES])
def test_values_match_scipy_float64(f, oracle, args, rtol):
    with np.errstate(all="ignore"):
        expected = oracle(*args)
    got = np.asarray(f(*args))
    assert got.dtype == np.float64 and got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=1e-300)


@pytest.mark.parametrize("f, oracle, args, rtol", CASES[::3], ids=[_id(c) for c in CASES[::3]])
def test_values_float32(f, oracle, args, rtol):
    args32 = [np.asarray(a, np.float32) for a in args]
    with np.errstate(all="ignore"):
        expected = oracle(*[np.asarray(a, np.float64) for a in args32])
    got = np.asarray(f(*args32))
    assert got.dtype == np.float32
    # Tiny probabilities underflow float32's range differently: compare above 1e-30.
    np.testing.assert_allclose(got, expected.astype(np.float32), rtol=RTOL32, atol=1e-30)


@pytest.mark.parametrize("f, oracle, args, rtol", CASES[::4], ids=[_id(c) for c in CASES[::4]])
def test_jit_and_vmap_match_eager(f, oracle, args, rtol):
    arrays = [np.broadcast_to(a, np.broadcast_shapes(*(np.shape(b) for b in args)))
              for a in args]
    eager = np.asarray(f(*arrays))
    np.testing.assert_allclose(np.asarray(ft.jit(f)(*arrays)), eager, rtol=1e-13, atol=0)
    flat = [a.reshape(-1) for a in arrays]
    loop = np.array([np.asarray(f(*xs)) for xs in zip(*flat)])
    np.testing.assert_allclose(np.asarray(ft.vmap(f)(*flat)), loop, rtol=1e-13, atol=0)


# Derivatives of the log-densities with respect to every continuous argument, at interior
# points of the support (check_grads: JVP and VJP against central differences, 2nd order).
GRAD_CASES = [
    (stats.norm.logpdf, (0.3, 0.5, 2.0), 2),
    (stats.norm.logcdf, (-3.0, 0.5, 2.0), 2),
    (stats.logistic.logpdf, (0.3, 0.5, 2.0), 2),
    (stats.logistic.logcdf, (0.3, 0.5, 2.0), 2),
    (stats.gamma.logpdf, (1.7, 2.5, 0.1, 1.5), 2),
    (stats.beta.logpdf, (0.3, 2.5, 1.5), 2),
    (stats.t.logpdf, (0.3, 4.0, 0.5, 2.0), 2),
    (lambda mu: stats.poisson.logpmf(3.0, mu), (2.5,), 2),
    (lambda p: stats.bernoulli.logpmf(1.0, p), (0.3,), 2),
    (stats.uniform.logpdf, (0.3, -1.0, 3.0), 2),
    (stats.norm.ppf, (0.3, 0.5, 2.0), 1),
    # Incomplete-function derivatives in the shape parameters are first order (see _incomplete).
    (stats.gamma.cdf, (1.7, 2.5, 0.1, 1.5), 1),
    (stats.gamma.sf, (6.0, 2.5), 1),
    (stats.beta.cdf, (0.3, 2.5, 1.5), 1),
    (stats.beta.cdf, (0.8, 2.5, 1.5), 1),
    (stats.t.cdf, (0.7, 4.0), 1),
    (fs.gammainc, (40.0, 30.0), 1),
]


@pytest.mark.parametrize("f, args, order", GRAD_CASES,
                         ids=[f"{_id((f,))}-{i}" for i, (f, _, _) in enumerate(GRAD_CASES)])
def test_derivatives(f, args, order):
    check_grads(f, args, order, modes=("fwd", "rev"))


def test_incomplete_x_derivatives_higher_order():
    check_grads(lambda x: fs.gammainc(2.5, x), (1.3,), 3)
    check_grads(lambda x: fs.betainc(2.5, 1.5, x), (0.4,), 3)


def test_mvn_logpdf_grad_against_closed_form(rng):
    n = 4
    A = rng.normal(size=(n, n))
    cov = A @ A.T + n * np.eye(n)
    x, mean = rng.normal(size=n), rng.normal(size=n)
    gx, gm, gc = ft.grad(stats.multivariate_normal.logpdf, argnums=(0, 1, 2))(x, mean, cov)
    inv = np.linalg.inv(cov)
    y = x - mean
    np.testing.assert_allclose(gx, -inv @ y, rtol=1e-10)
    np.testing.assert_allclose(gm, inv @ y, rtol=1e-10)
    # d/dcov with cov treated as an unconstrained matrix: only the lower triangle is read.
    full = 0.5 * (np.outer(inv @ y, inv @ y) - inv)
    sym = np.asarray(gc) + np.asarray(gc).T - np.diag(np.diag(gc))
    np.testing.assert_allclose(np.tril(sym), np.tril(2 * full - np.diag(np.diag(full))),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("cov_kind", ["matrix", "batched", "scalar", "diagonal"])
def test_mvn_matches_scipy(rng, cov_kind):
    n = 3
    x = rng.normal(size=(5, n))
    mean = rng.normal(size=n)
    A = rng.normal(size=(n, n))
    cov = {"matrix": A @ A.T + np.eye(n), "scalar": 2.5,
           "diagonal": np.array([0.5, 1.0, 3.0]), "batched": None}[cov_kind]
    if cov_kind == "batched":
        covs = np.stack([(B := rng.normal(size=(n, n))) @ B.T + np.eye(n) for _ in range(5)])
        got = stats.multivariate_normal.logpdf(x, mean, covs)
        expected = [ss.multivariate_normal.logpdf(x[i], mean, covs[i]) for i in range(5)]
    else:
        got = stats.multivariate_normal.logpdf(x, mean, cov)
        expected = ss.multivariate_normal.logpdf(x, mean, cov)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-11)
    np.testing.assert_allclose(np.asarray(ft.jit(stats.multivariate_normal.pdf)(x, mean, cov
                                                                                if cov is not None
                                                                                else covs)),
                               np.exp(expected), rtol=1e-11)


def test_mvn_univariate_and_vmap(rng):
    np.testing.assert_allclose(stats.multivariate_normal.logpdf(0.3, 0.1, 2.0),
                               ss.multivariate_normal.logpdf(0.3, 0.1, 2.0), rtol=1e-12)
    x = rng.normal(size=(4, 2))
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    got = ft.vmap(stats.multivariate_normal.logpdf, (0, None, None))(x, np.zeros(2), cov)
    loop = [stats.multivariate_normal.logpdf(xi, np.zeros(2), cov) for xi in x]
    np.testing.assert_allclose(np.asarray(got), np.asarray(loop), rtol=1e-13)


@pytest.mark.parametrize("x, mean, cov, match", [
    (np.zeros(2), np.zeros(2), np.eye(3), r"must end in \(2, 2\)"),
    (np.zeros(3), np.zeros(2), np.eye(2), "x of shape"),
    (np.zeros(2), np.zeros(2), np.ones(3), "vector cov"),
    (0.0, 0.0, np.eye(2), "scalar mean needs a scalar cov"),
    (np.zeros(2), np.zeros(2), np.ones((2, 3)), r"must end in \(2, 2\)"),
])
def test_mvn_shape_errors(x, mean, cov, match):
    with pytest.raises(ValueError, match=match):
        stats.multivariate_normal.logpdf(x, mean, cov)


def test_mvn_allow_singular_is_rejected():
    with pytest.raises(NotImplementedError, match="allow_singular"):
        stats.multivariate_normal.logpdf(np.zeros(2), np.zeros(2), np.eye(2), True)


@given(st.floats(0.05, 50.0), st.floats(0.0, 100.0))
def test_gammainc_is_a_probability_and_complements(a, x):
    p, q = float(fs.gammainc(a, x)), float(fs.gammaincc(a, x))
    assert 0.0 <= p <= 1.0 and 0.0 <= q <= 1.0
    assert abs(p + q - 1.0) < 1e-13
    np.testing.assert_allclose(p, sp.gammainc(a, x), rtol=1e-9, atol=1e-300)


@given(st.floats(0.05, 30.0), st.floats(0.05, 30.0), st.floats(0.0, 1.0))
def test_betainc_matches_scipy(a, b, x):
    np.testing.assert_allclose(float(fs.betainc(a, b, x)), sp.betainc(a, b, x), rtol=1e-9,
                               atol=1e-300)


def test_stats_dtype_follows_promotion():
    assert stats.norm.logpdf(np.float32(1.0)).dtype == np.float32
    assert stats.gamma.logpdf(np.ones(2, np.float32), 2.0).dtype == np.float32
    assert stats.poisson.logpmf(np.arange(3), 2.0).dtype == np.float64
    assert stats.bernoulli.ppf(np.float32(0.5), np.float32(0.3)).dtype == np.float32
