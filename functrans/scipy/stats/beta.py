"""The beta distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.beta``).

    >>> pdf(fnp.array([0.5]), 2.0, 2.0)
    Array([1.5], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ..special import betainc, betaln, xlog1py, xlogy
from ._util import promote_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf"]


def logpdf(x, a, b, loc=0, scale=1):
    """``(a-1) log y + (b-1) log(1-y) - betaln(a, b) - log(scale)`` with
    ``y = (x - loc) / scale``; ``-inf`` outside ``[0, 1]``.

    >>> logpdf(fnp.array([0.25, 1.5]), 2.0, 3.0)
    Array([0.52324814,       -inf], dtype=float64)
    """
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    y = (x - loc) / scale
    out = xlogy(a - 1, y) + xlog1py(b - 1, -y) - betaln(a, b) - fnp.log(scale)
    return fnp.where((y < 0) | (y > 1), -np.inf, out)


def pdf(x, a, b, loc=0, scale=1):
    """Density ``exp(logpdf)``.

    >>> pdf(fnp.array([0.0, 0.5]), 1.0, 1.0)
    Array([1., 1.], dtype=float64)
    """
    return fnp.exp(logpdf(x, a, b, loc, scale))


def _y(x, a, b, loc, scale):
    x, a, b, loc, scale = promote_inexact(x, a, b, loc, scale)
    return fnp.clip((x - loc) / scale, 0.0, 1.0), a, b


def cdf(x, a, b, loc=0, scale=1):
    """``betainc(a, b, y)``.

    >>> cdf(fnp.array([0.5]), 2.0, 3.0)
    Array([0.6875], dtype=float64)
    """
    y, a, b = _y(x, a, b, loc, scale)
    return betainc(a, b, y)


def logcdf(x, a, b, loc=0, scale=1):
    """``log(cdf)``, as ``log1p(-sf)`` where the cdf is close to 1.

    >>> logcdf(fnp.array([0.5]), 1.0, 1.0)
    Array([-0.69314718], dtype=float64)
    """
    c, s = cdf(x, a, b, loc, scale), sf(x, a, b, loc, scale)
    # Near 1, log(cdf) would lose everything below cdf's ulp; log1p(-sf) keeps it.
    return fnp.where(c < 0.5, fnp.log(c), fnp.log1p(-s))


def sf(x, a, b, loc=0, scale=1):
    """``betainc(b, a, 1 - y)``, accurate near ``y = 1``.

    >>> sf(fnp.array([0.5]), 2.0, 3.0)
    Array([0.3125], dtype=float64)
    """
    y, a, b = _y(x, a, b, loc, scale)
    return betainc(b, a, 1 - y)


def logsf(x, a, b, loc=0, scale=1):
    """``log(sf)``, as ``log1p(-cdf)`` where the sf is close to 1.

    >>> logsf(fnp.array([0.5]), 1.0, 1.0)
    Array([-0.69314718], dtype=float64)
    """
    c, s = cdf(x, a, b, loc, scale), sf(x, a, b, loc, scale)
    return fnp.where(s < 0.5, fnp.log(s), fnp.log1p(-c))
