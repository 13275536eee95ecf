"""``functrans.scipy.special``: logsumexp and special functions with SciPy's names.

Every function is built from traceable primitives, so it works under all transformations::

    >>> logsumexp(fnp.array([0.0, 0.0]))
    Array(0.69314718, dtype=float64)
"""
from __future__ import annotations

import math

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core.trace import get_aval
from ..transforms.autodiff import custom_jvp
from ..numpy._core import asarray, convert, inexact_dtype, promote

__all__ = ["logsumexp", "erf", "erfc", "erfinv", "gammaln", "digamma", "expit", "logit",
           "xlogy", "xlog1py", "entr", "ndtr", "ndtri", "log_ndtr", "softmax", "log_softmax",
           "gamma", "betaln", "multigammaln", "sinc", "exp1", "expi", "i0e", "i1e", "i0", "i1", "polygamma", "zeta", "gammainc",
           "gammaincc", "betainc"]


def _float(x):
    x = asarray(x)
    return convert(x, inexact_dtype(get_aval(x).dtype), get_aval(x).weak_type)


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` over ``axis``, computed stably (shifted by the max).

    With ``return_sign`` also returns the sign of the sum (so ``b`` may be negative).

    >>> logsumexp(fnp.array([1000.0, 1000.0]))
    Array(1000.69314718, dtype=float64)
    """
    a = _float(a)
    if b is not None:
        a, b = fnp.broadcast_arrays(a, _float(b))
        a = fnp.where(b != 0, a, -np.inf)  # zero weights must not set the shift
    if where is not None:
        a = fnp.where(where, a, -np.inf)
    amax = fnp.max(a, axis=axis, keepdims=True, initial=-np.inf)
    amax = lax.stop_gradient(fnp.where(fnp.isfinite(amax), amax, 0.0))
    e = fnp.exp(a - amax)
    if b is not None:
        e = e * b
    s = fnp.sum(e, axis=axis, keepdims=True)
    sign = fnp.sign(s)
    out = fnp.log(fnp.abs(s)) + amax
    if not keepdims:
        axes = tuple(range(get_aval(a).ndim)) if axis is None else axis
        out = fnp.squeeze(out, axes)
        sign = fnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    return out


def erf(x):
    """Error function.

    >>> erf(fnp.array([0.0, 1.0]))
    Array([0.        , 0.84270079], dtype=float64)
    """
    return lax.erf(_float(x))


def erfc(x):
    """Complementary error function ``1 - erf(x)``, accurate where ``erf(x)`` is near 1.

    >>> erfc(fnp.array([0.0, 10.0]))
    Array([1.00000000e+00, 2.08848758e-45], dtype=float64)
    """
    return lax.erfc(_float(x))


def erfinv(x):
    """Inverse error function on [-1, 1].

    >>> erfinv(fnp.array([0.0, 0.5]))
    Array([0.        , 0.47693628], dtype=float64)
    """
    return lax.erf_inv(_float(x))


def gammaln(x):
    """``log|gamma(x)|``.

    >>> gammaln(fnp.array([1.0, 10.0]))
    Array([ 0.        , 12.80182748], dtype=float64)
    """
    return lax.lgamma(_float(x))


def gamma(x):
    """The gamma function, ``sign * exp(gammaln(x))`` (NaN at the poles 0, -1, -2, ... except
    that ``gamma(+-0) = +-inf``, as SciPy).

    >>> gamma(fnp.array([5.0, -0.5]))
    Array([24.       , -3.5449077], dtype=float64)
    """
    x = _float(x)
    floor = fnp.floor(x)
    sign = fnp.where((x > 0) | (floor % 2 == 0), 1.0, -1.0)
    out = sign * fnp.exp(lax.lgamma(x))
    pole = (x < 0) & (floor == x)
    out = fnp.where(pole | (x == -np.inf), np.nan, out)
    return fnp.where(x == 0, fnp.copysign(np.inf, x), out)


def digamma(x):
    """The digamma function ``d/dx log gamma(x)`` (``-inf`` at +0, ``inf`` at -0, NaN at the
    negative integers, as SciPy).

    >>> digamma(fnp.array([1.0]))
    Array([-0.57721566], dtype=float64)
    """
    x = _float(x)
    return fnp.where(x == 0, fnp.copysign(np.inf, -x), lax.digamma(x))


def polygamma(n, x):
    """The ``n``-th derivative of digamma (``n`` a non-negative integer).

    >>> polygamma(1, fnp.array([1.0]))
    Array([1.64493407], dtype=float64)
    """
    x = _float(x)
    n = convert(asarray(n), get_aval(x).dtype)
    return fnp.where(n == 0, digamma(x), lax.polygamma(n, x))


def zeta(x, q=None):
    """Hurwitz zeta ``sum_k (k + q)**-x`` (Riemann zeta when ``q`` is None).

    >>> zeta(fnp.array([2.0]), 1.0)
    Array([1.64493407], dtype=float64)
    """
    x = _float(x)
    q = fnp.ones_like(x) if q is None else _float(q)
    x, q = fnp.broadcast_arrays(*promote(x, q))
    return lax.zeta(x, q)


def betaln(a, b):
    """``log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)``.

    >>> betaln(fnp.array([1.0]), fnp.array([2.0]))
    Array([-0.69314718], dtype=float64)
    """
    a, b = _float(a), _float(b)
    return gammaln(a) + gammaln(b) - gammaln(a + b)


def multigammaln(a, d):
    """Log of the multivariate gamma function of dimension ``d`` (static).

    >>> multigammaln(fnp.array([2.0]), 1)
    Array([0.], dtype=float64)
    """
    a = _float(a)
    out = d * (d - 1) / 4 * math.log(math.pi)
    for j in range(d):
        out = out + gammaln(a - j / 2)
    return out


def expit(x):
    """Logistic sigmoid ``1 / (1 + exp(-x))``.

    >>> expit(fnp.array([0.0]))
    Array([0.5], dtype=float64)
    """
    return lax.logistic(_float(x))


def logit(x):
    """``log(x / (1 - x))``; near 1/2 it uses ``log1p(2x - 1) - log1p(1 - 2x)`` so the small
    result keeps its relative precision.

    >>> logit(fnp.array([0.5, 0.75]))
    Array([0.        , 1.09861229], dtype=float64)
    """
    x = _float(x)
    s = 2 * x - 1  # exact for x in [1/4, 1] (Sterbenz), where it is used
    middle = fnp.log1p(s) - fnp.log1p(-s)
    return fnp.where((x > 0.3) & (x < 0.65), middle, fnp.log(x / (1 - x)))


def xlogy(x, y):
    """``x * log(y)``, 0 where ``x == 0`` (unless ``y`` is NaN, as SciPy). Its derivatives
    are JAX's: ``log(y)`` in x and ``x / y`` in y, also at ``x == 0``.

    >>> xlogy(fnp.array([0.0, 2.0]), fnp.array([0.0, 3.0]))
    Array([0.        , 2.19722458], dtype=float64)
    >>> ft.grad(xlogy)(0.0, 2.0)
    Array(0.69314718, dtype=float64, weak_type=True)
    """
    return _xlogy(_float(x), _float(y))


def xlog1py(x, y):
    """``x * log1p(y)``, 0 where ``x == 0`` (unless ``y`` is NaN, as SciPy). Derivatives as
    JAX's: ``log1p(y)`` in x and ``x / (1 + y)`` in y.

    >>> xlog1py(fnp.array([0.0, 2.0]), fnp.array([-1.0, 1.0]))
    Array([0.        , 1.38629436], dtype=float64)
    """
    return _xlog1py(_float(x), _float(y))


@custom_jvp
def _xlogy(x, y):
    zero = (x == 0) & ~fnp.isnan(y)
    return fnp.where(zero, 0.0, x * fnp.log(fnp.where(zero, 1.0, y)))


@custom_jvp
def _xlog1py(x, y):
    zero = (x == 0) & ~fnp.isnan(y)
    return fnp.where(zero, 0.0, x * fnp.log1p(fnp.where(zero, 0.0, y)))


# Without the where's select, x == 0 would get derivative 0 in x (JAX: log(y)).
_xlogy.defjvp(lambda p, t: (_xlogy(*p), t[0] * fnp.log(p[1]) + t[1] * p[0] / p[1]))
_xlog1py.defjvp(lambda p, t: (_xlog1py(*p), t[0] * fnp.log1p(p[1]) + t[1] * p[0] / (1 + p[1])))


def entr(x):
    """Elementwise entropy ``-x log x`` (0 at 0, ``-inf`` for negative x).

    >>> entr(fnp.array([0.0, 0.5, -1.0]))
    Array([0.        , 0.34657359,       -inf], dtype=float64)
    """
    x = _float(x)
    out = fnp.where(x > 0, -xlogy(x, x), fnp.where(x == 0, 0.0, -np.inf))
    return fnp.where(fnp.isnan(x), x, out)


def ndtr(x):
    """Standard normal CDF ``(1 + erf(x / sqrt 2)) / 2``, computed as
    ``erfc(-x / sqrt 2) / 2`` to keep the lower tail's relative precision.

    >>> ndtr(fnp.array([0.0]))
    Array([0.5], dtype=float64)
    """
    x = _float(x)
    return 0.5 * lax.erfc(-x * (1 / math.sqrt(2)))


# Wichura's AS241 (Applied Statistics 37, 1988): rational approximations of the normal
# quantile, accurate to about 1e-16. Coefficients from the highest power down.
_AS241_CENTRAL = (
    (2.5090809287301226727e+3, 3.3430575583588128105e+4, 6.7265770927008700853e+4,
     4.5921953931549871457e+4, 1.3731693765509461125e+4, 1.9715909503065514427e+3,
     1.3314166789178437745e+2, 3.3871328727963666080e+0),
    (5.2264952788528545610e+3, 2.8729085735721942674e+4, 3.9307895800092710610e+4,
     2.1213794301586595867e+4, 5.3941960214247511077e+3, 6.8718700749205790830e+2,
     4.2313330701600911252e+1, 1.0))
_AS241_NEAR = (
    (7.74545014278341407640e-4, 2.27238449892691845833e-2, 2.41780725177450611770e-1,
     1.27045825245236838258e+0, 3.64784832476320460504e+0, 5.76949722146069140550e+0,
     4.63033784615654529590e+0, 1.42343711074968357734e+0),
    (1.05075007164441684324e-9, 5.47593808499534494600e-4, 1.51986665636164571966e-2,
     1.48103976427480074590e-1, 6.89767334985100004550e-1, 1.67638483018380384940e+0,
     2.05319162663775882187e+0, 1.0))
_AS241_FAR = (
    (2.01033439929228813265e-7, 2.71155556874348757815e-5, 1.24266094738807843860e-3,
     2.65321895265761230930e-2, 2.96560571828504891230e-1, 1.78482653991729133580e+0,
     5.46378491116411436990e+0, 6.65790464350110377720e+0),
    (2.04426310338993978564e-15, 1.42151175831644588870e-7, 1.84631831751005468180e-5,
     7.86869131145613259100e-4, 1.48753612908506148525e-2, 1.36929880922735805310e-1,
     5.99832206555887937690e-1, 1.0))


def _rational(coeffs, r):
    num, den = (fnp.zeros_like(r) + c[0] for c in coeffs)
    for cn, cd in zip(coeffs[0][1:], coeffs[1][1:]):
        num, den = num * r + cn, den * r + cd
    return num / den


def ndtri(p):
    """Inverse of :func:`ndtr` (the standard normal quantile), by Wichura's AS241 rational
    approximations: accurate in both tails, down to ``p = 1e-300``.

    >>> ndtri(fnp.array([0.5, 0.975]))
    Array([0.        , 1.95996398], dtype=float64)
    """
    p = _float(p)
    q = p - 0.5
    central = q * _rational(_AS241_CENTRAL, 0.180625 - q * q)
    tail = fnp.where(q <= 0, p, 1 - p)
    r = fnp.sqrt(-fnp.log(fnp.where((tail > 0) & (tail <= 0.5), tail, 0.5)))
    outer = fnp.where(r <= 5.0, _rational(_AS241_NEAR, r - 1.6), _rational(_AS241_FAR, r - 5.0))
    out = fnp.where(fnp.abs(q) <= 0.425, central, fnp.where(q < 0, -outer, outer))
    out = fnp.where(p == 0, -np.inf, fnp.where(p == 1, np.inf, out))
    return fnp.where((p < 0) | (p > 1) | fnp.isnan(p), np.nan, out)


def log_ndtr(x):
    """``log(ndtr(x))`` without underflow or cancellation: ``log1p(-ndtr(-x))`` for positive
    x and the asymptotic series of the Mills ratio in the far lower tail.

    >>> log_ndtr(fnp.array([-1.0, -40.0]))
    Array([  -1.84102165, -804.60844201], dtype=float64)
    """
    x = _float(x)
    lower = -10.0 if get_aval(x).dtype.itemsize <= 4 else -20.0
    upper_half = fnp.log1p(-ndtr(-fnp.maximum(x, 0.0)))
    middle = fnp.log(ndtr(fnp.clip(x, lower, 0.0)))
    t = fnp.minimum(x, lower)
    # log ndtr(t) = -t^2/2 - log(-t) - log(2 pi)/2 + log(1 + sum_n (-1)^n (2n-1)!! / t^(2n));
    # for |t| >= 10 the terms keep shrinking well past n = 10
    t2 = t * t
    total, term = fnp.zeros_like(t), fnp.ones_like(t)
    for n in range(1, 11):
        term = term * -(2 * n - 1) / t2
        total = total + term
    far = -0.5 * t2 - fnp.log(-t) - 0.5 * math.log(2 * math.pi) + fnp.log1p(total)
    return fnp.where(x > 0, upper_half, fnp.where(x > lower, middle, far))


def exp1(x):
    """Exponential integral ``E1(x) = integral_x^inf exp(-t) / t dt`` for real ``x >= 0``
    (NaN for negative x, as SciPy): the power series up to 1, a continued fraction beyond.

    >>> exp1(fnp.array([0.5, 2.0]))
    Array([0.55977359, 0.04890051], dtype=float64)
    """
    x = _float(x)
    small = fnp.where((x > 0) & (x <= 1), x, 1.0)
    # E1 = -gamma - log x - sum_k (-x)^k / (k k!)
    terms, t = [], fnp.ones_like(small)
    for k in range(1, 30):
        t = t * -small / k
        terms.append(t / k)
    s = terms[-1]
    for term in reversed(terms[:-1]):  # smallest first
        s = s + term
    series = -np.euler_gamma - fnp.log(small) - s
    # E1 = exp(-x) / (x + 1 - 1/(x + 3 - 4/(x + 5 - ...))), evaluated from the tail
    big = fnp.where(x > 1, x, 2.0)
    n = 120
    f = big + (2 * n + 1)
    for k in range(n, 0, -1):
        f = big + (2 * k - 1) - (k * k) / f
    fraction = fnp.exp(-big) / f
    out = fnp.where(x <= 1, series, fraction)
    out = fnp.where(x == 0, np.inf, fnp.where(x == np.inf, 0.0, out))
    return fnp.where((x < 0) | fnp.isnan(x), np.nan, out)


def expi(x):
    """Exponential integral ``Ei(x) = -integral_{-x}^inf exp(-t) / t dt`` for real ``x``
    (``-E1(-x)`` for negative x; the power series up to 40, the asymptotic series beyond).

    >>> expi(fnp.array([-1.0, 0.5, 2.0]))
    Array([-0.21938393,  0.4542199 ,  4.95423436], dtype=float64)
    """
    x = _float(x)
    negative = -exp1(fnp.where(x < 0, -x, 1.0))
    # Ei = gamma + log x + sum_k x^k / (k k!): all terms positive, no cancellation; 160 terms
    # make the tail below rounding at x = 40.
    small = fnp.where((x > 0) & (x <= 40), x, 1.0)
    t, terms = fnp.ones_like(small), []
    for k in range(1, 161):
        t = t * small / k
        terms.append(t / k)
    s = terms[-1]
    for term in reversed(terms[:-1]):  # smallest first
        s = s + term
    series = np.euler_gamma + fnp.log(small) + s
    # Ei ~ exp(x) / x * sum_k k! / x^k beyond 40 (25 terms: the next is below 1e-17)
    big = fnp.where(x > 40, x, 41.0)
    a, total = fnp.ones_like(big), fnp.ones_like(big)
    for k in range(1, 26):
        a = a * k / big
        total = total + a
    asymptotic = fnp.exp(big) / big * total
    out = fnp.where(x < 0, negative, fnp.where(x <= 40, series, asymptotic))
    out = fnp.where(x == 0, -np.inf, fnp.where(x == -np.inf, 0.0, out))
    out = fnp.where(x == np.inf, np.inf, out)
    return fnp.where(fnp.isnan(x), np.nan, out)


def _bessel_ie(x, order):
    # exp(-|x|) I_order(|x|) for order 0 or 1. Up to |x| = 30 the power series
    # sum_k (x/2)^(2k + order) / (k! (k + order)!) (positive terms: no cancellation; 80 terms
    # reach rounding at 30); beyond, Hankel's asymptotic series, whose terms still shrink fast.
    a = fnp.abs(x)
    small = fnp.where(a <= 30, a, 1.0)
    q = (small / 2) ** 2
    t = fnp.ones_like(small) if order == 0 else small / 2
    s = t
    for k in range(1, 81):
        t = t * q / (k * (k + order))
        s = s + t
    series = s * fnp.exp(-small)
    big = fnp.where(a > 30, a, 31.0)
    mu = 4.0 * order * order
    term, total = fnp.ones_like(big), fnp.ones_like(big)
    for k in range(1, 31):
        term = term * -(mu - (2 * k - 1) ** 2) / (8 * k * big)
        total = total + term
    asymptotic = total / fnp.sqrt(2 * np.pi * big)
    out = fnp.where(a <= 30, series, asymptotic)
    out = fnp.where(a == np.inf, 0.0, fnp.where(fnp.isnan(a), np.nan, out))
    return out if order == 0 else fnp.sign(x) * out


def i0e(x):
    """Exponentially scaled modified Bessel function of order 0: ``exp(-|x|) I0(x)``.

    >>> i0e(fnp.array([0.0, 1.0, 50.0]))
    Array([1.        , 0.46575961, 0.05656163], dtype=float64)
    """
    return _bessel_ie(_float(x), 0)


def i1e(x):
    """Exponentially scaled modified Bessel function of order 1: ``exp(-|x|) I1(x)``.

    >>> i1e(fnp.array([-1.0, 0.0, 50.0]))
    Array([-0.20791042,  0.        ,  0.05599312], dtype=float64)
    """
    return _bessel_ie(_float(x), 1)


def i0(x):
    """Modified Bessel function of order 0, ``I0(x) = exp(|x|) i0e(x)``.

    >>> i0(fnp.array([0.0, 1.0]))
    Array([1.        , 1.26606588], dtype=float64)
    """
    x = _float(x)
    return fnp.exp(fnp.abs(x)) * i0e(x)


def i1(x):
    """Modified Bessel function of order 1, ``I1(x) = exp(|x|) i1e(x)``.

    >>> i1(fnp.array([0.0, 1.0]))
    Array([0.       , 0.5651591], dtype=float64)
    """
    x = _float(x)
    return fnp.exp(fnp.abs(x)) * i1e(x)


# softmax and log_softmax are computed here for functrans.nn's too (nn is above scipy).
def _shift(x, axis, where):
    return lax.stop_gradient(fnp.max(x, axis=axis, keepdims=True, where=where, initial=-np.inf
                                     if where is not None else None))


def _softmax(x, axis, where=None):
    """``exp(x) / sum(exp(x))`` along ``axis`` of float ``x``, shifted by the max for
    stability (``where`` leaves elements out: 0 there)."""
    e = fnp.exp(x - _shift(x, axis, where))
    if where is not None:
        e = fnp.where(where, e, 0.0)
    return e / fnp.sum(e, axis=axis, keepdims=True)


def _log_softmax(x, axis, where=None):
    """``x - logsumexp(x)`` along ``axis`` of float ``x`` (``-inf`` where ``where`` is
    False, as JAX)."""
    shifted = x - _shift(x, axis, where)
    e = fnp.exp(shifted)
    if where is not None:
        e = fnp.where(where, e, 0.0)
    out = shifted - fnp.log(fnp.sum(e, axis=axis, keepdims=True))
    return out if where is None else fnp.where(where, out, -np.inf)


def softmax(x, axis=None):
    """``exp(x) / sum(exp(x))`` over ``axis`` (all axes when None, as SciPy).

    >>> softmax(fnp.array([0.0, 0.0]))
    Array([0.5, 0.5], dtype=float64)
    """
    x = _float(x)
    return _softmax(x, tuple(range(get_aval(x).ndim)) if axis is None else axis)


def log_softmax(x, axis=None):
    """``x - logsumexp(x)`` over ``axis`` (all axes when None, as SciPy).

    >>> log_softmax(fnp.array([0.0, 0.0]))
    Array([-0.69314718, -0.69314718], dtype=float64)
    """
    x = _float(x)
    return _log_softmax(x, tuple(range(get_aval(x).ndim)) if axis is None else axis)


def sinc(x):
    """Normalized sinc ``sin(pi x) / (pi x)``.

    >>> sinc(fnp.array([0.0, 0.5]))
    Array([1.        , 0.63661977], dtype=float64)
    """
    return fnp.sinc(x)


from ._incomplete import betainc, gammainc, gammaincc  # noqa: E402,F401  (they use _float)
