"""Small dense decompositions composed from existing primitives (no LAPACK primitive yet):
Cholesky, triangular solves and the Q factor of a QR decomposition.

They exist for ``scipy.stats.multivariate_normal``, ``random.multivariate_normal``,
``random.orthogonal`` and ``nn.initializers.orthogonal``. Each is a ``fori_loop`` over
columns (a scan, so reverse mode works) of O(n^2) vector work, O(n^3) in all: fine for the
covariance and weight matrices those need, not a replacement for LAPACK on large matrices.
Leading axes are batch axes.

    >>> a = fnp.array([[4.0, 2.0], [2.0, 3.0]])
    >>> L = cholesky(a)
    >>> bool(fnp.allclose(L @ L.T, a))
    True
"""
from __future__ import annotations

from . import lax
from . import numpy as fnp
from .core.trace import get_aval


def _onehot(j, n, dtype):
    return (fnp.arange(n) == j).astype(dtype)


def cholesky(a):
    """Lower-triangular ``L`` with ``L @ L.T == a`` for symmetric positive-definite ``a``
    (only the lower triangle of ``a`` is read); NaN where ``a`` is not positive definite,
    as LAPACK-backed libraries return.

    >>> cholesky(fnp.array([[4.0, 0.0], [0.0, 9.0]]))
    Array([[2., 0.],
           [0., 3.]], dtype=float64)
    """
    aval = get_aval(a)
    n = aval.shape[-1]
    rows = fnp.arange(n)

    # Column j of L needs only columns < j, which are final when it is computed; columns >= j
    # of the running L are still zero, so full-row dot products sum over exactly k < j.
    def column(j, L):
        e = _onehot(j, n, aval.dtype)
        l_row = fnp.einsum("...ki,k->...i", L, e)  # row j of L
        a_col = fnp.einsum("...ik,k->...i", a, e)
        v = a_col - fnp.einsum("...ik,...k->...i", L, l_row)
        d = fnp.sqrt(fnp.einsum("...i,i->...", v, e))
        col = fnp.where(rows > j, v / d[..., None], fnp.where(rows == j, d[..., None], 0.0))
        return L + col[..., :, None] * e

    return lax.fori_loop(0, n, column, fnp.zeros_like(a))


def solve_lower(L, b):
    """``x`` with ``L @ x == b`` for lower-triangular ``L`` (..., n, n) and ``b`` (..., n).

    >>> solve_lower(fnp.array([[2.0, 0.0], [1.0, 1.0]]), fnp.array([2.0, 3.0]))
    Array([1., 2.], dtype=float64)
    """
    n = get_aval(L).shape[-1]
    dtype = get_aval(L).dtype

    def step(j, x):  # forward substitution; entries >= j of x are still zero
        e = _onehot(j, n, dtype)
        l_row = fnp.einsum("...ki,k->...i", L, e)
        x_j = (fnp.einsum("...i,i->...", b, e) - fnp.einsum("...i,...i->...", l_row, x)) \
            / fnp.einsum("...i,i->...", l_row, e)
        return x + x_j[..., None] * e

    return lax.fori_loop(0, n, step, fnp.zeros(fnp.broadcast_shapes(
        get_aval(L).shape[:-1], get_aval(b).shape), dtype))


def qr_q(a):
    """The ``Q`` factor (..., m, n) of the reduced QR decomposition of ``a`` (m >= n) whose
    ``R`` has a positive diagonal, i.e. the orthonormalized columns of ``a``.

    Gram-Schmidt with one reorthogonalization pass ("twice is enough"), which keeps ``Q``
    orthonormal to rounding error for matrices that are not numerically rank-deficient. The
    positive diagonal makes ``Q`` unique, so a Gaussian ``a`` gives Haar-distributed ``Q``
    without the sign correction Householder QR needs.

    >>> q = qr_q(fnp.array([[3.0, 1.0], [4.0, 2.0]]))
    >>> bool(fnp.allclose(q.T @ q, fnp.eye(2)))
    True
    """
    aval = get_aval(a)
    m, n = aval.shape[-2:]
    if m < n:
        raise ValueError(f"qr_q needs at least as many rows as columns, got shape {aval.shape}")

    def column(j, Q):
        e = _onehot(j, n, aval.dtype)
        v = fnp.einsum("...ik,k->...i", a, e)
        for _ in range(2):
            v = v - fnp.einsum("...ik,...k->...i", Q, fnp.einsum("...ik,...i->...k", Q, v))
        q = v / fnp.sqrt(fnp.sum(v * v, axis=-1, keepdims=True))
        return Q + q[..., :, None] * e

    return lax.fori_loop(0, n, column, fnp.zeros_like(a))
