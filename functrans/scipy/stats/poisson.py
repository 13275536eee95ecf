"""The Poisson distribution with mean ``mu`` (``jax.scipy.stats.poisson``).

    >>> pmf(fnp.array([0.0, 1.0]), 1.0)
    Array([0.36787944, 0.36787944], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ... import numpy as fnp
from ..special import gammaincc, gammaln, xlogy
from ._util import promote_inexact

__all__ = ["logpmf", "pmf", "cdf"]


def logpmf(k, mu, loc=0):
    """``k log(mu) - mu - gammaln(k + 1)`` at ``k - loc``; ``-inf`` where that is negative or
    not an integer (``k`` may be an integer or float array).

    >>> logpmf(fnp.array([2, 3]), 2.0)
    Array([-1.30685282, -1.71231793], dtype=float64)
    >>> logpmf(fnp.array([0.5, -1.0]), 2.0)
    Array([-inf, -inf], dtype=float64)
    """
    k, mu, loc = promote_inexact(k, mu, loc)
    k = k - loc
    out = xlogy(k, mu) - gammaln(k + 1) - mu
    return fnp.where((k < 0) | (k != fnp.floor(k)), -np.inf, out)


def pmf(k, mu, loc=0):
    """``exp(logpmf)``.

    >>> pmf(fnp.array([1.0]), 0.0)
    Array([0.], dtype=float64)
    """
    return fnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
    """``P(K <= k) = gammaincc(floor(k - loc) + 1, mu)``, 0 below ``loc``.

    >>> cdf(fnp.array([-1.0, 0.0, 2.5]), 1.0)
    Array([0.        , 0.36787944, 0.9196986 ], dtype=float64)
    """
    k, mu, loc = promote_inexact(k, mu, loc)
    k = fnp.floor(k - loc)
    return fnp.where(k < 0, 0.0, gammaincc(fnp.maximum(k, 0.0) + 1, mu))
