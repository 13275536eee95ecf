"""Gaussian kernel density estimation (``jax.scipy.stats.gaussian_kde``), as SciPy defines
it: a weighted mixture of normals centred on the data points, whose common covariance is the
data's (weighted) covariance times ``factor ** 2`` (Scott's rule by default).

    >>> kde = gaussian_kde(fnp.array([0.0, 1.0, 2.0, 3.0]))
    >>> fnp.round(kde.factor, 6), kde(fnp.array([1.5])).shape
    (Array(0.757858, dtype=float64), (1,))
"""
from __future__ import annotations

import math

import numpy as np

from ... import numpy as fnp
from ... import random
from ...lax import linalg as lax_linalg
from ...core.tree import register_pytree_node_class
from ..special import logsumexp, ndtr

__all__ = ["gaussian_kde"]


@register_pytree_node_class
class gaussian_kde:
    """Kernel density estimate of ``dataset`` (shape ``(d, n)``, or ``(n,)`` for d = 1).

    ``bw_method``: ``"scott"`` (default), ``"silverman"``, a number (the factor itself) or a
    callable taking the estimator and returning the factor. ``weights``: one per point.

        >>> gaussian_kde(fnp.array([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0]])).d
        2
    """

    def __init__(self, dataset, bw_method=None, weights=None):
        dataset = fnp.atleast_2d(fnp.asarray(dataset))
        if not fnp.issubdtype(dataset.dtype, fnp.inexact):
            dataset = dataset.astype(fnp.result_type(float))
        d, n = dataset.shape
        if n < 2:
            raise ValueError("gaussian_kde: the dataset needs more than one point")
        if weights is None:
            weights = fnp.full(n, 1.0 / n, dataset.dtype)
        else:
            weights = fnp.atleast_1d(fnp.asarray(weights)).astype(dataset.dtype)
            if weights.shape != (n,):
                raise ValueError(f"gaussian_kde: weights must have shape ({n},), got "
                                 f"{weights.shape}")
            weights = weights / weights.sum()
        self.dataset, self.weights = dataset, weights
        self.neff = 1.0 / fnp.sum(weights ** 2)
        self.set_bandwidth(bw_method)

    @property
    def d(self):
        return self.dataset.shape[0]

    @property
    def n(self):
        return self.dataset.shape[1]

    def tree_flatten(self):
        return (self.dataset, self.weights, self.neff, self.factor, self.covariance,
                self.inv_cov), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        (obj.dataset, obj.weights, obj.neff, obj.factor, obj.covariance,
         obj.inv_cov) = children
        return obj

    def scotts_factor(self):
        """Scott's rule: ``neff ** (-1 / (d + 4))``."""
        return self.neff ** (-1.0 / (self.d + 4))

    def silverman_factor(self):
        """Silverman's rule: ``(neff (d + 2) / 4) ** (-1 / (d + 4))``."""
        return (self.neff * (self.d + 2) / 4.0) ** (-1.0 / (self.d + 4))

    def set_bandwidth(self, bw_method=None):
        """Recompute ``factor``, ``covariance`` and ``inv_cov`` for a bandwidth rule."""
        if bw_method is None or bw_method == "scott":
            factor = self.scotts_factor()
        elif bw_method == "silverman":
            factor = self.silverman_factor()
        elif callable(bw_method):
            factor = bw_method(self)
        elif isinstance(bw_method, str):
            raise ValueError("gaussian_kde: bw_method must be 'scott', 'silverman', a number "
                             f"or a callable, got {bw_method!r}")
        else:
            factor = bw_method
        self.factor = fnp.asarray(factor, self.dataset.dtype)
        data_cov = fnp.atleast_2d(fnp.cov(self.dataset, rowvar=True, bias=False,
                                          aweights=self.weights))
        self.covariance = data_cov * self.factor ** 2
        self.inv_cov = fnp.linalg.inv(self.covariance)

    def _points(self, points):
        points = fnp.atleast_2d(fnp.asarray(points))
        if points.shape[0] != self.d:
            if points.shape == (1, self.d) or (self.d == 1 and points.ndim == 2
                                               and points.shape[1] == 1):
                points = points.T
            else:
                raise ValueError(f"gaussian_kde: points have dimension {points.shape[0]}, "
                                 f"the data {self.d}")
        return points.astype(fnp.result_type(points, self.dataset))

    def logpdf(self, points):
        """Log of the estimated density at each of ``points`` (shape ``(d, m)``).

            >>> kde = gaussian_kde(fnp.array([-1.0, 1.0]), bw_method=1.0)
            >>> fnp.round(kde.logpdf(fnp.array([0.0])), 6)
            Array([-1.515512], dtype=float64)
        """
        points = self._points(points)
        chol = lax_linalg.cholesky(self.covariance)
        # whitened differences: L^-1 (x_i - p_j) for every data point i and point j
        diff = self.dataset[:, :, None] - points[:, None, :]
        white = lax_linalg.triangular_solve(chol, diff.reshape(self.d, -1), left_side=True,
                                            lower=True)
        sq = fnp.sum(white ** 2, axis=0).reshape(self.n, points.shape[1])
        log_norm = fnp.sum(fnp.log(fnp.diagonal(chol))) + 0.5 * self.d * math.log(2 * math.pi)
        return logsumexp(-0.5 * sq - log_norm, axis=0, b=self.weights[:, None])

    def evaluate(self, points):
        """The estimated density at each of ``points`` (shape ``(d, m)``)."""
        return fnp.exp(self.logpdf(points))

    __call__ = evaluate
    pdf = evaluate

    def resample(self, key, shape=()):
        """Draw ``shape`` samples (result ``(d,) + shape``): a data point chosen by weight,
        plus normal noise of the kernel's covariance.

            >>> kde = gaussian_kde(fnp.array([0.0, 10.0]), bw_method=1e-6)
            >>> fnp.round(kde.resample(random.key(0), (3,)) / 10.0).shape
            (1, 3)
        """
        shape = tuple(shape)
        index_key, noise_key = random.split(key)
        index = random.choice(index_key, self.n, shape=shape, p=self.weights)
        noise = random.multivariate_normal(noise_key, fnp.zeros(self.d, self.dataset.dtype),
                                           self.covariance, shape=shape)
        return self.dataset[:, index] + fnp.moveaxis(noise, -1, 0)

    def integrate_gaussian(self, mean, cov):
        """Integral of the density times the normal density ``N(mean, cov)``."""
        mean = fnp.atleast_1d(fnp.asarray(mean))
        cov = fnp.atleast_2d(fnp.asarray(cov))
        total = self.covariance + cov
        chol = lax_linalg.cholesky(total)
        white = lax_linalg.triangular_solve(chol, self.dataset - mean[:, None], left_side=True,
                                            lower=True)
        log_norm = fnp.sum(fnp.log(fnp.diagonal(chol))) + 0.5 * self.d * math.log(2 * math.pi)
        return fnp.sum(self.weights * fnp.exp(-0.5 * fnp.sum(white ** 2, axis=0) - log_norm))

    def integrate_box_1d(self, low, high):
        """Probability mass between ``low`` and ``high`` (one-dimensional data only)."""
        if self.d != 1:
            raise ValueError("gaussian_kde.integrate_box_1d: the data must be one-dimensional")
        sd = fnp.sqrt(self.covariance[0, 0])
        lo = ndtr((low - self.dataset[0]) / sd)
        hi = ndtr((high - self.dataset[0]) / sd)
        return fnp.sum(self.weights * (hi - lo))
