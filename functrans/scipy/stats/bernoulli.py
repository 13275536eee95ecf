"""The Bernoulli distribution with success probability ``p`` (``jax.scipy.stats.bernoulli``).

    >>> pmf(fnp.array([0, 1]), 0.25)
    Array([0.75, 0.25], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ..special import xlog1py, xlogy
from ._util import promote_inexact

__all__ = ["logpmf", "pmf", "cdf", "ppf"]


def logpmf(k, p, loc=0):
    """``log p`` at ``k - loc == 1``, ``log(1 - p)`` at 0, ``-inf`` elsewhere.

    >>> logpmf(fnp.array([0, 1, 2]), 0.5)
    Array([-0.69314718, -0.69314718,        -inf], dtype=float64)
    """
    k, p, loc = promote_inexact(k, p, loc)
    k = k - loc
    out = xlogy(k, p) + xlog1py(1 - k, -p)
    return fnp.where((k == 0) | (k == 1), out, -np.inf)


def pmf(k, p, loc=0):
    """``exp(logpmf)``.

    >>> pmf(fnp.array([1.0]), 0.3)
    Array([0.3], dtype=float64)
    """
    return fnp.exp(logpmf(k, p, loc))


def cdf(k, p, loc=0):
    """``P(K <= k)``: 0 below ``loc``, ``1 - p`` on ``[loc, loc + 1)``, then 1; NaN for ``p``
    outside ``[0, 1]``.

    >>> cdf(fnp.array([-0.5, 0.5, 1.0]), 0.25)
    Array([0.  , 0.75, 1.  ], dtype=float64)
    """
    k, p, loc = promote_inexact(k, p, loc)
    k = k - loc
    out = fnp.where(k < 0, 0.0, fnp.where(k < 1, 1 - p, 1.0))
    return fnp.where((p < 0) | (p > 1) | fnp.isnan(k), np.nan, out)


def ppf(q, p):
    """The smallest ``k`` with ``cdf(k) >= q``: 0 for ``q <= 1 - p``, else 1 (-1 at ``q = 0``,
    1 at ``q = 1`` and NaN outside ``[0, 1]``, as SciPy).

    >>> ppf(fnp.array([0.0, 0.5, 0.9]), 0.25)
    Array([-1.,  0.,  1.], dtype=float64)
    """
    q, p = promote_inexact(q, p)
    out = fnp.where(q > 1 - p, 1.0, 0.0)
    out = fnp.where(q == 0, -1.0, fnp.where(q == 1, 1.0, out))
    out = fnp.where((q < 0) | (q > 1) | (p < 0) | (p > 1), np.nan, out)
    return out.astype(fnp.result_type(q, p))  # all-constant branches would be weakly typed
