"""The generalized normal distribution and uniform samples in an ``L_p`` ball, built on the
gamma sampler (``_loops``): the same distributions as ``jax.random``'s, not the same bits.

    >>> random.ball(random.key(0), 3, shape=(2,)).shape
    (2, 3)
"""
from __future__ import annotations

import operator

from .. import lax
from .. import numpy as fnp
from ._continuous import _exponential, float_dtype
from ._discrete import rademacher
from ._loops import _keys, _loggamma
from ._prng import canonical_shape, check_key

__all__ = ["generalized_normal", "ball"]


def generalized_normal(key, p, shape=(), dtype=None):
    """Samples with density proportional to ``exp(-|x|**p)`` (``p = 2``: a normal with
    variance 1/2; ``p = 1``: a Laplace). ``|x|**p`` is Gamma(1/p), so a sample is a random
    sign times ``gamma(1/p) ** (1/p)``.

        >>> x = random.generalized_normal(random.key(0), 1.5, (4,))
        >>> x.shape
        (4,)
    """
    key = check_key("generalized_normal", key)
    dtype = float_dtype("generalized_normal", dtype)
    shape = canonical_shape("generalized_normal", shape)
    return _generalized_normal(key, p, shape, dtype)


def _generalized_normal(key, p, shape, dtype):
    k_g, k_s = _keys(key, 2)
    p = lax.convert_element_type(fnp.asarray(p), dtype)
    if p.ndim:
        raise ValueError(f"generalized_normal: p must be a scalar, got shape {p.shape}")
    one = dtype.type(1)
    # log of gamma(1/p) samples: their 1/p-th power stays finite for large p.
    log_g = _loggamma(k_g, one / p, shape, dtype)
    return rademacher(k_s, shape, dtype) * fnp.exp(log_g / p)


def ball(key, d, p=2, shape=(), dtype=None):
    """Points uniform in the ``d``-dimensional unit ``L_p`` ball, shape ``(*shape, d)``:
    generalized normal coordinates divided by the ``p``-norm of the coordinates together
    with an Exponential(1) variable (Barthe, Guedon, Mendelson & Naor, 2005).

        >>> x = random.ball(random.key(0), 2, shape=(100,))
        >>> bool((fnp.linalg.norm(x, axis=-1) < 1).all())
        True
    """
    key = check_key("ball", key)
    dtype = float_dtype("ball", dtype)
    try:
        d = operator.index(d)
    except TypeError:
        raise TypeError(f"ball: d must be an int, got {d!r}") from None
    if d < 1:
        raise ValueError(f"ball: d must be positive, got {d}")
    shape = canonical_shape("ball", shape)
    k_g, k_e = _keys(key, 2)
    g = _generalized_normal(k_g, p, (*shape, d), dtype)
    e = _exponential(k_e, shape, dtype)
    p = lax.convert_element_type(fnp.asarray(p), dtype)
    norm = (fnp.sum(fnp.abs(g) ** p, axis=-1) + e) ** (dtype.type(1) / p)
    return g / norm[..., None]
