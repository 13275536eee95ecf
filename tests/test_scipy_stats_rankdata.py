"""jax.scipy.stats.rankdata against scipy.stats.rankdata: every method, axis, ties, NaN,
under jit and vmap."""
import numpy as np
import pytest
import scipy.stats as ss

import functrans as ft
from functrans.scipy import stats

METHODS = ["average", "min", "max", "dense", "ordinal"]


@pytest.fixture
def tied():
    rng = np.random.default_rng(0)
    return rng.integers(0, 5, size=(4, 7)).astype(np.float64)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_matches_scipy(tied, method, axis):
    got = stats.rankdata(tied, method, axis=axis)
    want = ss.rankdata(tied, method, axis=axis)
    np.testing.assert_array_equal(np.asarray(got), want)
    assert np.asarray(got).dtype.kind == want.dtype.kind


@pytest.mark.parametrize("method", METHODS)
def test_ints_and_3d(method):
    a = np.random.default_rng(1).integers(-3, 3, size=(2, 3, 5))
    for axis in (None, 0, 1, 2):
        np.testing.assert_array_equal(np.asarray(stats.rankdata(a, method, axis=axis)),
                                      ss.rankdata(a, method, axis=axis))


@pytest.mark.parametrize("method", METHODS)
def test_jit_and_vmap(tied, method):
    f = ft.jit(lambda x: stats.rankdata(x, method))
    np.testing.assert_array_equal(np.asarray(f(tied[0])), ss.rankdata(tied[0], method))
    g = ft.vmap(lambda x: stats.rankdata(x, method=method))
    np.testing.assert_array_equal(np.asarray(g(tied)), ss.rankdata(tied, method, axis=1))
    h = ft.jit(ft.vmap(lambda x: stats.rankdata(x, method)), )
    np.testing.assert_array_equal(np.asarray(h(tied.T)), ss.rankdata(tied, method, axis=0).T)


def test_nan_propagates_for_average():
    a = np.array([[1.0, np.nan, 2.0], [3.0, 1.0, 1.0]])
    got = np.asarray(stats.rankdata(a, axis=1))
    np.testing.assert_array_equal(got, ss.rankdata(a, axis=1))
    assert np.isnan(got[0]).all() and not np.isnan(got[1]).any()


def test_errors():
    with pytest.raises(ValueError, match="unknown method"):
        stats.rankdata(np.ones(3), "mean")
    with pytest.raises(NotImplementedError):
        stats.rankdata(np.ones(3), nan_policy="omit")
    with pytest.raises(ValueError, match="nan_policy"):
        stats.rankdata(np.ones(3), nan_policy="skip")
