"""``functrans.scipy.fft`` (JAX's ``jax.scipy.fft``): the type-2 discrete cosine transform
and its inverse, as SciPy defines them (``norm=None`` or ``"ortho"``).

The transform along one axis is a product with a constant N x N matrix built from the static
length, so it is exact to rounding, linear in every transformation (JVP, transpose, vmap)
and compiles to a matrix product.

    >>> fnp.round(dct(fnp.array([1.0, 2.0, 3.0]), norm="ortho"), 6)
    Array([ 3.464102, -1.414214,  0.      ], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from .. import numpy as fnp
from ..numpy._core import asarray, normalize_axis

__all__ = ["dct", "idct", "dctn", "idctn"]


def _dct2_matrix(n, norm):
    # SciPy's unnormalized DCT-II: y_k = 2 sum_j x_j cos(pi k (2j + 1) / (2n)); "ortho" scales
    # row 0 by sqrt(1/(4n)) and the others by sqrt(1/(2n)), which makes the matrix orthogonal.
    k = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    m = 2.0 * np.cos(np.pi * k * (2 * j + 1) / (2 * n))
    if norm == "ortho":
        m[0] *= np.sqrt(1.0 / (4 * n))
        m[1:] *= np.sqrt(1.0 / (2 * n))
    return m


def _check(name, type, n, norm):
    if type != 2:
        raise NotImplementedError(f"scipy.fft.{name}: only type=2 is implemented (as in JAX), "
                                  f"got type={type!r}")
    if norm not in (None, "backward", "ortho"):
        raise ValueError(f"scipy.fft.{name}: norm must be None, 'backward' or 'ortho', "
                         f"got {norm!r}")
    if n is not None and (not isinstance(n, (int, np.integer)) or n < 1):
        raise ValueError(f"scipy.fft.{name}: n must be a positive integer, got {n!r}")


def _fit(x, n, axis):
    # SciPy's n=: truncate or zero-pad the input along the axis before transforming.
    length = x.shape[axis]
    if n is None or n == length:
        return x
    if n < length:
        return fnp.take(x, fnp.arange(n), axis=axis)
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - length)
    return fnp.pad(x, widths)


def _apply(name, x, type, n, axis, norm, inverse):
    _check(name, type, n, norm)
    x = asarray(x)
    if not fnp.issubdtype(x.dtype, fnp.inexact):
        x = x.astype(fnp.result_type(float))
    if x.ndim == 0:
        raise ValueError(f"scipy.fft.{name}: x must have at least one dimension")
    axis = normalize_axis(axis, x.ndim)
    x = _fit(x, n, axis)
    size = x.shape[axis]
    m = _dct2_matrix(size, "ortho" if norm == "ortho" else None)
    if inverse:
        # The inverse of the orthogonal matrix is its transpose; the unnormalized one is
        # inverted once on the host (it is well conditioned: a scaled orthogonal matrix).
        m = m.T if norm == "ortho" else np.linalg.inv(m)
    m = fnp.asarray(m, dtype=x.dtype)
    y = fnp.tensordot(fnp.moveaxis(x, axis, -1), m, axes=([-1], [1]))
    return fnp.moveaxis(y, -1, axis)


def dct(x, type=2, n=None, axis=-1, norm=None):
    """Type-2 discrete cosine transform of ``x`` along ``axis`` (SciPy's ``dct``).

        >>> dct(fnp.array([1.0, 0.0]))
        Array([2.        , 1.41421356], dtype=float64)
    """
    return _apply("dct", x, type, n, axis, norm, inverse=False)


def idct(x, type=2, n=None, axis=-1, norm=None):
    """Inverse of :func:`dct` along ``axis`` (SciPy's ``idct`` of type 2).

        >>> idct(dct(fnp.array([1.0, 2.0, 3.0])))
        Array([1., 2., 3.], dtype=float64)
    """
    return _apply("idct", x, type, n, axis, norm, inverse=True)


def _axes(name, x, s, axes):
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(axes)
    if s is not None and len(s) != len(axes):
        raise ValueError(f"scipy.fft.{name}: s and axes must have the same length")
    return x, axes, (tuple(s) if s is not None else (None,) * len(axes))


def dctn(x, type=2, s=None, axes=None, norm=None):
    """:func:`dct` along each of ``axes`` (all by default; SciPy's ``dctn``).

        >>> fnp.round(dctn(fnp.ones((2, 2)), norm="ortho"), 6)
        Array([[2., 0.],
               [0., 0.]], dtype=float64)
    """
    x, axes, sizes = _axes("dctn", x, s, axes)
    for axis, n in zip(axes, sizes):
        x = dct(x, type=type, n=n, axis=axis, norm=norm)
    return x


def idctn(x, type=2, s=None, axes=None, norm=None):
    """Inverse of :func:`dctn` (SciPy's ``idctn`` of type 2).

        >>> idctn(dctn(fnp.ones((2, 2))))
        Array([[1., 1.],
               [1., 1.]], dtype=float64)
    """
    x, axes, sizes = _axes("idctn", x, s, axes)
    for axis, n in zip(axes, sizes):
        x = idct(x, type=type, n=n, axis=axis, norm=norm)
    return x
