"""``functrans.numpy.linalg``: norms (vector and matrix), ``matmul``/``vecdot`` aliases.

Decompositions (det, inv, solve, svd, ...) need linear-algebra primitives that functrans does
not have yet; they raise NotImplementedError instead of giving a wrong answer.

    >>> norm(fnp.array([3.0, 4.0]))
    Array(5., dtype=float64)
"""
from __future__ import annotations

import numpy as np

from .. import lax
from .. import primitives as P
from ..core.trace import get_aval
from ._core import asarray, convert, inexact_dtype, normalize_axes
from .linalg_ops import matmul, outer, tensordot, vecdot  # noqa: F401  (Array-API aliases)
from .reductions import max as max_, min as min_, sum as sum_
from .ufuncs import abs as abs_, power, sqrt

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "vecdot", "outer", "tensordot",
           "det", "inv", "solve", "svd", "eigh", "cholesky", "qr", "slogdet", "pinv", "lstsq",
           "eig", "eigvals", "eigvalsh", "matrix_rank", "matrix_power"]


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """p-norm over ``axis`` (all axes by default): ord 2, 1, inf, -inf, 0 or any p.

    >>> vector_norm(fnp.array([3.0, -4.0]), ord=1)
    Array(7., dtype=float64)
    """
    x = asarray(x)
    x = convert(x, inexact_dtype(get_aval(x).dtype))
    a = abs_(x)
    if ord == 2:
        return sqrt(sum_(P.mul_p.bind1(x, x), axis=axis, keepdims=keepdims))
    if ord == 1:
        return sum_(a, axis=axis, keepdims=keepdims)
    if ord == np.inf:
        return max_(a, axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return min_(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        nz = convert(P.ne_p.bind1(x, lax.full((), 0, get_aval(x).dtype)), get_aval(x).dtype)
        return sum_(nz, axis=axis, keepdims=keepdims)
    p = float(ord)
    return power(sum_(power(a, p), axis=axis, keepdims=keepdims), 1.0 / p)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    """Matrix norm over the last two axes: 'fro', 1, -1, inf, -inf."""
    return norm(x, ord=ord, axis=(-2, -1), keepdims=keepdims)


def norm(x, ord=None, axis=None, keepdims=False):
    """Vector or matrix norm with NumPy's conventions.

    >>> norm(fnp.ones((2, 2)))
    Array(2., dtype=float64)
    """
    x = asarray(x)
    nd = get_aval(x).ndim
    if axis is None:
        if ord is None:
            return vector_norm(x, axis=None, keepdims=keepdims)
        axis = tuple(range(nd))
        if nd not in (1, 2):
            raise ValueError("Improper number of dimensions to norm.")
    axes = normalize_axes(axis, nd) if not isinstance(axis, tuple) else tuple(
        a % nd for a in axis)
    if len(axes) == 1:
        return vector_norm(x, axis=axes, keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    r, c = axes
    x = convert(x, inexact_dtype(get_aval(x).dtype))
    a = abs_(x)
    if ord in (None, "fro", "f"):
        return sqrt(sum_(P.mul_p.bind1(x, x), axis=axes, keepdims=keepdims))
    if ord in (1, -1):
        col = sum_(a, axis=r, keepdims=True)
        red = max_ if ord == 1 else min_
        return _squeeze_kept(red(col, axis=c, keepdims=True), axes, keepdims)
    if ord in (np.inf, -np.inf):
        row = sum_(a, axis=c, keepdims=True)
        red = max_ if ord == np.inf else min_
        return _squeeze_kept(red(row, axis=r, keepdims=True), axes, keepdims)
    raise NotImplementedError(f"norm ord={ord!r} for matrices needs a singular value "
                              "decomposition, which functrans does not support yet")


def _squeeze_kept(x, axes, keepdims):
    return x if keepdims else lax.squeeze(x, axes)


def _unsupported(name):
    def fn(*args, **kwargs):
        raise NotImplementedError(
            f"fnp.linalg.{name} needs matrix-decomposition primitives that functrans does not "
            "have yet; compute it with NumPy outside traced code")
    fn.__name__ = name
    fn.__doc__ = f"Not supported yet: raises NotImplementedError (see module docstring)."
    return fn


det, inv, solve, svd, eigh, cholesky, qr, slogdet, pinv, lstsq, eig, eigvals, eigvalsh, \
    matrix_rank = map(_unsupported, ("det", "inv", "solve", "svd", "eigh", "cholesky", "qr",
                                     "slogdet", "pinv", "lstsq", "eig", "eigvals", "eigvalsh",
                                     "matrix_rank"))


def matrix_power(a, n):
    """``a`` multiplied by itself ``n`` times (n >= 0; square-and-multiply)."""
    from .creation import eye
    a = asarray(a)
    if n < 0:
        raise NotImplementedError("matrix_power with a negative exponent needs a matrix inverse")
    s = get_aval(a).shape
    result = None
    base = a
    while n:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if n:
            base = matmul(base, base)
    if result is None:
        result = lax.broadcast_in_dim(eye(s[-1], dtype=get_aval(a).dtype), s, (len(s) - 2, len(s) - 1))
    return result
