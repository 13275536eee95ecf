"""The gamma distribution with shape ``a`` (``jax.scipy.stats.gamma``).

    >>> pdf(fnp.array([1.0]), 1.0)
    Array([0.36787944], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ..special import gammainc, gammaincc, gammaln, xlogy
from ._util import promote_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, loc=0, scale=1):
    """``(a-1) log y - y - gammaln(a) - log(scale)`` with ``y = (x - loc) / scale``; ``-inf``
    below ``loc`` (and 0 at ``y = 0`` when ``a = 1``, from ``xlogy``).

    >>> logpdf(fnp.array([2.0, -1.0]), 3.0)
    Array([-1.30685282,        -inf], dtype=float64)
    """
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    y = (x - loc) / scale
    out = xlogy(a - 1, y) - y - gammaln(a) - fnp.log(scale)
    return fnp.where(y < 0, -np.inf, out)


def pdf(x, a, loc=0, scale=1):
    """Density ``exp(logpdf)``.

    >>> pdf(fnp.array([2.0]), 2.0, scale=2.0)
    Array([0.18393972], dtype=float64)
    """
    return fnp.exp(logpdf(x, a, loc, scale))


def _y(x, a, loc, scale):
    x, a, loc, scale = promote_inexact(x, a, loc, scale)
    return fnp.maximum((x - loc) / scale, 0.0), a


def cdf(x, a, loc=0, scale=1):
    """``gammainc(a, y)`` (differentiable in ``x``, ``a``, ``loc`` and ``scale``).

    >>> cdf(fnp.array([1.0, 3.0]), 2.0)
    Array([0.26424112, 0.80085173], dtype=float64)
    """
    y, a = _y(x, a, loc, scale)
    return gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
    """``log(cdf)``, as ``log1p(-sf)`` where the cdf is close to 1.

    >>> logcdf(fnp.array([1.0]), 1.0)
    Array([-0.45867515], dtype=float64)
    """
    c, s = cdf(x, a, loc, scale), sf(x, a, loc, scale)
    # Near 1, log(cdf) would lose everything below cdf's ulp; log1p(-sf) keeps it.
    return fnp.where(c < 0.5, fnp.log(c), fnp.log1p(-s))


def sf(x, a, loc=0, scale=1):
    """``gammaincc(a, y)``, accurate in the upper tail.

    >>> sf(fnp.array([40.0]), 2.0)
    Array([1.74182524e-16], dtype=float64)
    """
    y, a = _y(x, a, loc, scale)
    return gammaincc(a, y)


def logsf(x, a, loc=0, scale=1):
    """``log(sf)``, as ``log1p(-cdf)`` where the sf is close to 1.

    >>> logsf(fnp.array([1.0]), 1.0)
    Array([-1.], dtype=float64)
    """
    c, s = cdf(x, a, loc, scale), sf(x, a, loc, scale)
    return fnp.where(s < 0.5, fnp.log(s), fnp.log1p(-c))
