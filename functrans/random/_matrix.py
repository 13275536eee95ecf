"""Samplers built on matrix factorizations: ``multivariate_normal`` (Cholesky) and
``orthogonal`` (QR), using ``fnp.linalg``'s decompositions.

    >>> random.orthogonal(random.key(0), 3).shape
    (3, 3)
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import numpy as fnp
from ..core.trace import get_aval
from ._continuous import _normal, as_array, float_dtype, sample_shape
from ._prng import canonical_shape, check_key

__all__ = ["multivariate_normal", "orthogonal"]


def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    """Samples ``mean + F z`` with ``F F^T == cov`` and ``z`` standard normal; shape
    ``shape + mean.shape[-1:]``, where ``shape`` (default: the broadcast of
    ``mean.shape[:-1]`` and ``cov.shape[:-2]``) must broadcast with both.

    ``method`` chooses the factor ``F`` as JAX does: "cholesky" (a ``cov`` that is not
    positive definite gives NaN), "eigh" (``V sqrt(w)``) or "svd" (``U sqrt(s)``).

        >>> x = random.multivariate_normal(random.key(0), fnp.zeros(2), fnp.eye(2), (5,))
        >>> x.shape
        (5, 2)
        >>> random.multivariate_normal(random.key(0), fnp.zeros(2), fnp.eye(3))
        Traceback (most recent call last):
            ...
        ValueError: multivariate_normal: cov.shape[-2:] must be (2, 2) to match mean.shape[-1:] = (2,), got cov of shape (3, 3)
    """
    key = check_key("multivariate_normal", key)
    dtype = float_dtype("multivariate_normal", dtype)
    if method not in ("cholesky", "eigh", "svd"):
        raise ValueError(f"multivariate_normal: method must be 'cholesky', 'eigh' or 'svd', got "
                         f"{method!r}")
    mean = lax.convert_element_type(as_array(mean), dtype)
    cov = lax.convert_element_type(as_array(cov), dtype)
    ms, cs = get_aval(mean).shape, get_aval(cov).shape
    if len(ms) < 1:
        raise ValueError(f"multivariate_normal: mean must have at least one dimension, got "
                         f"shape {ms}")
    if len(cs) < 2:
        raise ValueError(f"multivariate_normal: cov must have at least two dimensions, got "
                         f"shape {cs}")
    n = ms[-1]
    if cs[-2:] != (n, n):
        raise ValueError(f"multivariate_normal: cov.shape[-2:] must be ({n}, {n}) to match "
                         f"mean.shape[-1:] = ({n},), got cov of shape {cs}")
    try:
        batch = np.broadcast_shapes(ms[:-1], cs[:-2])
    except ValueError:
        raise ValueError(f"multivariate_normal: batch shapes of mean {ms[:-1]} and cov "
                         f"{cs[:-2]} do not broadcast") from None
    shape = sample_shape("multivariate_normal", shape, batch,
                         f"mean.shape[:-1] = {ms[:-1]} and cov.shape[:-2] = {cs[:-2]}")
    z = _normal(key, shape + (n,), dtype)
    if method == "svd":
        u, s, _ = fnp.linalg.svd(cov)
        factor = u * fnp.sqrt(s[..., None, :])
    elif method == "eigh":
        w, v = fnp.linalg.eigh(cov)
        factor = v * fnp.sqrt(w[..., None, :])
    else:
        factor = fnp.linalg.cholesky(cov)
    return mean + fnp.einsum("...ij,...j->...i", factor, z)


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """Matrices uniformly distributed (Haar measure) over the ``n x n`` orthogonal matrices,
    or, with ``m``, over the ``n x m`` matrices with orthonormal rows or columns (whichever
    are fewer); shape ``shape + (n, m)``.

        >>> q = random.orthogonal(random.key(0), 3, m=2)
        >>> bool(fnp.allclose(q.T @ q, fnp.eye(2)))
        True
    """
    key = check_key("orthogonal", key)
    dtype = float_dtype("orthogonal", dtype)
    shape = canonical_shape("orthogonal", shape)
    n = int(n)
    m = n if m is None else int(m)
    if n < 0 or m < 0:
        raise ValueError(f"orthogonal: n and m must be non-negative, got n={n}, m={m}")
    tall = (max(n, m), min(n, m))
    q, r = fnp.linalg.qr(_normal(key, shape + tall, dtype))
    # Signs making R's diagonal positive: Q is then unique, so Haar-distributed (Mezzadri).
    q = q * fnp.sign(fnp.diagonal(r, 0, -2, -1))[..., None, :]
    return fnp.swapaxes(q, -1, -2) if n < m else q
