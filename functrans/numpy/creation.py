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
from ..core.config import config
from ..core.shape_poly import DimExpr, as_dim, is_symbolic_dim, max_dim, min_dim
from ..core.trace import Tracer, get_aval
from ._core import check_arraylike, asarray, broadcast_to_shape, convert, normalize_axis
from .shape_ops import reshape

__all__ = ["zeros", "ones", "full", "empty", "zeros_like", "ones_like", "full_like",
           "empty_like", "arange", "linspace", "logspace", "geomspace", "eye", "identity", "tri",
           "tril", "triu", "diag", "diagflat", "diagonal", "trace", "meshgrid", "indices",
           "fromfunction", "tril_indices", "triu_indices", "diag_indices", "tril_indices_from",
           "triu_indices_from", "diag_indices_from", "fill_diagonal", "mgrid", "ogrid",
           "asanyarray", "ascontiguousarray", "asarray_chkfinite", "fromiter", "frombuffer"]


def _shape(shape):
    if isinstance(shape, (int, np.integer, DimExpr)):
        return (as_dim(shape),)
    shape = tuple(as_dim(d) for d in shape)
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
    """Array of ones (float64 by default).

    >>> ones((2,), 'int8')
    Array([1, 1], dtype=int8)
    """
    return lax.full(_shape(shape), 1, _dtype(dtype, dtypes.default_float_dtype()))


def empty(shape, dtype=None):
    """Like :func:`zeros` (there is no uninitialized memory in functrans).

    >>> empty(2)
    Array([0., 0.], dtype=float64)
    """
    return zeros(shape, dtype)


def full(shape, fill_value, dtype=None):
    """Array of ``shape`` filled with ``fill_value`` (an array broadcasts to ``shape``).

    >>> full((2, 2), 7)
    Array([[7, 7],
           [7, 7]], dtype=int64, weak_type=True)
    """
    check_arraylike("full", fill_value)
    shape = _shape(shape)
    if (type(fill_value) is int and dtype is not None and config.python_int_wraparound
            and np.dtype(dtype).kind in "iu"):
        # JAX casts the fill value to the dtype: full((2,), -1, uint32) is 2**32 - 1
        fill_value = np.asarray(fill_value).astype(dtypes.canonicalize_dtype(dtype))
    v = asarray(fill_value, dtype)
    if get_aval(v).shape:
        return broadcast_to_shape(v, shape)
    return lax.full(shape, v)


def _like(a, dtype, shape):
    if isinstance(a, (np.ndarray, np.generic)) or not hasattr(a, "shape"):
        a = asarray(a)
    a_shape, a_dtype = (tuple(a.shape), dtypes.canonicalize_dtype(a.dtype))  # ShapeDtypeStruct too
    return (a_shape if shape is None else _shape(shape),
            a_dtype if dtype is None else dtypes.canonicalize_dtype(dtype))


def _weak_like(out, a, dtype):
    """``out`` weakly typed where ``a`` is and no ``dtype`` was asked for, as JAX's ``*_like``
    (``ones_like(1)`` is a weak int: it then promotes as a Python scalar)."""
    if dtype is not None or not (type(a) in (int, float, complex) or
                                 getattr(a, "weak_type", False)):
        return out
    return convert(out, get_aval(out).dtype, True)


def zeros_like(a, dtype=None, shape=None):
    """Zeros with the shape and dtype of ``a``.

    >>> zeros_like(fnp.array([1.5, 2.5]))
    Array([0., 0.], dtype=float64)
    """
    if not (hasattr(a, "shape") and hasattr(a, "dtype")):  # ShapeDtypeStruct too, as JAX
        check_arraylike("zeros_like", a)
    s, d = _like(a, dtype, shape)
    return _weak_like(lax.full(s, 0, d), a, dtype)


def ones_like(a, dtype=None, shape=None):
    """Ones with the shape and dtype of ``a``.

    >>> ones_like(fnp.array([1, 2]), dtype='float32')
    Array([1., 1.], dtype=float32)
    """
    if not (hasattr(a, "shape") and hasattr(a, "dtype")):  # ShapeDtypeStruct too, as JAX
        check_arraylike("ones_like", a)
    s, d = _like(a, dtype, shape)
    return _weak_like(lax.full(s, 1, d), a, dtype)


def empty_like(a, dtype=None, shape=None):
    """Like :func:`zeros_like` (there is no uninitialized memory in functrans).

    >>> empty_like(fnp.array([1, 2]))
    Array([0, 0], dtype=int64)
    """
    if not (hasattr(a, "shape") and hasattr(a, "dtype")):  # ShapeDtypeStruct too, as JAX
        check_arraylike("empty_like", a)
    return zeros_like(a, dtype, shape)


def full_like(a, fill_value, dtype=None, shape=None):
    """``fill_value`` with the shape and dtype of ``a``.

    >>> full_like(fnp.array([1, 2]), 9)
    Array([9, 9], dtype=int64)
    """
    if hasattr(a, "shape") and hasattr(a, "dtype"):  # ShapeDtypeStruct too, as JAX
        check_arraylike("full_like", 0, fill_value)  # (0 holds a's place in the message)
    else:
        check_arraylike("full_like", a, fill_value)
    s, d = _like(a, dtype, shape)
    return _weak_like(full(s, fill_value, d), a, dtype)


def _static_number(x, name):
    if isinstance(x, Tracer) and x.concrete_value() is None:
        raise TypeError(f"fnp.{name}: the bounds must be static (Python numbers or concrete "
                        f"arrays), got a traced {x.aval.str_short()}; the result's shape depends "
                        "on them")
    return x if isinstance(x, (int, float, bool)) else np.asarray(x).item()


def _arange_symbolic(start, stop, step, dtype):
    """arange with a symbolic bound (integer start and step): an iota of the symbolic
    length, scaled and shifted."""
    start, stop = (0, start) if stop is None else (start, stop)
    step = 1 if step is None else step
    if not all(is_symbolic_dim(v) or isinstance(v, (int, np.integer)) for v in
               (start, stop, step)) or step == 0:
        raise TypeError(f"fnp.arange: with a symbolic bound, start, stop and step must be "
                        f"integers or symbolic dimensions and step nonzero, got {start}, "
                        f"{stop}, {step}")
    n = max_dim(0, (stop - start + step - 1) // step if step > 0 else
                (start - stop - step - 1) // -step)
    d = dtypes.default_int_dtype() if dtype is None else dtypes.canonicalize_dtype(dtype)
    out = lax.iota(d, n)
    if step != 1:
        out = P.mul_p.bind1(out, convert(step, d))
    if not (isinstance(start, int) and start == 0):
        out = P.add_p.bind1(out, P.broadcast_in_dim_p.bind1(
            convert(start, d), shape=(n,), broadcast_dimensions=()))
    return out


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (static bounds), NumPy's dtype rules.

    >>> arange(1, 2, 0.25)
    Array([1.  , 1.25, 1.5 , 1.75], dtype=float64)
    """
    if any(is_symbolic_dim(v) for v in (start, stop, step)):
        return _arange_symbolic(start, stop, step, dtype)
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


def _linspace_dtype(start, stop):
    """NumPy's linspace dtype: the operands' result type (Python scalars weak), made inexact."""
    from ._core import result_dtype
    d = result_dtype(start, stop)
    return d if dtypes.kind(d) in "fc" else dtypes.default_float_dtype()


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced samples over ``[start, stop]``, NumPy's algorithm (arange(num) *
    step + start, the endpoint set exactly); the bounds may be traced arrays.

    >>> linspace(0.0, 1.0, 5)
    Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float64)
    """
    from .ufuncs import add, divide, equal, floor, multiply, subtract
    check_arraylike("linspace", start, stop)
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"fnp.linspace: number of samples, {num}, must be non-negative")
    div = (num - 1) if endpoint else num
    dt = _linspace_dtype(start, stop)
    out_dtype = dt if dtype is None else dtypes.canonicalize_dtype(
        dtype, what="fnp.linspace dtype=")
    start, stop = convert(asarray(start), dt), convert(asarray(stop), dt)
    delta = subtract(stop, start)
    shape = get_aval(delta).shape
    y = reshape(lax.iota(dt, num), (num,) + (1,) * len(shape))
    if div > 0:
        step = divide(delta, div)
        zero = equal(step, 0)
        # If any step underflows to zero (denormal ranges), NumPy scales every sample by
        # delta after dividing: one decision for the whole array.
        from .reductions import any as any_
        from .shape_ops import where
        y = where(any_(zero), multiply(divide(y, div), delta), multiply(y, step))
    else:
        step = asarray(np.nan)  # undefined for 0 or 1 samples; NumPy returns a scalar nan
        y = multiply(y, delta)
    y = add(y, start)
    if endpoint and num > 1:
        y = lax.concatenate([lax.slice_in_dim(y, 0, num - 1, 1, 0),
                             reshape(broadcast_to_shape(stop, get_aval(y).shape[1:]),
                                     (1,) + get_aval(y).shape[1:])], 0)
    y = broadcast_to_shape(y, (num,) + get_aval(y).shape[1:])
    if axis != 0:
        from .shape_ops import moveaxis
        y = moveaxis(y, 0, normalize_axis(axis, get_aval(y).ndim))
    if dtypes.kind(out_dtype) in "iu":
        y = floor(y)
    y = convert(y, out_dtype)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """``base ** linspace(start, stop)`` (an array ``base`` broadcasts as in NumPy).

    >>> logspace(0, 2, 3)
    Array([  1.,  10., 100.], dtype=float64)
    """
    from .shape_ops import expand_dims
    from .ufuncs import power
    check_arraylike("logspace", start, stop)
    if type(base) not in (bool, int, float) and np.ndim(base):
        nd = max(np.ndim(start), np.ndim(stop), np.ndim(base))
        start, stop, base = (reshape(asarray(v), (1,) * (nd - np.ndim(v)) + np.shape(v))
                             for v in (start, stop, base))
        base = expand_dims(base, axis)
    y = power(base, linspace(start, stop, num, endpoint, axis=axis))
    return y if dtype is None else convert(y, dtypes.canonicalize_dtype(dtype))


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Geometric progression from ``start`` to ``stop`` (NumPy's algorithm: a base-10
    logspace of the magnitudes with the sign put back, the end points exact).

    >>> geomspace(1, 1000, 4)
    Array([   1.,   10.,  100., 1000.], dtype=float64)
    """
    from .indexing import _concrete
    from .ufuncs import log10, multiply, sign, true_divide
    from ._core import result_dtype
    check_arraylike("geomspace", start, stop)
    start, stop = asarray(start), asarray(stop)
    for v in (start, stop):
        c = _concrete(v)
        if c is not None and np.any(c == 0):
            raise ValueError("fnp.geomspace: geometric sequence cannot include zero")
    dt = result_dtype(start, stop, dtypes.default_float_dtype())
    start, stop = convert(start, dt), convert(stop, dt)
    out_sign = sign(start)
    start, stop = true_divide(start, out_sign), true_divide(stop, out_sign)
    result = logspace(log10(start), log10(stop), num, endpoint, 10.0, dt)
    shape = get_aval(result).shape[1:]
    if num > 0:
        ends = [reshape(broadcast_to_shape(start, shape), (1,) + shape)]
        rest = lax.slice_in_dim(result, 1, num, 1, 0)
        if num > 1 and endpoint:
            rest = lax.concatenate([lax.slice_in_dim(rest, 0, num - 2, 1, 0), reshape(
                broadcast_to_shape(stop, shape), (1,) + shape)], 0)
        result = lax.concatenate(ends + [rest], 0) if num > 1 else ends[0]
    result = multiply(out_sign, result)
    if axis != 0:
        from .shape_ops import moveaxis
        result = moveaxis(result, 0, normalize_axis(axis, get_aval(result).ndim))
    return result if dtype is None else convert(result, dtypes.canonicalize_dtype(dtype))


def eye(N, M=None, k=0, dtype=None):
    """Identity-like matrix with ones on diagonal ``k``.

    >>> eye(2)
    Array([[1., 0.],
           [0., 1.]], dtype=float64)
    """
    check_arraylike("eye", k)
    M = N if M is None else M
    d = _dtype(dtype, dtypes.default_float_dtype())
    small = not (is_symbolic_dim(N) or is_symbolic_dim(M)) and max(N, M) < 2**31
    rows = lax.broadcasted_iota(dtypes.int32 if small else dtypes.int64, (N, M), 0)
    cols = lax.broadcasted_iota(get_aval(rows).dtype, (N, M), 1)
    on = P.eq_p.bind1(P.add_p.bind1(rows, lax.ops._convert_weak(k, get_aval(rows).dtype)), cols)
    return convert(on, d)


def identity(n, dtype=None):
    """The ``n x n`` identity matrix.

    >>> identity(2, 'int32')
    Array([[1, 0],
           [0, 1]], dtype=int32)
    """
    return eye(n, dtype=dtype)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below diagonal ``k``.

    >>> tri(3, k=-1)
    Array([[0., 0., 0.],
           [1., 0., 0.],
           [1., 1., 0.]], dtype=float64)
    """
    M = N if M is None else M
    d = _dtype(dtype, dtypes.default_float_dtype())
    rows = lax.broadcasted_iota(dtypes.int64, (N, M), 0)
    cols = lax.broadcasted_iota(dtypes.int64, (N, M), 1)
    shifted = P.add_p.bind1(rows, lax.ops._convert_weak(k, dtypes.int64))
    return convert(P.le_p.bind1(cols, shifted), d)


def _tri_mask(a, k, lower):
    from .shape_ops import where
    a = asarray(a)
    s = get_aval(a).shape
    if not s:
        raise ValueError("fnp.tril/triu need an array of rank >= 1, got a 0-d array")
    # As NumPy, 1-D input is a row broadcast over the square mask.
    n, m = s[-2:] if len(s) > 1 else (s[0], s[0])
    mask = tri(n, m, k if lower else k - 1, dtypes.bool_)
    if not lower:
        mask = P.not_p.bind1(mask)
    return where(mask, a, lax.full((), 0, get_aval(a).dtype))


def tril(m, k=0):
    """Lower triangle of the last two axes (zero above diagonal ``k``).

    >>> tril(fnp.array([[1, 2], [3, 4]]))
    Array([[1, 0],
           [3, 4]], dtype=int64)
    """
    check_arraylike("tril", m)
    return _tri_mask(m, k, True)


def triu(m, k=0):
    """Upper triangle of the last two axes (zero below diagonal ``k``).

    >>> triu(fnp.array([[1, 2], [3, 4]]))
    Array([[1, 2],
           [0, 4]], dtype=int64)
    """
    check_arraylike("triu", m)
    return _tri_mask(m, k, False)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """Diagonal ``offset`` of the plane ``(axis1, axis2)``, as the last axis of the result.

    >>> diagonal(fnp.array([[1, 2], [3, 4]]), offset=1)
    Array([2], dtype=int64)
    """
    from .indexing import getitem
    from .shape_ops import moveaxis
    check_arraylike("diagonal", a)
    a = asarray(a)
    nd = get_aval(a).ndim
    ax1, ax2 = normalize_axis(axis1, nd), normalize_axis(axis2, nd)
    if ax1 == ax2:
        raise ValueError("axis1 and axis2 cannot be the same")
    a = moveaxis(a, (ax1, ax2), (-2, -1))
    n, m = get_aval(a).shape[-2:]
    if is_symbolic_dim(n) or is_symbolic_dim(m):  # the indices are computed by the program
        length = max_dim(0, min_dim(n + min(offset, 0), m - max(offset, 0)))
        i = arange(-min(offset, 0), length - min(offset, 0))
        j = arange(max(offset, 0), length + max(offset, 0))
        return getitem(a, (Ellipsis, i, j))
    length = max(0, min(n + min(offset, 0), m - max(offset, 0)))
    i = np.arange(length) - min(offset, 0)
    j = np.arange(length) + max(offset, 0)
    return getitem(a, (Ellipsis, asarray(i), asarray(j)))


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal.

    >>> trace(fnp.array([[1, 2], [3, 4]]))
    Array(5, dtype=int64)
    """
    from .reductions import sum
    check_arraylike("trace", a)
    return sum(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def diag(v, k=0):
    """Extract diagonal ``k`` of a matrix, or build a matrix with ``v`` on diagonal ``k``.

    >>> diag(fnp.array([1, 2]))
    Array([[1, 0],
           [0, 2]], dtype=int64)
    """
    check_arraylike("diag", v)
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
    """The flattened input as the diagonal ``k`` of a square matrix.

    >>> diagflat(fnp.array([[1, 2]]))
    Array([[1, 0],
           [0, 2]], dtype=int64)
    """
    from .shape_ops import ravel
    check_arraylike("diagflat", v)
    return diag(ravel(v), k)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    """Coordinate matrices from coordinate vectors (``indexing`` "xy" or "ij"), as a tuple.

    >>> [g.shape for g in meshgrid(fnp.arange(3), fnp.arange(2))]
    [(2, 3), (2, 3)]
    """
    check_arraylike("meshgrid", *xi)
    if indexing not in ("xy", "ij"):
        raise ValueError(f"fnp.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    arrs = [reshape(asarray(x), (-1,)) for x in xi]
    n = len(arrs)
    shape = [get_aval(a).shape[0] for a in arrs]
    if indexing == "xy" and n > 1:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for i, a in enumerate(arrs):
        pos = 1 - i if indexing == "xy" and n > 1 and i < 2 else i
        s = [1] * n
        s[pos] = get_aval(a).shape[0]
        a = reshape(a, tuple(s))
        out.append(a if sparse else broadcast_to_shape(a, tuple(shape)))
    return tuple(out)


def indices(dimensions, dtype=None, sparse=False):
    """Grid of indices for an array of shape ``dimensions``.

    >>> indices((2, 3)).shape
    (2, 2, 3)
    """
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
    from .joining import stack
    return stack(out) if out else zeros((0,), d)


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """``function(*indices)`` over a grid of ``shape`` (indices of ``dtype``).

    >>> fromfunction(lambda i, j: i * 10 + j, (2, 2), dtype=int)
    Array([[ 0,  1],
           [10, 11]], dtype=int64)
    """
    idx = indices(shape, dtype=dtype)
    return function(*[idx[i] for i in range(len(_shape(shape)))], **kwargs)


def tril_indices(n, k=0, m=None):
    """Row and column indices of the lower triangle of an ``(n, m)`` array.

    >>> tril_indices(2)
    (Array([0, 1, 1], dtype=int64), Array([0, 0, 1], dtype=int64))
    """
    r, c = np.tril_indices(n, k, m)
    return asarray(r), asarray(c)


def triu_indices(n, k=0, m=None):
    """Row and column indices of the upper triangle of an ``(n, m)`` array.

    >>> triu_indices(2)
    (Array([0, 0, 1], dtype=int64), Array([0, 1, 1], dtype=int64))
    """
    r, c = np.triu_indices(n, k, m)
    return asarray(r), asarray(c)


def _square_2d(name, arr):
    s = get_aval(asarray(arr)).shape
    if len(s) != 2:
        raise ValueError(f"fnp.{name}: input array must be 2-d, got shape {s}")
    return s


def tril_indices_from(arr, k=0):
    """:func:`tril_indices` for the shape of the 2-d ``arr``.

    >>> tril_indices_from(fnp.ones((2, 3)), k=1)[1]
    Array([0, 1, 0, 1, 2], dtype=int64)
    """
    check_arraylike("tril_indices_from", arr)
    n, m = _square_2d("tril_indices_from", arr)
    return tril_indices(n, k, m)


def triu_indices_from(arr, k=0):
    """:func:`triu_indices` for the shape of the 2-d ``arr``.

    >>> triu_indices_from(fnp.ones((2, 2)))[1]
    Array([0, 1, 1], dtype=int64)
    """
    check_arraylike("triu_indices_from", arr)
    n, m = _square_2d("triu_indices_from", arr)
    return triu_indices(n, k, m)


def diag_indices(n, ndim=2):
    """Indices of the main diagonal of an ``n x ... x n`` array (``ndim`` copies).

    >>> diag_indices(2)
    (Array([0, 1], dtype=int64), Array([0, 1], dtype=int64))
    """
    i = lax.iota(dtypes.default_int_dtype(), operator.index(n))
    return (i,) * ndim


def diag_indices_from(arr):
    """:func:`diag_indices` for ``arr``, whose dimensions must all be equal.

    >>> diag_indices_from(fnp.ones((3, 3)))[0]
    Array([0, 1, 2], dtype=int64)
    """
    check_arraylike("diag_indices_from", arr)
    s = get_aval(asarray(arr)).shape
    if len(s) < 2:
        raise ValueError(f"fnp.diag_indices_from: input array must be at least 2-d, got {s}")
    if len(set(s)) != 1:
        raise ValueError(f"fnp.diag_indices_from: all dimensions of input must be of equal "
                         f"length, got {s}")
    return diag_indices(s[0], len(s))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """``a`` with its main diagonal set to ``val`` (repeated cyclically), as a new array.

    functrans arrays are immutable, so NumPy's in-place call cannot work; as in JAX, pass
    ``inplace=False`` to get the result.

    >>> fill_diagonal(fnp.zeros((2, 2)), 5.0, inplace=False)
    Array([[5., 0.],
           [0., 5.]], dtype=float64)
    """
    from .indexing import scatter_update
    from .shape_ops import ravel, resize
    check_arraylike("fill_diagonal", a, val)
    if inplace:
        raise NotImplementedError("fnp.fill_diagonal: functrans arrays are immutable; call it "
                                  "with inplace=False and use the returned array")
    a = asarray(a)
    s = get_aval(a).shape
    if len(s) < 2:
        raise ValueError(f"fnp.fill_diagonal: array must be at least 2-d, got shape {s}")
    if len(s) > 2 and len(set(s)) != 1:
        raise ValueError(f"fnp.fill_diagonal: all dimensions of input must be of equal length, "
                         f"got {s}")
    # NumPy's flat stride: a tall 2-d matrix wraps around every N + 1 rows only with wrap.
    step = 1 + int(np.cumprod(s[:-1]).sum()) if len(s) > 2 else s[1] + 1
    end = None if len(s) > 2 or wrap else s[1] * s[1]
    flat_idx = np.arange(math.prod(s))[:end][::step]
    values = resize(convert(asarray(val), get_aval(a).dtype), (len(flat_idx),))
    flat = scatter_update(ravel(a), (asarray(flat_idx),), values, "set")
    return reshape(flat, s)


class _Grid:
    """``mgrid``/``ogrid``: dense or open grids from slices; a complex step ``5j`` is a count
    of points including the end, as in NumPy. The bounds are static."""

    def __init__(self, sparse):
        self.sparse = sparse

    def __getitem__(self, key):
        grid = (np.ogrid if self.sparse else np.mgrid)[key]
        if isinstance(grid, (list, tuple)):
            return tuple(asarray(g.astype(dtypes.canonicalize_dtype(g.dtype))) for g in grid)
        return asarray(grid.astype(dtypes.canonicalize_dtype(grid.dtype)))


mgrid = _Grid(False)
mgrid.__doc__ = """Dense coordinate grids: ``mgrid[0:2, 0:3].shape == (2, 2, 3)``."""
ogrid = _Grid(True)
ogrid.__doc__ = """Open coordinate grids:
``[g.shape for g in ogrid[0:2, 0:3]] == [(2, 1), (1, 3)]``."""


def asanyarray(a, dtype=None, order=None):
    """The same as :func:`asarray` (functrans has no array subclasses).

    >>> asanyarray([1, 2]).dtype
    dtype('int64')
    """
    return asarray(a, dtype)


def ascontiguousarray(a, dtype=None):
    """The same as :func:`asarray`, at least 1-d (memory layout is not observable).

    >>> ascontiguousarray(3.0).shape
    (1,)
    """
    a = asarray(a, dtype)
    return reshape(a, (1,)) if get_aval(a).ndim == 0 else a


def asarray_chkfinite(a, dtype=None, order=None):
    """:func:`asarray`, raising ValueError if the (concrete) values contain inf or NaN.

    >>> asarray_chkfinite([1.0, 2.0])
    Array([1., 2.], dtype=float64)
    """
    from .indexing import _concrete
    a = asarray(a, dtype)
    if dtypes.kind(get_aval(a).dtype) == "f":
        c = _concrete(a)
        if c is None:
            raise TypeError("fnp.asarray_chkfinite: traced values cannot be checked; use "
                            "fnp.isfinite in the computation instead")
        if not np.isfinite(c).all():
            raise ValueError("fnp.asarray_chkfinite: array must not contain infs or NaNs")
    return a


def fromiter(iter, dtype, count=-1):
    """A 1-d array from the values of a Python iterable (read now, at trace time).

    >>> fromiter((i * i for i in range(4)), "int32")
    Array([0, 1, 4, 9], dtype=int32)
    """
    d = dtypes.canonicalize_dtype(dtype, what="fnp.fromiter dtype")
    return asarray(np.fromiter(iter, d, count))


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """A 1-d array reading ``buffer``'s bytes as ``dtype`` (copied: arrays are immutable).

    >>> frombuffer(bytes([1, 0, 2, 0]), "int16")
    Array([1, 2], dtype=int16)
    """
    d = dtypes.canonicalize_dtype(dtype, what="fnp.frombuffer dtype")
    return asarray(np.frombuffer(buffer, d, count, offset).copy())
