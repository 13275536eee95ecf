"""The loop-based and matrix samplers of functrans.random: moments against SciPy, shapes,
dtypes, vmap over keys, gradients of gamma samples, and argument errors.

Statistical tolerances. With N samples, the sample mean differs from the true mean by
``sd / sqrt(N)`` (one standard error) typically; each check allows 5 standard errors
(two-sided probability ~6e-7 per check under the null), and keys are fixed, so the tests are
deterministic while a wrong parameterization (a mean off by 10%) still fails: at
N = 5,000, 5 SE of a unit-variance mean is 0.07 of a standard deviation. Variances are
checked through the mean of ``(x - mu)**2``, whose standard error is
``sqrt((m4 - var**2) / N)`` with the distribution's fourth central moment ``m4`` (from
SciPy's kurtosis).
"""
import math

import numpy as np
import pytest
import scipy.stats as ss

import functrans as ft
from functrans import random

N = 5000
KEY = random.key(2024)


def check_moments(x, dist):
    """Mean and variance of the samples ``x`` against a frozen SciPy distribution."""
    x = np.asarray(x, np.float64)
    mean, var, kurt = (float(v) for v in dist.stats(moments="mvk"))
    n = x.size
    assert abs(x.mean() - mean) <= 5 * math.sqrt(var / n), (x.mean(), mean)
    m4 = (kurt + 3) * var ** 2
    dev2 = (x - mean) ** 2
    assert abs(dev2.mean() - var) <= 5 * math.sqrt((m4 - var ** 2) / n), (dev2.mean(), var)


@pytest.mark.parametrize("a", [0.1, 0.7, 1.0, 3.5, 250.0])
def test_gamma_moments(a):
    check_moments(random.gamma(KEY, a, (N,)), ss.gamma(a))


def test_gamma_distribution_ks():
    # Kolmogorov-Smirnov catches shape errors that moments miss (e.g. in the a < 1 boost).
    x = np.asarray(random.gamma(KEY, 0.3, (N,)))
    assert ss.kstest(x, ss.gamma(0.3).cdf).pvalue > 1e-4


@pytest.mark.parametrize("sampler, args, dist", [
    (random.beta, (2.0, 3.0), ss.beta(2.0, 3.0)),
    (random.beta, (0.3, 0.5), ss.beta(0.3, 0.5)),
    (random.chisquare, (4.0,), ss.chi2(4.0)),
    (random.t, (7.0,), ss.t(7.0)),
    (random.f, (5.0, 12.0), ss.f(5.0, 12.0)),
    (random.poisson, (0.7,), ss.poisson(0.7)),
    (random.poisson, (8.0,), ss.poisson(8.0)),
    (random.poisson, (35.0,), ss.poisson(35.0)),
    (random.poisson, (4000.0,), ss.poisson(4000.0)),
    (random.binomial, (12.0, 0.3), ss.binom(12, 0.3)),
    (random.binomial, (200.0, 0.2), ss.binom(200, 0.2)),
    (random.binomial, (1000.0, 0.97), ss.binom(1000, 0.97)),
    (random.binomial, (30.0, 0.8), ss.binom(30, 0.8)),
])
def test_moments(sampler, args, dist):
    check_moments(sampler(KEY, *args, (N,)), dist)


def test_loggamma_matches_log_of_gamma_for_moderate_a():
    lg = np.asarray(random.loggamma(KEY, 2.0, (100,)))
    g = np.asarray(random.gamma(KEY, 2.0, (100,)))
    np.testing.assert_allclose(np.exp(lg), g, rtol=1e-14)
    tiny = np.asarray(random.loggamma(KEY, 1e-3, (1000,), "float32"))
    assert np.isfinite(tiny).all()


def test_dirichlet_moments():
    alpha = np.array([0.5, 2.0, 4.0])
    x = np.asarray(random.dirichlet(KEY, alpha, (N,)))
    assert x.shape == (N, 3)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-14)
    a0 = alpha.sum()
    for i in range(3):  # each marginal is Beta(alpha_i, a0 - alpha_i)
        check_moments(x[:, i], ss.beta(alpha[i], a0 - alpha[i]))


def test_multinomial_moments():
    p = np.array([0.1, 0.25, 0.65])
    x = np.asarray(random.multinomial(KEY, 40.0, p, shape=(N,)))
    assert x.shape == (N, 3) and (x.sum(-1) == 40).all() and (x >= 0).all()
    for i in range(3):  # marginals are Binomial(n, p_i)
        check_moments(x[:, i], ss.binom(40, p[i]))


@pytest.mark.parametrize("method", ["cholesky", "eigh", "svd"])
def test_multivariate_normal_moments(method):
    mean = np.array([1.0, -2.0, 0.5])
    A = np.array([[1.0, 0.0, 0.0], [0.5, 2.0, 0.0], [-0.3, 0.4, 0.7]])
    cov = A @ A.T
    x = np.asarray(random.multivariate_normal(KEY, mean, cov, (N,), method=method))
    assert x.shape == (N, 3)
    for i in range(3):
        check_moments(x[:, i], ss.norm(mean[i], math.sqrt(cov[i, i])))
    # Covariances: the product of the two standardized components has variance 1 + rho^2.
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        rho = cov[i, j] / math.sqrt(cov[i, i] * cov[j, j])
        zi = (x[:, i] - mean[i]) / math.sqrt(cov[i, i])
        zj = (x[:, j] - mean[j]) / math.sqrt(cov[j, j])
        assert abs((zi * zj).mean() - rho) <= 5 * math.sqrt((1 + rho ** 2) / N)


def test_orthogonal_is_orthogonal_and_haar():
    q = np.asarray(random.orthogonal(KEY, 4, (2000,)))
    assert q.shape == (2000, 4, 4)
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(4), q.shape),
                               atol=1e-13)
    # Haar: every entry has mean 0 and variance 1/n.
    check_moments(q[:, 0, 0], ss.beta(1.5, 1.5, loc=-1, scale=2))
    wide = np.asarray(random.orthogonal(KEY, 2, m=5))
    np.testing.assert_allclose(wide @ wide.T, np.eye(2), atol=1e-13)


@pytest.mark.parametrize("name, call", [
    ("gamma", lambda k, d: random.gamma(k, 2.0, (2, 3), d)),
    ("loggamma", lambda k, d: random.loggamma(k, 2.0, (2, 3), d)),
    ("beta", lambda k, d: random.beta(k, 2.0, 1.0, (2, 3), d)),
    ("chisquare", lambda k, d: random.chisquare(k, 2.0, (2, 3), d)),
    ("t", lambda k, d: random.t(k, 2.0, (2, 3), d)),
    ("f", lambda k, d: random.f(k, 2.0, 3.0, (2, 3), d)),
    ("binomial", lambda k, d: random.binomial(k, 10.0, 0.5, (2, 3), d)),
    ("multinomial", lambda k, d: random.multinomial(k, 5.0, [0.5, 0.5], shape=(2,), dtype=d)),
    ("dirichlet", lambda k, d: random.dirichlet(k, np.ones(3, d), (2,), d)),
    ("multivariate_normal", lambda k, d: random.multivariate_normal(k, [0.0, 0.0, 0.0],
                                                                      np.eye(3), (2,), d)),
    ("orthogonal", lambda k, d: random.orthogonal(k, 3, (2,), d)),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_shapes_dtypes_and_vmap_over_keys(name, call, dtype):
    x = call(KEY, dtype)
    expected_shape = {"multinomial": (2, 2), "dirichlet": (2, 3),
                      "multivariate_normal": (2, 3), "orthogonal": (2, 3, 3)}.get(name, (2, 3))
    assert x.shape == expected_shape and x.dtype == np.dtype(dtype)
    assert np.isfinite(np.asarray(x)).all()
    keys = random.split(KEY, 3)
    batched = np.asarray(ft.vmap(lambda k: call(k, dtype))(keys))
    loop = np.stack([np.asarray(call(k, dtype)) for k in keys])
    np.testing.assert_allclose(batched, loop, rtol=4 * np.finfo(dtype).eps,
                               atol=4 * np.finfo(dtype).eps)


def test_poisson_dtype_and_edge_cases():
    x = random.poisson(KEY, np.array([0.0, 3.0, -1.0]), dtype="int32")
    assert x.dtype == np.int32
    assert int(x[0]) == 0 and int(x[2]) == -1
    b = np.asarray(random.binomial(KEY, np.array([0.0, 7.0, 7.0, 5.0]),
                                   np.array([0.5, 0.0, 1.0, 1.5])))
    assert b[0] == 0 and b[1] == 0 and b[2] == 7 and np.isnan(b[3])


def test_matrix_samplers_jit_matches_eager():
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    f = lambda k: random.multivariate_normal(k, np.zeros(2), cov, (4,))  # noqa: E731
    np.testing.assert_allclose(np.asarray(ft.jit(f)(KEY)), np.asarray(f(KEY)), rtol=1e-13)
    g = lambda k: random.orthogonal(k, 3)  # noqa: E731
    np.testing.assert_allclose(np.asarray(ft.jit(g)(KEY)), np.asarray(g(KEY)), atol=1e-14)


def test_gamma_grad_by_implicit_reparameterization():
    # E[x] = a, so d/da of the sample mean is 1 in expectation; per-sample dx/da is checked
    # against the implicit-function formula evaluated with SciPy's incomplete gamma.
    g = float(ft.grad(lambda a: random.gamma(KEY, a, (N,)).mean())(2.5))
    assert abs(g - 1.0) < 0.05  # per-sample dx/da has sd ~0.6: 5 SE at N = 5000 is 0.04
    a = 1.7
    x = float(random.gamma(KEY, a))
    h = 1e-6
    dp_da = (ss.gamma.cdf(x, a + h) - ss.gamma.cdf(x, a - h)) / (2 * h)
    expected = -dp_da / ss.gamma.pdf(x, a)
    got = float(ft.grad(lambda a_: random.gamma(KEY, a_))(a))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    gb = ft.grad(lambda a_: random.beta(KEY, a_, 2.0, (N,)).mean())(2.0)
    assert abs(float(gb) - 2.0 / 16) < 0.02  # d/da a/(a+b) = b/(a+b)^2; sd ~0.15 per sample


@pytest.mark.parametrize("call, err, match", [
    (lambda: random.multivariate_normal(KEY, np.zeros(2), np.eye(3)), ValueError,
     r"must be \(2, 2\)"),
    (lambda: random.multivariate_normal(KEY, 0.0, np.eye(2)), ValueError, "at least one"),
    (lambda: random.multivariate_normal(KEY, np.zeros(2), np.ones(2)), ValueError,
     "at least two"),
    (lambda: random.multivariate_normal(KEY, np.zeros((3, 2)), np.eye(2), (4,)), ValueError,
     "broadcast"),
    (lambda: random.multivariate_normal(KEY, np.zeros(2), np.eye(2), method="lu"),
     ValueError, "method"),
    (lambda: random.gamma(KEY, np.ones(3), (2,)), ValueError, "broadcast"),
    (lambda: random.gamma(KEY, 1.0, (2,), "int32"), ValueError, "float dtype"),
    (lambda: random.poisson(KEY, 1.0, (2,), "float32"), ValueError, "int dtype"),
    (lambda: random.dirichlet(KEY, 1.0), ValueError, "at least one dimension"),
    (lambda: random.dirichlet(KEY, np.ones((2, 3)), (4,)), ValueError, "broadcast"),
    (lambda: random.multinomial(KEY, 5.0, 0.5), ValueError, "at least one dimension"),
    (lambda: random.orthogonal(KEY, -1), ValueError, "non-negative"),
])
def test_argument_errors(call, err, match):
    with pytest.raises(err, match=match):
        call()


def test_generalized_normal_and_ball_sample_their_distributions():
    # N = 20,000 samples. generalized_normal with p = 2 is normal with variance 1/2; p = 1 is
    # a Laplace, E|x| = 1: both estimates have standard error under 0.01, so 0.05 is over 5
    # standard errors. Points of the unit L_p ball in d dims lie inside it, and the fraction
    # within radius 1/2 is 2**-d (binomial standard error 0.003; tolerance 0.015).
    from functrans import random as fr
    x = np.asarray(fr.generalized_normal(fr.key(0), 2.0, (20000,)))
    assert abs(x.var() - 0.5) < 0.05
    x = np.asarray(fr.generalized_normal(fr.key(1), 1.0, (20000,)))
    assert abs(np.abs(x).mean() - 1.0) < 0.05
    b = np.asarray(fr.ball(fr.key(2), 2, shape=(20000,)))
    r = np.linalg.norm(b, axis=-1)
    assert b.shape == (20000, 2) and r.max() < 1 and abs((r < 0.5).mean() - 0.25) < 0.015
    b = np.asarray(fr.ball(fr.key(3), 3, p=1, shape=(20000,), dtype="float32"))
    r = np.abs(b).sum(-1)
    assert b.dtype == np.float32 and r.max() < 1 and abs((r < 0.5).mean() - 0.125) < 0.015
    with pytest.raises(ValueError, match="d must be positive"):
        fr.ball(fr.key(0), 0)
    with pytest.raises(ValueError, match="p must be a scalar"):
        fr.generalized_normal(fr.key(0), np.ones(2))
