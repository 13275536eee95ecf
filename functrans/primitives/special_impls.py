"""NumPy-callable kernels for special functions NumPy lacks (erf, erfc, erf_inv, lgamma,
digamma), compiled by Numba as ufuncs so eager evaluation runs at native speed.

The same scalar functions are reused by the jit lowering, so eager and jit agree bit for bit::

    >>> erf(np.array([0.0, 1.0]))
    array([0.        , 0.84270079])
"""
from __future__ import annotations

import math

import numba
import numpy as np

_SIGS_F = ["float64(float64)", "float32(float32)"]


@numba.njit(cache=True)
def erf_inv_scalar(y):
    """Inverse error function in float64: Giles' single-precision approximation refined by
    Newton steps (on log erfc near +-1, where erf's residual would cancel)."""
    if math.isnan(y) or y < -1.0 or y > 1.0:
        return math.nan
    if y == 1.0:
        return math.inf
    if y == -1.0:
        return -math.inf
    w = -math.log((1.0 - y) * (1.0 + y))
    if w < 5.0:
        w = w - 2.5
        p = 2.81022636e-08
        p = 3.43273939e-07 + p * w
        p = -3.5233877e-06 + p * w
        p = -4.39150654e-06 + p * w
        p = 0.00021858087 + p * w
        p = -0.00125372503 + p * w
        p = -0.00417768164 + p * w
        p = 0.246640727 + p * w
        p = 1.50140941 + p * w
    else:
        w = math.sqrt(w) - 3.0
        p = -0.000200214257
        p = 0.000100950558 + p * w
        p = 0.00134934322 + p * w
        p = -0.00367342844 + p * w
        p = 0.00573950773 + p * w
        p = -0.0076224613 + p * w
        p = 0.00943887047 + p * w
        p = 1.00167406 + p * w
        p = 2.83297682 + p * w
    x = p * y
    two_over_sqrt_pi = 1.1283791670955126
    for _ in range(4):
        d = two_over_sqrt_pi * math.exp(-x * x)
        if d == 0.0:
            break
        # Near +-1, erf(x) - y cancels and the initial guess is poor: take Newton steps on
        # log(erfc(+-x)) = log(1 -+ y) instead, which converge for exponentially small tails.
        if y > 0.5:
            c = math.erfc(x)
            step = -(math.log(c) - math.log1p(-y)) * c / d
        elif y < -0.5:
            c = math.erfc(-x)
            step = (math.log(c) - math.log1p(y)) * c / d
        else:
            step = (math.erf(x) - y) / d
        x = x - step
        if abs(step) <= 1e-17 * abs(x):
            break
    return x


@numba.njit(cache=True)
def digamma_scalar(x):
    """Digamma (psi) in float64: reflection for x < 0.5, recurrence up to x >= 10, then the
    asymptotic series. Poles (x = 0, -1, -2, ...) give nan, as in JAX."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    result = 0.0
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    if x < 0.5:
        # psi(x) = psi(1 - x) - pi / tan(pi x). tan has period 1: reducing x to [-1/2, 1/2]
        # first (exactly) keeps the rounding of pi * x from growing with |x| near the poles.
        result = -math.pi / math.tan(math.pi * (x - math.floor(x + 0.5)))
        x = 1.0 - x
    # The series below stops at x^-14; its first omitted term, 0.44 x^-16, is below float64
    # rounding only from x = 10 on (at 6 it would still be 1e-13).
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))))
    return result + math.log(x) - 0.5 * inv - series


# Bernoulli numbers B_2j / (2j)! for the Euler-Maclaurin tail of the Hurwitz zeta function.
_ZETA_TAIL = (1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160,
              -691.0 / 1307674368000, 1.0 / 74724249600, -3617.0 / 10670622842880000)


@numba.njit(cache=True)
def zeta_scalar(s, q):
    """Hurwitz zeta sum_k (q + k)^-s for s > 1: direct terms until q + k >= 10, then the
    Euler-Maclaurin tail (accurate to a few ulp in float64)."""
    if math.isnan(s) or math.isnan(q) or s <= 1.0:
        return math.nan if s < 1.0 or math.isnan(s) or math.isnan(q) else math.inf
    total = 0.0
    a = q
    # The tail's terms shrink like ((s + 2j) / (2 pi a))^2: with a >= 10 + s the eight terms
    # below reach float64 rounding for every s (a fixed a = 10 left 1e-13 errors at s = 6).
    while a < 10.0 + s:
        if a == 0.0:
            return math.inf
        if a < 0.0 and a == math.floor(a):
            return math.nan
        total += a ** -s
        a += 1.0
    total += a ** (1.0 - s) / (s - 1.0) + 0.5 * a ** -s
    fact = s * a ** (-s - 1.0)  # s (s+1) ... (s+2j-2) a^(-s-2j+1)
    for j in range(len(_ZETA_TAIL)):
        total += _ZETA_TAIL[j] * fact
        fact *= (s + 2 * j + 1) * (s + 2 * j + 2) / (a * a)
    return total


@numba.njit(cache=True)
def polygamma_scalar(m, x):
    """psi^(m)(x) = (-1)^(m+1) m! zeta(m+1, x) for integer m >= 1; digamma for m == 0."""
    if math.isnan(m) or m < 0.0 or m != math.floor(m):
        return math.nan
    if m == 0.0:
        return digamma_scalar(x)
    sign = 1.0 if int(m) % 2 == 1 else -1.0
    return sign * math.exp(math.lgamma(m + 1.0)) * zeta_scalar(m + 1.0, x)


def _vectorized(scalar_fn, sigs):
    """Build the ufunc on first use: importing functrans compiles nothing."""
    ufunc = None

    def apply(x: np.ndarray) -> np.ndarray:
        nonlocal ufunc
        if ufunc is None:
            ufunc = numba.vectorize(sigs, cache=True)(scalar_fn)
        if x.dtype == np.float16:  # Numba has no float16 math: compute in float32
            return ufunc(x.astype(np.float32)).astype(np.float16)
        # The float64 loop comes first, so float32 is computed in float64 and rounded once.
        return ufunc(x).astype(x.dtype, copy=False)

    return apply


def _erf(x):
    return math.erf(x)


def _erfc(x):
    return math.erfc(x)


def _lgamma(x):
    return math.lgamma(x)


def _erf_inv(x):
    return erf_inv_scalar(x)


def _digamma(x):
    return digamma_scalar(x)


def _vectorized2(scalar_fn):
    """Binary special functions, computed in float64 and rounded to the operands' dtype."""
    ufunc = None

    def apply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        nonlocal ufunc
        if ufunc is None:
            ufunc = numba.vectorize(["float64(float64, float64)"], cache=True)(scalar_fn)
        return ufunc(a.astype(np.float64), b.astype(np.float64)).astype(a.dtype)

    return apply


def _zeta(s, q):
    return zeta_scalar(s, q)


def _polygamma(m, x):
    return polygamma_scalar(m, x)


zeta = _vectorized2(_zeta)
polygamma = _vectorized2(_polygamma)
erf = _vectorized(_erf, _SIGS_F)
erfc = _vectorized(_erfc, _SIGS_F)
lgamma = _vectorized(_lgamma, _SIGS_F)
erf_inv = _vectorized(_erf_inv, _SIGS_F)
digamma = _vectorized(_digamma, _SIGS_F)
