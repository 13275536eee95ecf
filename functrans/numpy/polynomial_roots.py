"""``fnp.roots``: a polynomial's roots as the eigenvalues of its companion matrix, as NumPy
and JAX compute them.

    >>> roots(fnp.array([1.0, -3.0, 2.0]))
    Array([2.+0.j, 1.+0.j], dtype=complex128)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.trace import get_aval
from . import joining, shape_ops
from ._core import check_arraylike, asarray, convert
from .indexing import _concrete
from .linalg_decomp import eigvals
from .ufuncs import negative, true_divide

__all__ = ["roots"]


def roots(p, *, strip_zeros=True):
    """Roots of the polynomial with coefficients ``p`` (highest power first), complex.

    As NumPy, leading zero coefficients are dropped and trailing ones give zero roots
    (``strip_zeros=True``); that needs the values of ``p``, so under jit, vmap or grad pass
    ``strip_zeros=False``, where a leading zero gives non-finite roots (as in JAX).

    >>> roots(fnp.array([1.0, 0.0, 1.0])).imag
    Array([ 1., -1.], dtype=float64)
    """
    check_arraylike("roots", p)
    p = asarray(p)
    aval = get_aval(p)
    if aval.ndim != 1:
        raise ValueError(f"fnp.roots: input must be a rank-1 array, got shape {aval.shape}")
    if dtypes.kind(aval.dtype) in "biu":
        p = convert(p, dtypes.default_float_dtype())
    n_zero_roots = 0
    if strip_zeros:
        value = _concrete(p)
        if value is None:
            raise ValueError("fnp.roots: strip_zeros=True needs the coefficients' values, which "
                             "are not known while tracing (jit, vmap, grad); pass "
                             "strip_zeros=False")
        nonzero = np.flatnonzero(value)
        if nonzero.size == 0:
            return asarray(np.zeros(0, dtypes.complex_dtype(get_aval(p).dtype)))
        n_zero_roots = aval.shape[0] - 1 - int(nonzero[-1])
        p = p[int(nonzero[0]):int(nonzero[-1]) + 1]
    n = get_aval(p).shape[0] - 1
    c = dtypes.complex_dtype(get_aval(p).dtype)
    if n < 1:
        found = asarray(np.zeros(0, c))
    else:
        # Companion matrix: first row -p[1:] / p[0], ones below the diagonal.
        first = shape_ops.reshape(true_divide(negative(p[1:]), p[0]), (1, n))
        below = asarray(np.eye(n - 1, n, dtype=get_aval(first).dtype))
        found = eigvals(joining.concatenate([first, below], axis=0))
    if n_zero_roots:
        found = joining.concatenate([found, asarray(np.zeros(n_zero_roots, c))])
    return found
