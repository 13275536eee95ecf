"""``functrans.scipy.stats``: the distributions of ``jax.scipy.stats``, written with
``functrans.numpy`` and ``functrans.scipy.special`` so every function differentiates, jits and
vmaps. Names, argument order and defaults follow SciPy (``loc``/``scale`` where SciPy has
them); values outside the support give SciPy's answer (``-inf`` log-densities, NaN for
invalid probabilities).

    >>> from functrans.scipy.stats import norm
    >>> norm.logpdf(fnp.array([0.0, 1.0]))
    Array([-0.91893853, -1.41893853], dtype=float64)
"""
from . import (bernoulli, beta, gamma, logistic, multivariate_normal, norm,  # noqa: F401
               poisson, t, uniform)
from ._kde import gaussian_kde  # noqa: F401
from ._rankdata import rankdata  # noqa: F401
