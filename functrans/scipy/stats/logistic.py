"""The logistic distribution (``jax.scipy.stats.logistic``).

    >>> cdf(fnp.array([0.0]))
    Array([0.5], dtype=float64)
"""
from __future__ import annotations

from ... import numpy as fnp
from ..special import expit, logit
from ._util import promote_inexact

__all__ = ["logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf"]


def _z(x, loc, scale):
    x, loc, scale = promote_inexact(x, loc, scale)
    return (x - loc) / scale, scale


def _softplus(v):
    # log1p(exp(v)) without overflow: max(v, 0) + log1p(exp(-|v|)).
    return fnp.maximum(v, 0.0) + fnp.log1p(fnp.exp(-fnp.abs(v)))


def logpdf(x, loc=0, scale=1):
    """``-|z| - 2 log1p(exp(-|z|)) - log(scale)``: the symmetric form never overflows.

    >>> logpdf(fnp.array([0.0, 1000.0]))
    Array([  -1.38629436, -1000.        ], dtype=float64)
    """
    z, scale = _z(x, loc, scale)
    a = fnp.abs(z)
    return -a - 2.0 * fnp.log1p(fnp.exp(-a)) - fnp.log(scale)


def pdf(x, loc=0, scale=1):
    """Density ``exp(logpdf)``.

    >>> pdf(fnp.array([0.0]))
    Array([0.25], dtype=float64)
    """
    return fnp.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
    """``expit(z)``.

    >>> cdf(fnp.array([0.0, 2.0]), 0.0, 2.0)
    Array([0.5       , 0.73105858], dtype=float64)
    """
    z, _ = _z(x, loc, scale)
    return expit(z)


def logcdf(x, loc=0, scale=1):
    """``-softplus(-z)``, finite far into the lower tail.

    >>> logcdf(fnp.array([-800.0]))
    Array([-800.], dtype=float64)
    """
    z, _ = _z(x, loc, scale)
    return -_softplus(-z)


def sf(x, loc=0, scale=1):
    """``expit(-z)``.

    >>> sf(fnp.array([0.0]))
    Array([0.5], dtype=float64)
    """
    z, _ = _z(x, loc, scale)
    return expit(-z)


def logsf(x, loc=0, scale=1):
    """``-softplus(z)``.

    >>> logsf(fnp.array([800.0]))
    Array([-800.], dtype=float64)
    """
    z, _ = _z(x, loc, scale)
    return -_softplus(z)


def ppf(q, loc=0, scale=1):
    """Quantile ``loc + scale * logit(q)``.

    >>> ppf(fnp.array([0.5]), 3.0)
    Array([3.], dtype=float64)
    """
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc + scale * logit(q)


def isf(q, loc=0, scale=1):
    """Inverse survival function ``loc - scale * logit(q)``.

    >>> isf(fnp.array([0.5]))
    Array([0.], dtype=float64)
    """
    q, loc, scale = promote_inexact(q, loc, scale)
    return loc - scale * logit(q)
