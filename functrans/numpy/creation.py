"""Array creation: zeros/ones/full(_like), arange, linspace, logspace, eye, tri, diag,
meshgrid, indices.

    >>> arange(3), linspace(0, 1, 3)
    (Array([0, 1, 2], dtype=int64), Array([0. , 0.5, 1. ], dtype=float64))
"""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.trace import Tracer, get_aval
from ._core import asarray, broadcast_to_shape, convert, normalize_axis
from .shape_ops import reshape

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
           "empty_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri",
           "tril", "triu", "diag", "diagflat", "diagonal", "trace", "meshgrid", "indices",
           "fromfunction", "tril_indices", "triu_indices", "diag_indices"]


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    shape = tuple(operator.index(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"negative dimensions are not allowed, got shape {shape}")
    return shape


def _dtype(dtype, default):
    return default if dtype is None else dtypes.canonicalize_dtype(dtype)


def zeros(shape, dtype=None):
    """Array of zeros (float64 by default).

    >>> zeros((2,), "int32")
    Array([0, 0], dtype=int32)
    """
    return lax.full(_shape(shape), 0, _dtype(dtype, dtypes.default_float_dtype()))


def ones(shape, dtype=None):
    """Array of ones (float64 by default)."""
    return lax.full(_shape(shape), 1, _dtype(dtype, dtypes.default_float_dtype()))


def empty(shape, dtype=None):
    """Like :func:`zeros` (there is no uninitialized memory in functrans)."""
    return zeros(shape, dtype)


def full(shape, fill_value, dtype=None):
    """Array of ``shape`` filled with ``fill_value`` (an array broadcasts to ``shape``)."""
    shape = _shape(shape)
    v = asarray(fill_value, dtype)
    if get_aval(v).shape:
        return broadcast_to_shape(v, shape)
    return lax.full(shape, v)


def _like(a, dtype, shape):
    aval = get_aval(asarray(a))
    return (aval.shape if shape is None else _shape(shape),
            aval.dtype if dtype is None else dtypes.canonicalize_dtype(dtype))


def zeros_like(a, dtype=None, shape=None):
    """Zeros with the shape and dtype of ``a``."""
    s, d = _like(a, dtype, shape)
    return lax.full(s, 0, d)


def ones_like(a, dtype=None, shape=None):
    """Ones with the shape and dtype of ``a``."""
    s, d = _like(a, dtype, shape)
    return lax.full(s, 1, d)


def empty_like(a, dtype=None, shape=None):
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """``fill_value`` with the shape and dtype of ``a``."""
    s, d = _like(a, dtype, shape)
    return full(s, fill_value, d)


def _static_number(x, name):
    if isinstance(x, Tracer) and x.concrete_value() is None:
        raise TypeError(f"fnp.{name}: the bounds must be static (Python numbers or concrete "
                        f"arrays), got a traced {x.aval.str_short()}; the result's shape depends "
                        "on them")
    return x if isinstance(x, (int, float, bool)) else np.asarray(x).item()


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (static bounds), NumPy's dtype rules.

    >>> arange(1, 2, 0.25)
    Array([1.  , 1.25, 1.5 , 1.75], dtype=float64)
    """
    start = _static_number(start, "arange")
    stop = None if stop is None else _static_number(stop, "arange")
    step = None if step is None else _static_number(step, "arange")
    value = np.arange(start, stop, step) if dtype is None else np.arange(
        start, stop, step, dtype=dtypes.canonicalize_dtype(dtype))
    if dtype is None:
        value = value.astype(dtypes.canonicalize_dtype(value.dtype))
    n = value.shape[0]
    if np.issubdtype(value.dtype, np.integer) and (step is None or isinstance(step, int)):
        first = start if stop is not None else 0
        first = 0 if first is None else first
        st = 1 if step is None else step
        if st == 1 and first == 0:
            return lax.iota(value.dtype, n)
    return asarray(value)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced samples over ``[start, stop]``; bounds may be traced arrays.

    >>> linspace(0.0, 1.0, 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float64)
    """
    from .ufuncs import add, multiply, subtract
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    start, stop = asarray(start), asarray(stop)
    comp = np.result_type(get_aval(start).dtype, get_aval(stop).dtype, float)
    comp = dtypes.canonicalize_dtype(comp if comp.kind == "f" else dtypes.default_float_dtype())
    out_dtype = comp if dtype is None else dtypes.canonicalize_dtype(dtype)
    start, stop = convert(start, comp), convert(stop, comp)
    shape = np.broadcast_shapes(get_aval(start).shape, get_aval(stop).shape)
    div = (num - 1) if endpoint else num
    step_den = max(div, 1)
    delta = subtract(stop, start)
    t = lax.iota(comp, num)
    t_shape = (num,) + (1,) * len(shape)
    t = reshape(t, t_shape)
    step = delta / step_den if div > 0 else delta * np.nan
    samples = add(multiply(t, step if div > 0 else lax.full_like(delta, 0)), start)
    if endpoint and num > 1:
        samples = lax.concatenate([lax.slice_in_dim(samples, 0, num - 1, 1, 0),
                                   reshape(broadcast_to_shape(stop, shape), (1,) + shape)], 0)
    samples = broadcast_to_shape(samples, (num,) + shape)
    if axis != 0:
        from .shape_ops import moveaxis
        samples = moveaxis(samples, 0, normalize_axis(axis, len(shape) + 1))
    if out_dtype.kind in "iu":
        from .ufuncs import floor
        samples = floor(samples)
    samples = convert(samples, out_dtype)
    return (samples, step) if retstep else samples


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop)``."""
    from .ufuncs import power
    lin = linspace(start, stop, num, endpoint, axis=axis)
    out = power(asarray(base, get_aval(lin).dtype) if not isinstance(base, float) else base, lin)
    return out if dtype is None else convert(out, dtypes.canonicalize_dtype(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Geometric progression from ``start`` to ``stop``."""
    from .ufuncs import exp, log, multiply, sign
    start, stop = asarray(start), asarray(stop)
    s = sign(start)
    out = multiply(s, exp(linspace(log(multiply(s, start)), log(multiply(s, stop)), num,
                                   endpoint, axis=axis)))
    return out if dtype is None else convert(out, dtypes.canonicalize_dtype(dtype))


def eye(N, M=None, k=0, dtype=None):
    """Identity-like matrix with ones on diagonal ``k``.

    >>> eye(2)
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
    """
    M = N if M is None else M
    d = _dtype(dtype, dtypes.default_float_dtype())
    rows = lax.broadcasted_iota(dtypes.int32 if max(N, M) < 2**31 else dtypes.int64, (N, M), 0)
    cols = lax.broadcasted_iota(get_aval(rows).dtype, (N, M), 1)
    on = P.eq_p.bind1(P.add_p.bind1(rows, lax.ops._convert_weak(k, get_aval(rows).dtype)), cols)
    return convert(on, d)


def identity(n, dtype=None):
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below diagonal ``k``."""
    M = N if M is None else M
    d = _dtype(dtype, dtypes.default_float_dtype())
    rows = lax.broadcasted_iota(dtypes.int64, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int64, (N, M), 1)
    return convert(P.le_p.bind1(cols, P.add_p.bind1(rows, lax.ops._convert_weak(k, dtypes.int64))), d)


def _tri_mask(a, k, lower):
    from .shape_ops import where
    a = asarray(a)
    s = get_aval(a).shape
    if len(s) < 2:
        raise ValueError("tril/triu need an array of rank >= 2")
    mask = tri(s[-2], s[-1], k if lower else k - 1, dtypes.bool_)
    if not lower:
        mask = P.not_p.bind1(mask)
    return where(mask, a, lax.full((), 0, get_aval(a).dtype))


def tril(m, k=0):
    """Lower triangle of the last two axes (zero above diagonal ``k``)."""
    return _tri_mask(m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (zero below diagonal ``k``)."""
    return _tri_mask(m, k, False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal ``offset`` of the plane ``(axis1, axis2)``, as the last axis of the result."""
    from .indexing import getitem
    from .shape_ops import moveaxis
    a = asarray(a)
    nd = get_aval(a).ndim
    ax1, ax2 = normalize_axis(axis1, nd), normalize_axis(axis2, nd)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    n, m = get_aval(a).shape[-2:]
    length = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    i = np.arange(length) - min(offset, 0)
    j = np.arange(length) + max(offset, 0)
    return getitem(a, (Ellipsis, asarray(i), asarray(j)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal."""
    from .reductions import sum
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def diag(v, k=0):
    """Extract diagonal ``k`` of a matrix, or build a matrix with ``v`` on diagonal ``k``."""
    v = asarray(v)
    nd = get_aval(v).ndim
    if nd == 2:
        return diagonal(v, k)
    if nd != 1:
        raise ValueError(f"diag: input must be 1-d or 2-d, got rank {nd}")
    n = get_aval(v).shape[0] + abs(k)
    from .indexing import scatter_update
    i = np.arange(get_aval(v).shape[0]) - min(k, 0)
    j = np.arange(get_aval(v).shape[0]) + max(k, 0)
    return scatter_update(zeros((n, n), get_aval(v).dtype), (asarray(i), asarray(j)), v, "set")


def diagflat(v, k=0):
    from .shape_ops import ravel
    return diag(ravel(v), k)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors (``indexing`` "xy" or "ij")."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    arrs = [reshape(asarray(x), (-1,)) for x in xi]
    n = len(arrs)
    shape = [get_aval(a).shape[0] for a in arrs]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrs):
        pos = i
        if indexing == "xy" and n > 1 and i < 2:
            pos = 1 - i
        s = [1] * n
        s[pos] = get_aval(a).shape[0]
        a = reshape(a, tuple(s))
        out.append(a if sparse else broadcast_to_shape(a, tuple(shape)))
    return out


def indices(dimensions, dtype=None, sparse=False):
    """Grid of indices for an array of shape ``dimensions``."""
    dims = _shape(dimensions)
    d = _dtype(dtype, dtypes.default_int_dtype())
    out = []
    for i, n in enumerate(dims):
        s = [1] * len(dims)
        s[i] = n
        r = reshape(lax.iota(d, n), tuple(s))
        out.append(r if sparse else broadcast_to_shape(r, dims))
    if sparse:
        return tuple(out)
    from .shape_ops import stack
    return stack(out) if out else zeros((0,), d)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*indices)`` over a grid of ``shape``."""
    idx = indices(shape, dtype=dtype)
    return function(*[idx[i] for i in range(len(_shape(shape)))], **kwargs)


def tril_indices(n, k=0, m=None):
    r, c = np.tril_indices(n, k, m)
    return asarray(r), asarray(c)


def triu_indices(n, k=0, m=None):
    r, c = np.triu_indices(n, k, m)
    return asarray(r), asarray(c)


def diag_indices(n, ndim=2):
    i = asarray(np.arange(n))
    return (i,) * ndim


del math
