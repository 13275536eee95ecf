"""Student's t distribution with ``df`` degrees of freedom (``jax.scipy.stats.t``).

    >>> pdf(fnp.array([0.0]), 1.0)
    Array([0.31830989], dtype=float64)
"""
from __future__ import annotations

import math

from ... import numpy as fnp
from ..special import betainc, gammaln
from ._util import promote_inexact

__all__ = ["logpdf", "pdf", "cdf", "sf"]


def _log_gamma_ratio(h):
    """``gammaln(h + 1/2) - gammaln(h)``. For large ``h`` the two terms nearly cancel (at
    df = 1e4 float32 would keep ~3 digits), so there the asymptotic series
    ``log(h)/2 - 1/(8h) + 1/(192h^3) - 1/(640h^5)`` is used (truncation error < 1e-13 for
    h > 25)."""
    big = h > 25
    hb = fnp.where(big, h, 26.0)
    series = 0.5 * fnp.log(hb) - 1 / (8 * hb) + 1 / (192 * hb ** 3) - 1 / (640 * hb ** 5)
    hs = fnp.where(big, 1.0, h)
    return fnp.where(big, series, gammaln(hs + 0.5) - gammaln(hs))


def logpdf(x, df, loc=0, scale=1):
    """``gammaln((df+1)/2) - gammaln(df/2) - log(pi df)/2 - log(scale)
    - (df+1)/2 log1p(z**2 / df)``.

    >>> logpdf(fnp.array([0.0, 2.0]), 3.0)
    Array([-1.00088885, -2.69548457], dtype=float64)
    """
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    z = (x - loc) / scale
    return (_log_gamma_ratio(0.5 * df) - 0.5 * fnp.log(math.pi * df)
            - fnp.log(scale) - 0.5 * (df + 1) * fnp.log1p(z * z / df))


def pdf(x, df, loc=0, scale=1):
    """Density ``exp(logpdf)``.

    >>> pdf(fnp.array([1.0]), 2.0)
    Array([0.19245009], dtype=float64)
    """
    return fnp.exp(logpdf(x, df, loc, scale))


def _tail(x, df, loc, scale):
    """``P(T > |z|)`` = ``betainc(df/2, 1/2, df / (df + z**2)) / 2``, and ``z``."""
    x, df, loc, scale = promote_inexact(x, df, loc, scale)
    z = (x - loc) / scale
    return 0.5 * betainc(0.5 * df, 0.5, df / (df + z * z)), z


def cdf(x, df, loc=0, scale=1):
    """``P(T <= x)`` via the incomplete beta function (an extension: ``jax.scipy.stats.t``
    has only the densities).

    >>> cdf(fnp.array([0.0, 1.0]), 1.0)
    Array([0.5 , 0.75], dtype=float64)
    """
    tail, z = _tail(x, df, loc, scale)
    return fnp.where(z > 0, 1 - tail, tail)


def sf(x, df, loc=0, scale=1):
    """``P(T > x)``, accurate in the upper tail.

    >>> sf(fnp.array([1.0]), 1.0)
    Array([0.25], dtype=float64)
    """
    tail, z = _tail(x, df, loc, scale)
    return fnp.where(z > 0, tail, 1 - tail)
