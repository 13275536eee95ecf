"""functrans.nn and functrans.scipy.special against NumPy/SciPy oracles, eagerly and traced.

Tolerances. The oracle is evaluated in float64 (SciPy, or NumPy for plain formulas) and
rounded to the input's dtype; functrans computes in the input's dtype. A result may differ by

    ulps * eps * (|f(x)| + |x f'(x)|)

``ulps * eps * |f(x)|`` is the forward rounding of the few operations each function is made of
(each rounds once, to within 0.5 ulp), and ``ulps * eps * |x f'(x)|`` covers the same relative
rounding of intermediate arguments, which the function's conditioning amplifies near its
zeros and in steep tails (lgamma near 1 and 2, erfc for large x, ...): an error no larger than
perturbing x by a few ulps. ``ulps`` is 4 for float64 and float32 (a handful of correctly
rounded steps), and 8 for float16 (NumPy rounds every intermediate float16 result, and these
functions chain up to eight of them). Results in the subnormal range also get ``ulps``
subnormal steps per unit of |x|: a subnormal intermediate (sigmoid(-100) in float32, say) keeps
only an absolute precision of one subnormal step, which the remaining products scale by |x|.
"""
import math

import numpy as np
import pytest
import scipy.special as sp
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import nn
from functrans.scipy import special as fs
from functrans.testing import arrays, axes, check_against

ULPS = {np.dtype("float64"): 4, np.dtype("float32"): 4, np.dtype("float16"): 8}
FLOATS = ["float64", "float32", "float16"]
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def conditioned_atol(f_prime):
    """check_against's atol: the |x f'(x)| and subnormal parts of the tolerance above.

    ``f_prime`` gives f' in float64, or as a ``np.longdouble`` where it overflows float64
    (its product with eps is still representable)."""
    def atol(x, *rest):
        info = np.finfo(np.asarray(x).dtype)
        ulps = ULPS[np.asarray(x).dtype]
        x64 = np.asarray(x, np.float64)
        with np.errstate(all="ignore"):
            d = (ulps * info.eps * np.abs(x64 * f_prime(x64))).astype(np.float64)
        d = np.where(np.isfinite(d), d, 0.0)  # at poles and infinities only
        size = np.where(np.isfinite(x64), np.abs(x64), 0.0)
        return d + ulps * float(info.smallest_subnormal) * np.maximum(1.0, size)
    return atol


def in_dtype(oracle):
    """Evaluate ``oracle`` in float64 and round to the argument's dtype."""
    def f(x, *rest):
        with np.errstate(all="ignore"):
            return np.asarray(oracle(np.asarray(x, np.float64), *rest)).astype(np.asarray(x).dtype)
    return f


def grid(dtype, lo=-12.0, hi=12.0, n=801, extra=()):
    """A dense grid plus signed zeros, tiny values, large values and inf/nan."""
    base = np.concatenate([np.linspace(lo, hi, n), [0.0, -0.0, 1e-7, -1e-7, 30.0, -30.0],
                           np.asarray(extra, np.float64)])
    with np.errstate(over="ignore"):
        return base.astype(dtype)


SPECIALS = [np.inf, -np.inf, np.nan]


def sigmoid64(x):
    return sp.expit(x)


# name -> (functrans function, float64 oracle, derivative of the oracle)
ACTIVATIONS = {
    "relu": (nn.relu, lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0),
    "relu6": (nn.relu6, lambda x: np.clip(x, 0, 6), lambda x: ((x > 0) & (x < 6)) * 1.0),
    "sigmoid": (nn.sigmoid, sp.expit, lambda x: sigmoid64(x) * sigmoid64(-x)),
    "log_sigmoid": (nn.log_sigmoid, sp.log_expit, lambda x: sigmoid64(-x)),
    "silu": (nn.silu, lambda x: x * sp.expit(x),
             lambda x: sigmoid64(x) * (1 + x * sigmoid64(-x))),
    "swish": (nn.swish, lambda x: x * sp.expit(x),
              lambda x: sigmoid64(x) * (1 + x * sigmoid64(-x))),
    # (1 + tanh(z)) / 2 == sigmoid(2 z): the oracle uses the form without cancellation
    "gelu tanh": (nn.gelu, lambda x: x * sp.expit(2 * SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)),
                  lambda x: sigmoid64(2 * SQRT_2_OVER_PI * (x + 0.044715 * x ** 3)) * (
                      1 + x * sigmoid64(-2 * SQRT_2_OVER_PI * (x + 0.044715 * x ** 3))
                      * 2 * SQRT_2_OVER_PI * (1 + 3 * 0.044715 * x ** 2))),
    "gelu exact": (lambda x: nn.gelu(x, approximate=False), lambda x: x * sp.ndtr(x),
                   lambda x: sp.ndtr(x) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)),
    "softplus": (nn.softplus, lambda x: np.logaddexp(x, 0), sigmoid64),
    "sparse_plus": (nn.sparse_plus,
                    lambda x: np.where(x <= -1, 0, np.where(x >= 1, x, (x + 1) ** 2 / 4)),
                    lambda x: np.where(x <= -1, 0, np.where(x >= 1, 1, (x + 1) / 2))),
    "squareplus": (nn.squareplus, lambda x: np.where(x >= 0, (x + np.sqrt(x * x + 4)) / 2,
                                                     2 / (np.sqrt(x * x + 4) - x)),
                   lambda x: (1 + x / np.sqrt(x * x + 4)) / 2),
    "mish": (nn.mish, lambda x: x * np.tanh(np.logaddexp(x, 0)),
             lambda x: np.tanh(np.logaddexp(x, 0))
             + x * sigmoid64(x) / np.cosh(np.logaddexp(x, 0)) ** 2),
    "soft_sign": (nn.soft_sign, lambda x: x / (np.abs(x) + 1), lambda x: 1 / (np.abs(x) + 1) ** 2),
    "elu": (nn.elu, lambda x: np.where(x > 0, x, np.expm1(x)),
            lambda x: np.where(x > 0, 1, np.exp(x))),
    "selu": (nn.selu, lambda x: 1.0507009873554804934193349852946 * np.where(
        x > 0, x, 1.6732632423543772848170429916717 * np.expm1(x)),
        lambda x: 1.0507 * np.where(x > 0, 1, 1.6733 * np.exp(x))),
    "celu": (lambda x: nn.celu(x, 0.7),
             lambda x: np.maximum(x, 0) + 0.7 * np.expm1(np.minimum(x, 0) / 0.7),
             lambda x: np.where(x > 0, 1, np.exp(np.minimum(x, 0) / 0.7))),
    "leaky_relu": (nn.leaky_relu, lambda x: np.where(x >= 0, x, 0.01 * x),
                   lambda x: np.where(x >= 0, 1, 0.01)),
    "hard_tanh": (nn.hard_tanh, lambda x: np.clip(x, -1, 1), lambda x: (np.abs(x) < 1) * 1.0),
    "hard_sigmoid": (nn.hard_sigmoid, lambda x: np.clip(x + 3, 0, 6) / 6,
                     lambda x: (np.abs(x) < 3) / 6),
    "hard_silu": (nn.hard_silu, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                  lambda x: np.clip(x + 3, 0, 6) / 6 + x * (np.abs(x) < 3) / 6),
    "hard_swish": (nn.hard_swish, lambda x: x * np.clip(x + 3, 0, 6) / 6,
                   lambda x: np.clip(x + 3, 0, 6) / 6 + x * (np.abs(x) < 3) / 6),
    "tanh": (nn.tanh, np.tanh, lambda x: 1 / np.cosh(x) ** 2),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activations(name, dtype):
    fn, oracle, deriv = ACTIVATIONS[name]
    x = grid(dtype, extra=SPECIALS)
    check_against(fn, in_dtype(oracle), x, ulps=ULPS[np.dtype(dtype)],
                  atol=conditioned_atol(deriv), signed_zeros=False)


def test_activations_keep_integer_inputs_as_floats():
    check_against(nn.sigmoid, lambda x: sp.expit(x.astype(np.float64)), np.arange(-3, 4),
                  ulps=4)
    check_against(nn.relu, lambda x: np.maximum(x, 0), np.arange(-3, 4))
    assert nn.relu(fnp.arange(-2, 2)).dtype == np.int64


def test_glu():
    x = np.linspace(-3, 3, 24).reshape(4, 6)
    for axis in (-1, 0):
        a, b = np.split(x, 2, axis)
        check_against(lambda v: nn.glu(v, axis=axis), lambda v: a * sp.expit(b), x, ulps=4)


# ---- softmax family ------------------------------------------------------------------------------
@given(st.sampled_from(["float64", "float32"]).flatmap(
    lambda d: arrays(np.dtype(d), min_dims=1, max_dims=3, min_side=1, max_side=4, bound=50)),
    st.data())
def test_softmax_log_softmax_logsumexp(x, data):
    axis = data.draw(axes(x.ndim, allow_none=False))
    if axis == ():
        return
    ulps = ULPS[x.dtype]
    # log_softmax = x - max - log(sum): the subtraction is exact-ish, its rounding is relative
    # to |x - max| + |log sum|, bounded by 2 |x| + 2 max|x| + log(n).
    scale = lambda v: ulps * np.finfo(v.dtype).eps * (  # noqa: E731
        np.abs(v) + np.max(np.abs(v), axis=axis, keepdims=True) + np.log(v.size))
    # softmax = exp(x - max) / sum: rounding x - max to the dtype is a relative error of
    # eps |x - max| / 2 in each exponential
    shifted = lambda v: ulps * np.finfo(v.dtype).eps * sp.softmax(  # noqa: E731
        v.astype(np.float64), axis=axis) * (np.abs(v - np.max(v, axis=axis, keepdims=True))
                                            + np.log(v.size))
    check_against(lambda v: nn.softmax(v, axis=axis), in_dtype(lambda v: sp.softmax(v, axis=axis)),
                  x, ulps=ulps, atol=shifted)
    check_against(lambda v: nn.log_softmax(v, axis=axis),
                  in_dtype(lambda v: sp.log_softmax(v, axis=axis)), x, ulps=ulps, atol=scale)
    keepdims = data.draw(st.booleans())
    check_against(lambda v: fs.logsumexp(v, axis=axis, keepdims=keepdims),
                  in_dtype(lambda v: sp.logsumexp(v, axis=axis, keepdims=keepdims)), x, ulps=ulps,
                  atol=lambda v: ulps * np.finfo(v.dtype).eps * np.log(v.size))


@pytest.mark.parametrize("shift", [0.0, 1e4, -1e4, 1e300])
def test_softmax_family_is_stable_at_large_inputs(shift):
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0]]) + shift
    eps4 = 4 * np.finfo(np.float64).eps
    check_against(nn.softmax, lambda v: sp.softmax(v, axis=-1), x, ulps=4)
    check_against(lambda v: fs.logsumexp(v, axis=1), lambda v: sp.logsumexp(v, axis=1), x,
                  ulps=4)
    check_against(nn.log_softmax, lambda v: sp.log_softmax(v, axis=-1), x, ulps=4,
                  atol=eps4 * (abs(shift) + 6))
    if abs(shift) < 1e300:
        check_against(fs.softmax, sp.softmax, x, ulps=4)  # axis=None: the whole array
        check_against(fs.log_softmax, sp.log_softmax, x, ulps=4, atol=eps4 * (abs(shift) + 6))


def test_softmax_family_with_infinities():
    x = np.array([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0.0, -np.inf]])
    check_against(lambda v: fs.logsumexp(v, axis=1), lambda v: sp.logsumexp(v, axis=1), x, ulps=4)
    check_against(nn.softmax, lambda v: sp.softmax(v, axis=-1), x[:1], ulps=4)
    check_against(nn.log_softmax, lambda v: sp.log_softmax(v, axis=-1), x[:1], ulps=4)


def test_logsumexp_weights_and_sign():
    a = np.array([[1.0, 2.0, 1000.0], [0.5, -3.0, 2.0]])
    b = np.array([[-1.0, 0.5, 0.0], [2.0, 0.0, -0.25]])
    check_against(lambda a, b: fs.logsumexp(a, b=b, axis=1, return_sign=True),
                  lambda a, b: sp.logsumexp(a, b=b, axis=1, return_sign=True), a, b, ulps=4)
    check_against(lambda a, b: fs.logsumexp(a, axis=None, b=b, return_sign=True),
                  lambda a, b: sp.logsumexp(a, b=b, return_sign=True), a, b, ulps=4)
    check_against(lambda a: fs.logsumexp(a, b=np.array([1.0, -1.0, 0.0]), return_sign=True),
                  lambda a: sp.logsumexp(a, b=np.array([1.0, -1.0, 0.0]), return_sign=True),
                  np.array([0.0, 0.0, 3.0]), ulps=4)  # a zero sum: -inf with sign 0
    assert nn.logsumexp is fs.logsumexp


def test_where_masks():
    x = np.array([[1.0, 5.0, 2.0], [0.0, -1.0, 3.0]])
    w = np.array([[True, False, True], [False, True, True]])
    masked = np.where(w, x, -np.inf)
    check_against(lambda v: nn.softmax(v, where=w), lambda v: sp.softmax(masked, axis=-1), x,
                  ulps=4)
    check_against(lambda v: nn.log_softmax(v, where=w), lambda v: sp.log_softmax(masked, axis=-1),
                  x, ulps=4)
    check_against(lambda v: fs.logsumexp(v, axis=1, where=w),
                  lambda v: sp.logsumexp(masked, axis=1), x, ulps=4)


def test_standardize():
    x = np.linspace(-2, 5, 24).reshape(2, 3, 4) ** 2
    for axis in (-1, (0, 2)):
        check_against(lambda v: nn.standardize(v, axis=axis),
                      lambda v: (v - v.mean(axis, keepdims=True))
                      / np.sqrt(v.var(axis, keepdims=True) + 1e-5), x, ulps=8)
    mean, var = np.full((2, 3, 1), 1.0), np.full((2, 3, 1), 4.0)
    check_against(lambda v: nn.standardize(v, mean=mean, variance=var, epsilon=0.0),
                  lambda v: (v - 1.0) / 2.0, x, ulps=1)


@pytest.mark.parametrize("dtype,x_dtype", [(None, "int64"), ("float32", "int32"),
                                           ("int8", "uint8"), ("bool", "int64")])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot(dtype, x_dtype, axis):
    x = np.array([[0, 2, 5], [1, 9, 3]], dtype=x_dtype)  # 9 is past num_classes: all zeros
    if np.dtype(x_dtype).kind == "i":
        x[0, 0] = -1  # negative: all zeros
    expected = (np.expand_dims(x, axis) == np.expand_dims(
        np.arange(6), [d for d in range(3) if d != axis % 3])).astype(dtype or np.float64)
    check_against(lambda v: nn.one_hot(v, 6, dtype=dtype, axis=axis), lambda v: expected, x)


def test_one_hot_many_classes_with_a_small_index_dtype():
    x = np.array([0, 255], dtype=np.uint8)
    expected = np.eye(300)[[0, 255]]
    check_against(lambda v: nn.one_hot(v, 300), lambda v: expected, x)


# ---- scipy.special ---------------------------------------------------------------------------------
def gamma_prime(x):
    """Gamma' = Gamma * digamma, in long double: near x = 171.6 it exceeds float64's range."""
    sign = np.sign(sp.gamma(x))
    return sign * np.exp(np.longdouble(sp.gammaln(x))) * sp.digamma(x)


# name -> (functrans, scipy, derivative of scipy's function, domain of the grid)
SPECIAL = {
    "erf": (fs.erf, sp.erf, lambda x: 2 / math.sqrt(math.pi) * np.exp(-x * x), (-6, 6)),
    # (SciPy flushes erfc to 0 from x = 26.55 on, where the true value is still subnormal)
    "erfc": (fs.erfc, sp.erfc, lambda x: -2 / math.sqrt(math.pi) * np.exp(-x * x), (-6, 26.5)),
    "erfinv": (fs.erfinv, sp.erfinv,
               lambda y: math.sqrt(math.pi) / 2 * np.exp(sp.erfinv(y) ** 2), (-1, 1)),
    "gammaln": (fs.gammaln, sp.gammaln, sp.digamma, (-12.5, 40)),
    "gamma": (fs.gamma, sp.gamma, gamma_prime, (-12.5, 30)),
    "digamma": (fs.digamma, sp.digamma, lambda x: sp.polygamma(1, x), (-12.5, 40)),
    "expit": (fs.expit, sp.expit, lambda x: sp.expit(x) * sp.expit(-x), (-40, 40)),
    "logit": (fs.logit, sp.logit, lambda p: 1 / (p * (1 - p)), (0, 1)),
    "ndtr": (fs.ndtr, sp.ndtr, lambda x: np.exp(-x * x / 2) / math.sqrt(2 * math.pi),
             (-37.5, 9)),
    "ndtri": (fs.ndtri, sp.ndtri, lambda p: math.sqrt(2 * math.pi) * np.exp(sp.ndtri(p) ** 2 / 2),
              (0, 1)),
    "log_ndtr": (fs.log_ndtr, sp.log_ndtr, lambda x: np.exp(-x * x / 2 - sp.log_ndtr(x))
                 / math.sqrt(2 * math.pi), (-60, 12)),
    "entr": (fs.entr, sp.entr, lambda x: -np.log(np.abs(x)) - 1, (-1, 5)),
    "exp1": (fs.exp1, sp.exp1, lambda x: -np.exp(-x) / x, (-1, 60)),
    "sinc": (fs.sinc, np.sinc, lambda x: np.where(
        x == 0, 0, (np.cos(np.pi * x) * np.pi * x - np.sin(np.pi * x)) / (np.pi * x * x)),
        (-6, 6)),
}
SPECIAL_EXTRAS = {  # points SciPy defines specially: poles, tails, endpoints
    "gamma": [0.0, -0.0, -1.0, -3.0, 171.5, 172.0],
    "digamma": [0.0, -0.0, -1.0, -2.0],
    "gammaln": [0.0, -1.0, 1.0, 2.0],
    "erfinv": [1 - 1e-16, -1 + 1e-16, 1e-300, 1.0, -1.0, 1.5],
    "ndtri": [1e-300, 1e-20, 1e-8, 1 - 1e-16, 0.0, 1.0, -0.5, 2.0],
    "logit": [1e-300, 0.5, 1.0, 0.0, -1.0, 2.0],
    "log_ndtr": [-1e3, -40.0, 40.0],
    "exp1": [1e-300, 1e-8, 700.0, 800.0, 0.0],
}


# Error terms beyond the common tolerance, as multiples of ulps * eps (f is the oracle's value):
EXTRA_ERROR = {
    # SciPy's gammaln (Cephes lgam) documents an *absolute* error of about 2.4 eps where
    # |gammaln| < 1, i.e. near its roots 1 and 2 and its minimum at 1.46.
    "gammaln": lambda f: np.where(np.abs(f) < 1, 1.0, 0.0),
    # gamma = exp(gammaln): the absolute rounding of gammaln becomes a relative error of
    # |gammaln| = |log|gamma|| ulps.
    "gamma": lambda f: np.abs(f) * np.abs(np.log(np.abs(f))),
}


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", sorted(SPECIAL))
def test_special_functions(name, dtype):
    fn, oracle, deriv, (lo, hi) = SPECIAL[name]
    extra = [v for v in SPECIAL_EXTRAS.get(name, []) if dtype == "float64" or abs(v) < 1e30]
    x = grid(dtype, lo, hi, extra=extra + ([np.nan, np.inf] if name != "gammaln" else [np.nan]))
    base = conditioned_atol(deriv)

    def atol(v):
        scale = ULPS[v.dtype] * np.finfo(v.dtype).eps
        if name not in EXTRA_ERROR:
            return base(v)
        with np.errstate(all="ignore"):
            more = scale * EXTRA_ERROR[name](oracle(v.astype(np.float64)))
        return base(v) + np.where(np.isfinite(more), more, 0.0)

    check_against(fn, in_dtype(oracle), x, ulps=ULPS[np.dtype(dtype)], atol=atol,
                  signed_zeros=False)


def test_special_functions_on_float16_and_ints():
    x = np.linspace(-3, 3, 61).astype(np.float16)
    for fn, oracle in [(fs.erf, sp.erf), (fs.expit, sp.expit), (fs.ndtr, sp.ndtr)]:
        check_against(fn, in_dtype(oracle), x, ulps=8, atol=np.finfo(np.float16).eps)
    check_against(fs.gammaln, lambda v: sp.gammaln(v.astype(np.float64)), np.arange(1, 8), ulps=4)


@given(st.sampled_from(["float64", "float32"]).flatmap(
    lambda d: arrays(np.dtype(d), shape=(6,), bound=20)), st.data())
def test_binary_special_functions(x, data):
    y = data.draw(arrays(x.dtype, shape=(6,), bound=20))
    ulps = ULPS[x.dtype]
    y_pos = np.abs(y) + np.asarray(0.5, x.dtype)
    x_zero = np.where(np.arange(6) % 3 == 0, 0, x).astype(x.dtype)
    check_against(fs.xlogy, in_dtype(sp.xlogy), x_zero, y_pos, ulps=ulps)
    check_against(fs.xlog1py, in_dtype(sp.xlog1py), x_zero, y_pos, ulps=ulps)
    check_against(fs.betaln, in_dtype(sp.betaln), np.abs(x) + 0.5, y_pos, ulps=ulps,
                  atol=lambda a, b: ulps * np.finfo(a.dtype).eps * (
                      np.abs(sp.gammaln(a)) + np.abs(sp.gammaln(b)) + np.abs(sp.gammaln(a + b))
                      + np.abs(a * sp.digamma(a)) + np.abs(b * sp.digamma(b))
                      + np.abs((a + b) * sp.digamma(a + b))))


def test_xlogy_zero_and_nan_cases():
    x = np.array([0.0, 0.0, 0.0, 1.0, 2.0])
    y = np.array([0.0, -1.0, np.nan, 0.0, np.inf])
    check_against(fs.xlogy, sp.xlogy, x, y)
    check_against(fs.xlog1py, sp.xlog1py, x, y - 1)


def test_polygamma_zeta_multigammaln():
    x = np.linspace(0.25, 8, 32)
    for n in (0, 1, 2, 3):
        check_against(lambda v: fs.polygamma(n, v), lambda v: sp.polygamma(n, v), x, ulps=16,
                      atol=conditioned_atol(lambda v: sp.polygamma(n + 1, v)))
    check_against(lambda v: fs.zeta(v, 1.5), lambda v: sp.zeta(v, 1.5), x + 1.5, ulps=16)
    check_against(fs.zeta, sp.zeta, x + 1.5, ulps=16)
    for d in (1, 2, 3):
        check_against(lambda v: fs.multigammaln(v, d), lambda v: sp.multigammaln(v, d), x + 1,
                      ulps=8, atol=8 * np.finfo(np.float64).eps * 20)


def test_logsumexp_traced_inside_jaxpr():
    jaxpr = ft.make_jaxpr(lambda v: fs.logsumexp(v, axis=0))(np.ones((3, 2)))
    ft.check_jaxpr(jaxpr)
    assert "stop_gradient" in {e.prim.name for e in jaxpr.eqns}
