"""Reductions with NumPy's signatures (axis, dtype, keepdims, initial, where) and result dtypes.

    >>> sum(fnp.ones((2, 3), "int8"), axis=1)      # NumPy: small ints accumulate in int64
    Array([3, 3], dtype=int64)
"""
from __future__ import annotations

import builtins
import math

import numpy as np

from .. import lax
from .. import primitives as P
from ..core import dtypes
from ..core.trace import get_aval
from ._core import (asarray, broadcast_to_shape, convert, normalize_axes, normalize_axis,
                    unsupported_out)
from .ufuncs import isnan, _const

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std",
           "argmax", "argmin", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod",
           "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
           "nanargmax", "nanargmin", "nancumsum", "nancumprod", "ptp", "count_nonzero",
           "average"]


def _accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """NumPy's default result dtype of sum/prod/cumsum: small ints widen to the default int."""
    if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < 8):
        return dtypes.default_int_dtype()
    if dtype.kind == "u" and dtype.itemsize < 8:
        return dtypes.default_uint_dtype()
    return dtype


def _keepdims(out, in_shape, axes):
    shape = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return P.reshape_p.bind1(out, new_sizes=shape) if get_aval(out).shape != shape else out


def _reduce(name, prim, a, axis, dtype, out, keepdims, initial, where, identity,
            default_dtype=lambda d: d):
    unsupported_out(name, out)
    a = asarray(a)
    aval = get_aval(a)
    axes = normalize_axes(axis, aval.ndim)
    dtype = default_dtype(aval.dtype) if dtype is None else dtypes.canonicalize_dtype(dtype)
    if prim in (P.reduce_sum_p, P.reduce_prod_p) and dtype.kind == "b":
        dtype = dtypes.default_int_dtype()
    a = convert(a, dtype)
    if where is not None:
        if identity is None:
            if initial is None:
                raise ValueError(f"fnp.{name}: reduction with where= needs initial=")
            identity = initial
        mask = broadcast_to_shape(asarray(where, dtypes.bool_), aval.shape)
        a = lax.select(mask, a, lax.full_like(a, identity))
    elif identity is None and initial is None:
        empty = [ax for ax in axes if aval.shape[ax] == 0]
        if empty:
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             "identity")
    result = prim.bind1(a, axes=axes)
    if initial is not None:
        combine = {P.reduce_sum_p: P.add_p, P.reduce_prod_p: P.mul_p, P.reduce_max_p: P.max_p,
                   P.reduce_min_p: P.min_p, P.reduce_and_p: P.and_p, P.reduce_or_p: P.or_p}[prim]
        result = combine.bind1(result, _const(initial, result) if type(initial) in (
            bool, int, float) else convert(asarray(initial), dtype))
    return _keepdims(result, aval.shape, axes) if keepdims else result


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum of elements over ``axis`` (all axes by default).

    >>> sum(fnp.array([[1, 2], [3, 4]]), axis=0)
    Array([4, 6], dtype=int64)
    """
    return _reduce("sum", P.reduce_sum_p, a, axis, dtype, out, keepdims, initial, where, 0,
                   _accumulator_dtype)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product of elements over ``axis``.

    >>> prod(fnp.array([1.0, 2.0, 3.0]))
    Array(6., dtype=float64)
    """
    return _reduce("prod", P.reduce_prod_p, a, axis, dtype, out, keepdims, initial, where, 1,
                   _accumulator_dtype)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum over ``axis`` (NaN propagates).

    >>> max(fnp.array([1, 5, 3]))
    Array(5, dtype=int64)
    """
    return _reduce("max", P.reduce_max_p, a, axis, None, out, keepdims, initial, where, None)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum over ``axis`` (NaN propagates).

    >>> min(fnp.array([1, 5, 3]))
    Array(1, dtype=int64)
    """
    return _reduce("min", P.reduce_min_p, a, axis, None, out, keepdims, initial, where, None)


amax, amin = max, min


def _bool_reduce(name, prim, a, axis, out, keepdims, where, identity):
    a = asarray(a)
    if get_aval(a).dtype != dtypes.bool_:
        a = P.ne_p.bind1(a, _const(0, a))
    return _reduce(name, prim, a, axis, None, out, keepdims, None, where, identity)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where every element over ``axis`` is truthy.

    >>> all(fnp.array([1, 0]))
    Array(False, dtype=bool)
    """
    return _bool_reduce("all", P.reduce_and_p, a, axis, out, keepdims, where, True)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where some element over ``axis`` is truthy.

    >>> any(fnp.array([1, 0]))
    Array(True, dtype=bool)
    """
    return _bool_reduce("any", P.reduce_or_p, a, axis, out, keepdims, where, False)


def _count(shape, axes, where):
    if where is None:
        return math.prod(shape[ax] for ax in axes)
    mask = broadcast_to_shape(asarray(where, dtypes.bool_), shape)
    return P.reduce_sum_p.bind1(convert(mask, dtypes.default_int_dtype()), axes=axes)


def _mean_dtype(dtype):
    if dtype.kind in "biu":
        return dtypes.default_float_dtype()
    return dtype


def _compute_dtype(dtype):
    """NumPy accumulates float16 means and variances in float32."""
    return dtypes.float32 if dtype == dtypes.float16 else dtype


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis`` (integers give float64, as in NumPy).

    >>> mean(fnp.array([1, 2, 3, 4]))
    Array(2.5, dtype=float64)
    """
    unsupported_out("mean", out)
    a = asarray(a)
    aval = get_aval(a)
    axes = normalize_axes(axis, aval.ndim)
    out_dtype = _mean_dtype(aval.dtype) if dtype is None else dtypes.canonicalize_dtype(dtype)
    comp = _compute_dtype(out_dtype)
    total = sum(convert(a, comp), axis=axes, keepdims=keepdims, where=where)
    count = _count(aval.shape, axes, where)
    if not isinstance(count, int):
        count = convert(count, comp)
        if keepdims:
            count = _keepdims(count, aval.shape, axes)
        result = P.div_p.bind1(total, count)
    else:
        result = P.div_p.bind1(total, _const(count, total))
    return convert(result, out_dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """Variance over ``axis`` with ``ddof`` (or its Array-API alias ``correction``).

    >>> var(fnp.array([1.0, 2.0, 3.0, 4.0]))
    Array(1.25, dtype=float64)
    """
    unsupported_out("var", out)
    if correction is not None:
        ddof = correction
    a = asarray(a)
    aval = get_aval(a)
    axes = normalize_axes(axis, aval.ndim)
    out_dtype = _mean_dtype(aval.dtype) if dtype is None else dtypes.canonicalize_dtype(dtype)
    comp = _compute_dtype(out_dtype)
    x = convert(a, comp)
    mu = globals()["mean"](x, axis=axes, keepdims=True, where=where) if mean is None else \
        convert(asarray(mean), comp)
    centered = P.sub_p.bind1(x, broadcast_to_shape(mu, aval.shape))
    sq = P.mul_p.bind1(centered, centered)
    total = sum(sq, axis=axes, keepdims=keepdims, where=where)
    count = _count(aval.shape, axes, where)
    if isinstance(count, int):
        result = P.div_p.bind1(total, _const(builtins.max(count - ddof, 0), total))
    else:
        denom = convert(P.sub_p.bind1(count, _const(ddof, count)), comp)
        if keepdims:
            denom = _keepdims(denom, aval.shape, axes)
        result = P.div_p.bind1(total, denom)
    return convert(result, out_dtype)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Standard deviation over ``axis`` (square root of :func:`var`).

    >>> std(fnp.array([1.0, 3.0]))
    Array(1., dtype=float64)
    """
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
    return P.sqrt_p.bind1(v)


def _arg_reduce(name, prim, a, axis, out, keepdims):
    unsupported_out(name, out)
    a = asarray(a)
    aval = get_aval(a)
    if axis is None:
        a = P.reshape_p.bind1(a, new_sizes=(aval.size,)) if aval.ndim != 1 else a
        ax = 0
    else:
        ax = normalize_axis(axis, aval.ndim)
    if get_aval(a).shape[ax] == 0:
        raise ValueError(f"attempt to get {name} of an empty sequence")
    result = prim.bind1(a, axes=(ax,), index_dtype=dtypes.default_int_dtype())
    if keepdims:
        axes = tuple(range(aval.ndim)) if axis is None else (ax,)
        result = _keepdims(result, aval.shape, axes)
    return result


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the maximum (first occurrence; NaN wins, as in NumPy).

    >>> argmax(fnp.array([1, 3, 2]))
    Array(1, dtype=int64)
    """
    return _arg_reduce("argmax", P.argmax_p, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the minimum (first occurrence; NaN wins, as in NumPy).

    >>> argmin(fnp.array([1, 3, 0]))
    Array(2, dtype=int64)
    """
    return _arg_reduce("argmin", P.argmin_p, a, axis, out, keepdims)


def _cumulative(name, prim, a, axis, dtype, out):
    unsupported_out(name, out)
    a = asarray(a)
    aval = get_aval(a)
    if axis is None:
        a = P.reshape_p.bind1(a, new_sizes=(aval.size,))
        axis = 0
    axis = normalize_axis(axis, get_aval(a).ndim)
    dtype = _accumulator_dtype(aval.dtype) if dtype is None else dtypes.canonicalize_dtype(dtype)
    return prim.bind1(convert(a, dtype), axis=axis, reverse=False)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (flattened when None).

    >>> cumsum(fnp.array([1, 2, 3]))
    Array([1, 3, 6], dtype=int64)
    """
    return _cumulative("cumsum", P.cumsum_p, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (flattened when None).

    >>> cumprod(fnp.array([1, 2, 3]))
    Array([1, 2, 6], dtype=int64)
    """
    return _cumulative("cumprod", P.cumprod_p, a, axis, dtype, out)


def _include_initial(result, axis, identity):
    aval = get_aval(result)
    pad = [(0, 0, 0)] * aval.ndim
    pad[axis] = (1, 0, 0)
    return lax.pad(result, _const(identity, result), pad)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative sum (``axis`` required for rank > 1)."""
    x = asarray(x)
    if axis is None:
        if get_aval(x).ndim > 1:
            raise ValueError("cumulative_sum requires axis= for arrays of rank > 1")
        axis = 0
    r = cumsum(x, axis, dtype)
    return _include_initial(r, normalize_axis(axis, get_aval(x).ndim), 0) if include_initial else r


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative product (``axis`` required for rank > 1)."""
    x = asarray(x)
    if axis is None:
        if get_aval(x).ndim > 1:
            raise ValueError("cumulative_prod requires axis= for arrays of rank > 1")
        axis = 0
    r = cumprod(x, axis, dtype)
    return _include_initial(r, normalize_axis(axis, get_aval(x).ndim), 1) if include_initial else r


# ---- NaN-ignoring variants -----------------------------------------------------------------------------
def _nan_to(a, value):
    a = asarray(a)
    if get_aval(a).dtype.kind != "f":
        return a
    return lax.select(isnan(a), lax.full_like(a, value), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaN as zero."""
    return sum(_nan_to(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaN as one."""
    return prod(_nan_to(a, 1), axis, dtype, out, keepdims, initial, where)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum ignoring NaNs (NaN where a slice is all-NaN)."""
    a = asarray(a)
    m = max(_nan_to(a, -np.inf), axis, out, keepdims, initial, where)
    return _all_nan_to_nan(a, m, axis, keepdims)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum ignoring NaNs (NaN where a slice is all-NaN)."""
    a = asarray(a)
    m = min(_nan_to(a, np.inf), axis, out, keepdims, initial, where)
    return _all_nan_to_nan(a, m, axis, keepdims)


def _all_nan_to_nan(a, m, axis, keepdims):
    if get_aval(a).dtype.kind != "f":
        return m
    all_nan = all(isnan(a), axis=axis, keepdims=keepdims)
    return lax.select(all_nan, lax.full_like(m, np.nan), m)


def _nan_count(a, axis, keepdims):
    return sum(P.not_p.bind1(isnan(a)), axis=axis, keepdims=keepdims)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean ignoring NaNs."""
    a = asarray(a)
    if get_aval(a).dtype.kind != "f":
        return mean(a, axis, dtype, out, keepdims, where=where)
    mask = P.not_p.bind1(isnan(a))
    if where is not None:
        mask = P.and_p.bind1(mask, broadcast_to_shape(asarray(where, dtypes.bool_), get_aval(a).shape))
    return mean(a, axis, dtype, out, keepdims, where=mask)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Variance ignoring NaNs."""
    a = asarray(a)
    if get_aval(a).dtype.kind != "f":
        return var(a, axis, dtype, out, ddof, keepdims, where=where)
    mask = P.not_p.bind1(isnan(a))
    if where is not None:
        mask = P.and_p.bind1(mask, broadcast_to_shape(asarray(where, dtypes.bool_), get_aval(a).shape))
    return var(a, axis, dtype, out, ddof, keepdims, where=mask)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None):
    """Standard deviation ignoring NaNs."""
    return P.sqrt_p.bind1(nanvar(a, axis, dtype, out, ddof, keepdims, where=where))


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """argmax ignoring NaNs."""
    return argmax(_nan_to(a, -np.inf), axis, out, keepdims=keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """argmin ignoring NaNs."""
    return argmin(_nan_to(a, np.inf), axis, out, keepdims=keepdims)


def nancumsum(a, axis=None, dtype=None, out=None):
    """cumsum treating NaN as zero."""
    return cumsum(_nan_to(a, 0), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """cumprod treating NaN as one."""
    return cumprod(_nan_to(a, 1), axis, dtype, out)


def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak (max - min) over ``axis``."""
    return P.sub_p.bind1(max(a, axis, out, keepdims), min(a, axis, out, keepdims))


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of non-zero elements over ``axis``.

    >>> count_nonzero(fnp.array([0, 1, 2]))
    Array(2, dtype=int64)
    """
    a = asarray(a)
    nz = a if get_aval(a).dtype == dtypes.bool_ else P.ne_p.bind1(a, _const(0, a))
    return sum(nz, axis=axis, keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average over ``axis``; with ``returned=True`` also the sum of weights."""
    a = asarray(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        aval = get_aval(a)
        count = math.prod(aval.shape[ax] for ax in normalize_axes(axis, aval.ndim))
        return (avg, lax.full_like(avg, count)) if returned else avg
    from .ufuncs import multiply, true_divide
    w = asarray(weights)
    aval, wval = get_aval(a), get_aval(w)
    if wval.shape != aval.shape:
        if axis is None or wval.ndim != 1:
            raise TypeError("fnp.average: 1-D weights need axis=; otherwise weights must have "
                            f"the shape of a, got {wval.shape} and {aval.shape}")
        ax = normalize_axis(axis, aval.ndim)
        shape = [1] * aval.ndim
        shape[ax] = wval.shape[0]
        w = P.reshape_p.bind1(w, new_sizes=tuple(shape))
    wsum = sum(broadcast_to_shape(w, aval.shape) if get_aval(w).shape != aval.shape else w,
               axis=axis, keepdims=keepdims)
    total = sum(multiply(a, w), axis=axis, keepdims=keepdims)
    avg = true_divide(total, wsum)
    return (avg, convert(wsum, get_aval(avg).dtype)) if returned else avg
