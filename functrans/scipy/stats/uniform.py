"""The uniform distribution on ``[loc, loc + scale]`` (``jax.scipy.stats.uniform``).

    >>> pdf(fnp.array([0.5, 2.0]), 0.0, 1.0)
    Array([1., 0.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ._util import promote_inexact

__all__ = ["logpdf", "pdf", "cdf", "ppf"]


def logpdf(x, loc=0, scale=1):
    """``-log(scale)`` inside ``[loc, loc + scale]``, ``-inf`` outside.

    >>> logpdf(fnp.array([1.0, 3.0]), 0.0, 2.0)
    Array([-0.69314718,        -inf], dtype=float64)
    """
    x, loc, scale = promote_inexact(x, loc, scale)
    inside = (x >= loc) & (x <= loc + scale)
    return fnp.where(inside, -fnp.log(scale), -np.inf)


def pdf(x, loc=0, scale=1):
    """Density: ``1 / scale`` inside the interval, 0 outside.

    >>> pdf(fnp.array([1.0]), 0.0, 4.0)
    Array([0.25], dtype=float64)
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``(x - loc) / scale`` clipped to ``[0, 1]``.

    >>> cdf(fnp.array([-1.0, 0.25, 9.0]))
    Array([0.  , 0.25, 1.  ], dtype=float64)
    """
    x, loc, scale = promote_inexact(x, loc, scale)
    return fnp.clip((x - loc) / scale, 0.0, 1.0)


def ppf(q, loc=0, scale=1):
    """Quantile ``loc + q * scale`` (NaN for ``q`` outside ``[0, 1]``).

    >>> ppf(fnp.array([0.5, 1.5]), 1.0, 2.0)
    Array([ 2., nan], dtype=float64)
    """
    q, loc, scale = promote_inexact(q, loc, scale)
    return fnp.where((q >= 0) & (q <= 1), loc + q * scale, np.nan)
