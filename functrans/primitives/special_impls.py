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
    """Inverse error function in float64: Giles' single-precision approximation refined by two
    Newton steps on erf (full double precision away from +-1)."""
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
    for _ in range(2):
        d = two_over_sqrt_pi * math.exp(-x * x)
        if d == 0.0:
            break
        x = x - (math.erf(x) - y) / d
    return x


@numba.njit(cache=True)
def digamma_scalar(x):
    """Digamma (psi) in float64: reflection for x < 0.5, recurrence up to x >= 6, then the
    asymptotic series. Poles (x = 0, -1, -2, ...) give nan, as in JAX."""
    if math.isnan(x) or x == -math.inf:
        return math.nan
    if x == math.inf:
        return math.inf
    result = 0.0
    if x <= 0.0 and x == math.floor(x):
        return math.nan
    if x < 0.5:
        # psi(x) = psi(1 - x) - pi / tan(pi x)
        result = -math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 6.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (
        1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760 - inv2 / 12.0))))))
    return result + math.log(x) - 0.5 * inv - series


def _vectorized(scalar_fn, sigs):
    """Build the ufunc on first use: importing functrans compiles nothing."""
    ufunc = None

    def apply(x: np.ndarray) -> np.ndarray:
        nonlocal ufunc
        if ufunc is None:
            ufunc = numba.vectorize(sigs, cache=True)(scalar_fn)
        if x.dtype == np.float16:  # Numba has no float16 math: compute in float32
            return ufunc(x.astype(np.float32)).astype(np.float16)
        return ufunc(x)

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


erf = _vectorized(_erf, _SIGS_F)
erfc = _vectorized(_erfc, _SIGS_F)
lgamma = _vectorized(_lgamma, _SIGS_F)
erf_inv = _vectorized(_erf_inv, _SIGS_F)
digamma = _vectorized(_digamma, _SIGS_F)
