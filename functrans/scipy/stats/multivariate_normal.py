"""The multivariate normal distribution (``jax.scipy.stats.multivariate_normal``).

``cov`` may be a scalar (isotropic), a vector (the diagonal, as SciPy allows) or a matrix
``(..., n, n)``, factored by Cholesky decomposition. Leading axes of ``x``, ``mean`` and
``cov`` broadcast.

    >>> logpdf(fnp.zeros(2), fnp.zeros(2), fnp.eye(2))
    Array(-1.83787707, dtype=float64)
"""
from __future__ import annotations

import math

from ... import numpy as fnp
from ...lax import linalg as lax_linalg
from ...core.trace import get_aval
from ._util import promote_inexact

__all__ = ["logpdf", "pdf"]

_LOG_2PI = math.log(2 * math.pi)


def logpdf(x, mean, cov, allow_singular=None):
    """Log-density ``-(y^T cov^-1 y + log det cov + n log 2 pi) / 2`` with ``y = x - mean``.

    ``allow_singular`` is accepted for SciPy compatibility but only ``None``/``False`` is
    supported (a singular ``cov`` gives NaN). Shapes are checked: ``x`` and ``mean`` must
    end in the same ``n``, and a matrix ``cov`` must end in ``(n, n)``.

    >>> cov = fnp.array([[2.0, 0.5], [0.5, 1.0]])
    >>> logpdf(fnp.array([1.0, -1.0]), fnp.zeros(2), cov)
    Array(-3.2605421, dtype=float64)
    >>> logpdf(fnp.zeros(2), fnp.zeros(2), fnp.eye(3))
    Traceback (most recent call last):
        ...
    ValueError: multivariate_normal.logpdf: cov of shape (3, 3) does not match mean of shape (2,): a matrix cov must end in (2, 2)
    """
    if allow_singular:
        raise NotImplementedError("multivariate_normal.logpdf: allow_singular=True is not "
                                  "supported (it needs an eigendecomposition)")
    x, mean, cov = promote_inexact(x, mean, cov)
    xs, ms, cs = (get_aval(v).shape for v in (x, mean, cov))
    if not ms:  # univariate
        if cs:
            raise ValueError(f"multivariate_normal.logpdf: a scalar mean needs a scalar cov, "
                             f"got cov of shape {cs}")
        y = x - mean
        return -0.5 * (y * y / cov + fnp.log(cov) + _LOG_2PI)
    n = ms[-1]
    if not xs or xs[-1] != n:
        raise ValueError(f"multivariate_normal.logpdf: x of shape {xs} does not match mean of "
                         f"shape {ms}: both must end in the dimension {n}")
    y = x - mean
    if not cs:  # isotropic
        return -0.5 * (fnp.sum(y * y, axis=-1) / cov + n * (fnp.log(cov) + _LOG_2PI))
    if len(cs) == 1:
        if cs != (n,):
            raise ValueError(f"multivariate_normal.logpdf: a vector cov (the diagonal) must "
                             f"have shape ({n},), got {cs}")
        return -0.5 * (fnp.sum(y * y / cov, axis=-1) + fnp.sum(fnp.log(cov), axis=-1)
                       + n * _LOG_2PI)
    if cs[-2:] != (n, n):
        raise ValueError(f"multivariate_normal.logpdf: cov of shape {cs} does not match mean "
                         f"of shape {ms}: a matrix cov must end in ({n}, {n})")
    L = lax_linalg.cholesky(cov)
    z = lax_linalg.triangular_solve(L, y[..., None], left_side=True, lower=True)[..., 0]
    half_logdet = fnp.sum(fnp.log(fnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return -0.5 * (fnp.sum(z * z, axis=-1) + n * _LOG_2PI) - half_logdet


def pdf(x, mean, cov, allow_singular=None):
    """Density ``exp(logpdf)``.

    >>> pdf(fnp.zeros(2), fnp.zeros(2), 1.0)
    Array(0.15915494, dtype=float64)
    """
    return fnp.exp(logpdf(x, mean, cov, allow_singular))
