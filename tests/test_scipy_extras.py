"""jax.scipy functions numpyro imports: linalg.toeplitz and special.expi, against SciPy."""
import numpy as np
import pytest
import scipy.linalg as sl
import scipy.special as ss

import functrans as ft
from functrans.scipy.linalg import toeplitz
from functrans.scipy.special import expi


def test_toeplitz_matches_scipy_and_batches():
    c, r = np.arange(1.0, 4.0), np.array([9.0, 5.0, 6.0, 7.0])
    np.testing.assert_array_equal(toeplitz(c, r), sl.toeplitz(c, r))
    np.testing.assert_array_equal(toeplitz(c), sl.toeplitz(c))
    batched = toeplitz(np.stack([c, 2 * c]), r)  # leading dimensions are batch dimensions
    np.testing.assert_array_equal(batched[1], sl.toeplitz(2 * c, r))
    # linear in c: the gradient of the sum counts each c[k]'s occurrences
    np.testing.assert_array_equal(ft.grad(lambda c: toeplitz(c, r).sum())(c), [3.0, 2.0, 1.0])


def test_expi_matches_scipy():
    x = np.array([-50.0, -3.0, -1.0, -1e-3, 1e-5, 0.5, 2.0, 10.0, 39.9, 40.1, 100.0, 700.0])
    np.testing.assert_allclose(expi(x), ss.expi(x), rtol=1e-13)
    np.testing.assert_array_equal(expi(np.array([0.0, np.inf, -np.inf, np.nan])),
                                  [-np.inf, np.inf, 0.0, np.nan])
    # Ei'(x) = exp(x) / x
    np.testing.assert_allclose(ft.grad(expi)(2.0), np.exp(2.0) / 2.0, rtol=1e-12)
    np.testing.assert_allclose(ft.jit(expi)(x), ss.expi(x), rtol=1e-13)


@pytest.mark.parametrize("name", ["i0e", "i1e", "i0", "i1"])
def test_modified_bessel_matches_scipy(name):
    import functrans.scipy.special as fs
    x = np.array([-31.0, -29.9, -3.0, -1.0, -1e-3, 0.0, 1e-5, 0.5, 2.0, 10.0, 29.9, 30.1, 45.0])
    if name.endswith("e"):
        x = np.concatenate([x, [-700.0, 700.0, 1e5]])
    ours, ref = getattr(fs, name), getattr(ss, name)
    np.testing.assert_allclose(ours(x), ref(x), rtol=2e-14, atol=1e-300)
    assert np.isnan(ours(np.array([np.nan]))[0])
    # i0e'(x) = i1e(x) - sign(x) i0e(x)
    if name == "i0e":
        np.testing.assert_allclose(ft.grad(ours)(1.5), ss.i1e(1.5) - ss.i0e(1.5), rtol=1e-12)


@pytest.mark.parametrize("bw", [None, "silverman", 0.3])
def test_gaussian_kde_matches_scipy(bw):
    import scipy.stats as st
    from functrans.scipy.stats import gaussian_kde
    rng = np.random.default_rng(0)
    data, w, points = rng.normal(size=(2, 20)), rng.random(20), rng.normal(size=(2, 5))
    ours, ref = gaussian_kde(data, bw_method=bw, weights=w), st.gaussian_kde(data, bw_method=bw, weights=w)
    np.testing.assert_allclose(ours.covariance, ref.covariance, rtol=1e-12)
    np.testing.assert_allclose(ours(points), ref(points), rtol=1e-12)
    np.testing.assert_allclose(ours.logpdf(points), ref.logpdf(points), rtol=1e-12)
    np.testing.assert_allclose(ours.integrate_gaussian(np.zeros(2), np.eye(2)),
                               ref.integrate_gaussian(np.zeros(2), np.eye(2)), rtol=1e-12)
    # a pytree: jit takes the estimator as an argument
    np.testing.assert_allclose(ft.jit(lambda k, p: k.logpdf(p))(ours, points), ref.logpdf(points),
                               rtol=1e-12)


def test_gaussian_kde_resample_moments_and_bad_input():
    from functrans.scipy.stats import gaussian_kde
    x = np.random.default_rng(1).normal(size=30)
    kde = gaussian_kde(x)
    s = np.asarray(kde.resample(ft.random.key(0), (4000,)))
    assert s.shape == (1, 4000)
    # mixture mean = data mean, variance = biased data variance + kernel variance; 4000 draws:
    # standard errors about 0.018 (mean) and 0.03 (variance), checked within 4 of them
    assert abs(s.mean() - x.mean()) < 4 * np.sqrt(1.3 / 4000)
    assert abs(s.var() - (x.var() + float(kde.covariance[0, 0]))) < 4 * 1.3 * np.sqrt(2 / 4000)
    with pytest.raises(ValueError, match="bw_method"):
        gaussian_kde(x, bw_method="bogus")
    with pytest.raises(ValueError, match="weights"):
        gaussian_kde(x, weights=np.ones(3))


def test_minimize_bfgs_rosenbrock_jit_vmap_and_bad_input():
    import functrans.numpy as fnp
    from functrans.scipy.optimize import minimize

    def rosen(x):
        return fnp.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    r = minimize(rosen, np.zeros(4), method="BFGS")
    assert bool(r.success) and int(r.status) == 0
    # counters and status: weak default ints, as JAX's (its loop starts them from Python ints)
    for c in (r.status, r.nfev, r.njev, r.nit):
        assert c.dtype == fnp.int64 and c.weak_type  # the tests run with x64
    # gtol 1e-5 on the gradient: near the minimum the Hessian's smallest eigenvalue is ~0.4,
    # so x is within ~1e-4 of (1, 1, 1, 1)
    np.testing.assert_allclose(r.x, np.ones(4), atol=1e-4)
    assert np.max(np.abs(r.jac)) <= 1e-5
    rj = ft.jit(lambda x0: minimize(rosen, x0, method="BFGS"))(np.zeros(4))
    np.testing.assert_allclose(rj.x, r.x, atol=1e-10)
    xs = ft.vmap(lambda a: minimize(lambda x: fnp.sum((x - a) ** 2), fnp.zeros(2),
                                    method="BFGS").x)(np.arange(3.0))
    np.testing.assert_allclose(xs, np.repeat(np.arange(3.0)[:, None], 2, 1), atol=1e-8)
    # iteration limit: status 1
    assert int(minimize(rosen, np.zeros(4), method="BFGS", options={"maxiter": 2}).status) == 1
    with pytest.raises(ValueError, match="BFGS"):
        minimize(rosen, np.zeros(4), method="Nelder-Mead")
    with pytest.raises(ValueError, match="one-dimensional"):
        minimize(rosen, np.zeros((2, 2)), method="BFGS")
