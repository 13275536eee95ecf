"""functrans.nn.initializers: JAX's signatures, shapes, dtypes and the statistics each
initializer promises.

Statistical tolerances: variances are estimated from N = 40,000 samples; the sample variance
of a distribution with kurtosis k has relative standard error sqrt((k - 1) / N) <= 0.008 for
the normal (k = 3), uniform (1.8) and truncated normal (~2.4), so 5% (over 6 standard errors)
never fails for the fixed keys used and still catches a wrong scale factor (the smallest
plausible mistake, the truncation correction 0.88, is 12% in standard deviation).
"""
import math

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import random
from functrans.nn import initializers as init

KEY = random.key(42)


@pytest.mark.parametrize("name", ["glorot_uniform", "glorot_normal", "xavier_uniform",
                                  "xavier_normal", "lecun_uniform", "lecun_normal",
                                  "he_uniform", "he_normal", "kaiming_uniform",
                                  "kaiming_normal", "orthogonal"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_shapes_dtypes_and_jit(name, dtype):
    f = getattr(init, name)()
    w = f(KEY, (4, 6), dtype)
    assert w.shape == (4, 6) and w.dtype == np.dtype(dtype)
    w_jit = ft.jit(lambda k: f(k, (4, 6), dtype))(KEY)
    # Compiled reductions may reassociate: entries (all <= ~1 in size) agree to a few eps
    # absolutely, which for orthogonal's small entries is more than a few eps relatively.
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(np.asarray(w_jit), np.asarray(w), rtol=8 * eps, atol=8 * eps)


def test_vmap_over_keys_matches_loop():
    f = init.glorot_normal()
    keys = random.split(KEY, 3)
    batched = ft.vmap(lambda k: f(k, (3, 5)))(keys)
    loop = np.stack([np.asarray(f(k, (3, 5))) for k in keys])
    np.testing.assert_allclose(np.asarray(batched), loop, rtol=1e-13)


@pytest.mark.parametrize("factory, scale, mode", [
    (init.glorot_uniform, 1.0, "fan_avg"), (init.glorot_normal, 1.0, "fan_avg"),
    (init.lecun_uniform, 1.0, "fan_in"), (init.lecun_normal, 1.0, "fan_in"),
    (init.he_uniform, 2.0, "fan_in"), (init.he_normal, 2.0, "fan_in"),
])
def test_variance_scaling_statistics(factory, scale, mode):
    shape = (5, 5, 40, 40)  # fan_in = 5*5*40 = fan_out
    fan = 5 * 5 * 40
    w = np.asarray(factory()(KEY, shape))
    assert abs(w.var() * fan / scale - 1) < 0.05
    assert abs(w.mean()) < 6 * math.sqrt(scale / fan / w.size)


def test_fan_modes_and_axes():
    w = init.variance_scaling(1.0, "fan_out", "normal")(KEY, (100, 400))
    assert abs(float(w.var()) * 400 - 1) < 0.05
    w = init.variance_scaling(1.0, "fan_geo_avg", "uniform")(KEY, (100, 400))
    assert abs(float(w.var()) * 200 - 1) < 0.05
    # in_axis/out_axis pick the fans (here the first two axes), the rest is the receptive field
    w = init.variance_scaling(1.0, "fan_in", "normal", in_axis=0, out_axis=1)(KEY, (50, 8, 100))
    assert abs(float(w.var()) * 5000 - 1) < 0.05
    w = init.variance_scaling(1.0, "fan_in", "uniform", batch_axis=0)(KEY, (7, 400, 20))
    assert abs(float(w.var()) * 400 - 1) < 0.05
    bound = math.sqrt(3 / 400)
    assert float(fnp.abs(w).max()) <= bound


def test_truncated_normal_bounds():
    w = init.truncated_normal(0.5)(KEY, (10000,))
    assert float(fnp.abs(w).max()) < 1.0
    w = init.variance_scaling(1.0, "fan_in", "truncated_normal")(KEY, (100, 100))
    assert float(fnp.abs(w).max()) < 2 * 0.1 / 0.87962566103423978


def test_simple_initializers():
    assert np.array_equal(init.zeros(KEY, (2, 3)), np.zeros((2, 3)))
    assert init.ones(KEY, 3, "float32").dtype == np.float32
    assert np.array_equal(init.constant(2.5)(KEY, (2,)), [2.5, 2.5])
    u = np.asarray(init.uniform(3.0)(KEY, (20000,)))
    assert u.min() >= 0 and u.max() < 3.0 and abs(u.mean() - 1.5) < 6 * 3 / math.sqrt(12 * 20000)
    n = np.asarray(init.normal(0.1)(KEY, (20000,)))
    assert abs(n.std() / 0.1 - 1) < 0.05


@pytest.mark.parametrize("shape, column_axis", [((6, 6), -1), ((10, 4), -1), ((4, 10), -1),
                                                ((3, 3, 8, 16), -1), ((5, 12), 0)])
def test_orthogonal(shape, column_axis):
    w = np.asarray(init.orthogonal(scale=2.0, column_axis=column_axis)(KEY, shape))
    m = np.moveaxis(w, column_axis, -1).reshape(-1, shape[column_axis])
    gram = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(m.shape)), atol=1e-12)


def test_delta_orthogonal():
    w = np.array(init.delta_orthogonal()(KEY, (3, 5, 4, 6)))
    center = w[1, 2]
    np.testing.assert_allclose(center @ center.T, np.eye(4), atol=1e-12)
    w[1, 2] = 0
    assert not w.any()


@pytest.mark.parametrize("make, shape, match", [
    (lambda: init.glorot_uniform(), (5,), "at least 2 dimensions"),
    (lambda: init.variance_scaling(1.0, "fan_in", "normal", in_axis=3), (2, 2), "in_axis"),
    (lambda: init.orthogonal(), (4,), "at least a 2D"),
    (lambda: init.delta_orthogonal(), (3, 6, 4), "must not exceed"),
    (lambda: init.delta_orthogonal(), (2, 2, 4), "must be odd"),
    (lambda: init.delta_orthogonal(), (4, 4), "3D, 4D or 5D"),
])
def test_bad_shapes(make, shape, match):
    with pytest.raises(ValueError, match=match):
        make()(KEY, shape)


def test_bad_mode_and_distribution():
    with pytest.raises(ValueError, match="invalid mode"):
        init.variance_scaling(1.0, "fan_sum", "normal")
    with pytest.raises(ValueError, match="invalid distribution"):
        init.variance_scaling(1.0, "fan_in", "cauchy")


def test_every_initializer_is_an_initializer_and_other_callables_are_not():
    # jax.nn.initializers.Initializer is the (runtime-checkable) protocol libraries annotate
    # with (flax.typing); its factories' results satisfy it.
    from functrans.nn.initializers import Initializer
    assert isinstance(init.zeros, Initializer)
    assert isinstance(init.glorot_uniform(), Initializer)
    assert not isinstance(3, Initializer)
