"""The normal distribution (``jax.scipy.stats.norm``).

    >>> cdf(fnp.array([0.0]), loc=0.0, scale=2.0)
    Array([0.5], dtype=float64)
"""
from __future__ import annotations

import math

from ... import numpy as fnp
from ..special import log_ndtr, ndtr, ndtri
from ._util import promote_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def logpdf(x, loc=0, scale=1):
    """Log-density ``-z**2/2 - log(scale) - log(2 pi)/2`` with ``z = (x - loc) / scale``.

    >>> logpdf(fnp.array([0.0, 2.0]), 0.0, 2.0)
    Array([-1.61208571, -2.11208571], dtype=float64)
    """
    x, loc, scale = promote_inexact(x, loc, scale)
    z = (x - loc) / scale
    return -0.5 * z * z - fnp.log(scale) - _HALF_LOG_2PI


def pdf(x, loc=0, scale=1):
    """Density ``exp(logpdf)``.

    >>> pdf(fnp.array([0.0]))
    Array([0.39894228], dtype=float64)
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``P(X <= x)``.

    >>> cdf(fnp.array([-1.0, 0.0]))
    Array([0.15865525, 0.5       ], dtype=float64)
    """
    x, loc, scale = promote_inexact(x, loc, scale)
    return ndtr((x - loc) / scale)


def logcdf(x, loc=0, scale=1):
    """``log P(X <= x)``, accurate far into the lower tail.

    >>> logcdf(fnp.array([-40.0]))
    Array([-804.60844201], dtype=float64)
    """
    x, loc, scale = promote_inexact(x, loc, scale)
    return log_ndtr((x - loc) / scale)


def sf(x, loc=0, scale=1):
    """Survival function ``P(X > x)``, computed as ``cdf(-z)`` to keep the upper tail.

    >>> sf(fnp.array([10.0]))
    Array([7.61985302e-24], dtype=float64)
    """
    x, loc, scale = promote_inexact(x, loc, scale)
    return ndtr((loc - x) / scale)


def logsf(x, loc=0, scale=1):
    """``log P(X > x)``.

    >>> logsf(fnp.array([0.0]))
    Array([-0.69314718], dtype=float64)
    """
    x, loc, scale = promote_inexact(x, loc, scale)
    return log_ndtr((loc - x) / scale)


def ppf(q, loc=0, scale=1):
    """Quantile function, the inverse of :func:`cdf` (NaN outside ``[0, 1]``).

    >>> ppf(fnp.array([0.5, 0.975]))
    Array([0.       , 1.95996398], dtype=float64)
    """
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc + scale * ndtri(q)


def isf(q, loc=0, scale=1):
    """Inverse survival function: the ``x`` with ``sf(x) == q``.

    >>> isf(fnp.array([0.025]))
    Array([1.95996398], dtype=float64)
    """
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc - scale * ndtri(q)
