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
from ._core import (asarray, broadcast_shapes, broadcast_to_shape, check_arraylike, convert,
                    normalize_axes, normalize_axis, unsupported_out)
from .ufuncs import isnan, _const

__all__ = ["sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std",
           "argmax", "argmin", "cumsum", "cumprod", "cumulative_sum", "cumulative_prod",
           "nansum", "nanprod", "nanmax", "nanmin", "nanmean", "nanvar", "nanstd",
           "nanargmax", "nanargmin", "nancumsum", "nancumprod", "ptp", "count_nonzero",
           "average"]


def _accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """NumPy's default result dtype of sum/prod/cumsum: small ints widen to the default int."""
    if dtypes.kind(dtype) == "b" or (dtypes.kind(dtype) == "i" and dtype.itemsize < 8):
        return dtypes.default_int_dtype()
    if dtypes.kind(dtype) == "u" and dtype.itemsize < 8:
        return dtypes.default_uint_dtype()
    return dtype


def _keepdims(out, in_shape, axes):
    shape = tuple(1 if i in axes else d for i, d in enumerate(in_shape))
    return P.reshape_p.bind1(out, new_sizes=shape) if get_aval(out).shape != shape else out


def where_mask(name, where, shape):
    """``where=`` as a boolean mask of ``shape`` (NumPy refuses non-boolean masks)."""
    w = asarray(where)
    d = get_aval(w).dtype
    if d != dtypes.bool_:
        raise TypeError(f"fnp.{name}: where= must be a boolean mask, got dtype {d}")
    wshape = get_aval(w).shape
    if broadcast_shapes(f"{name} (where=)", wshape, shape) != tuple(shape):
        raise ValueError(f"fnp.{name}: where= of shape {wshape} does not broadcast to the "
                         f"array's shape {tuple(shape)}")
    return broadcast_to_shape(w, shape)


_COMBINE = {P.reduce_sum_p: P.add_p, P.reduce_prod_p: P.mul_p, P.reduce_max_p: P.max_p,
            P.reduce_min_p: P.min_p, P.reduce_and_p: P.and_p, P.reduce_or_p: P.or_p}
# sum/prod of booleans with dtype=bool are NumPy's logical or/and reductions.
_BOOL_VERSION = {P.reduce_sum_p: P.reduce_or_p, P.reduce_prod_p: P.reduce_and_p}


def _reduce(name, prim, a, axis, dtype, out, keepdims, initial, where, identity,
            default_dtype=lambda d: d):
    unsupported_out(name, out)
    a = asarray(a)
    aval = get_aval(a)
    axes = normalize_axes(axis, aval.ndim)
    if dtype is None:
        dtype = default_dtype(aval.dtype)
        if prim in _BOOL_VERSION and dtypes.kind(dtype) == "b":
            dtype = dtypes.default_int_dtype()
    else:
        dtype = dtypes.canonicalize_dtype(dtype, what=f"fnp.{name} dtype=")
    if dtypes.kind(dtype) == "b" and prim in _BOOL_VERSION:
        prim, identity = _BOOL_VERSION[prim], bool(identity)
    a = convert(a, dtype)
    if where is not None:
        mask = where_mask(name, where, aval.shape)
        if identity is None:
            if initial is None:
                raise ValueError(f"fnp.{name}: reduction with where= needs initial= (the "
                                 "reduction has no identity)")
            identity = initial
        a = lax.select(mask, a, lax.full_like(a, identity))
    elif identity is None and initial is None:
        empty = [ax for ax in axes if aval.shape[ax] == 0]
        if empty:
            raise ValueError(f"fnp.{name}: zero-size array to reduction operation {name} which "
                             f"has no identity (axis {empty[0]} of shape {aval.shape} is empty)")
    result = prim.bind1(a, axes=axes)
    if initial is not None:
        init = _const(initial, result) if type(initial) in (bool, int, float, complex) else \
            convert(asarray(initial), dtype)
        result = _COMBINE[prim].bind1(result, init)
    return _keepdims(result, aval.shape, axes) if keepdims else result


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum of elements over ``axis`` (all axes by default).

    >>> sum(fnp.array([[1, 2], [3, 4]]), axis=0)
    Array([4, 6], dtype=int64)
    """
    check_arraylike("sum", a)
    return _reduce("sum", P.reduce_sum_p, a, axis, dtype, out, keepdims, initial, where, 0,
                   _accumulator_dtype)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product of elements over ``axis``.

    >>> prod(fnp.array([1.0, 2.0, 3.0]))
    Array(6., dtype=float64)
    """
    check_arraylike("prod", a)
    return _reduce("prod", P.reduce_prod_p, a, axis, dtype, out, keepdims, initial, where, 1,
                   _accumulator_dtype)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum over ``axis`` (NaN propagates).

    >>> max(fnp.array([1, 5, 3]))
    Array(5, dtype=int64)
    """
    check_arraylike("max", a)
    return _reduce("max", P.reduce_max_p, a, axis, None, out, keepdims, initial, where, None)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum over ``axis`` (NaN propagates).

    >>> min(fnp.array([1, 5, 3]))
    Array(1, dtype=int64)
    """
    check_arraylike("min", a)
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
    check_arraylike("all", a)
    return _bool_reduce("all", P.reduce_and_p, a, axis, out, keepdims, where, True)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where some element over ``axis`` is truthy.

    >>> any(fnp.array([1, 0]))
    Array(True, dtype=bool)
    """
    check_arraylike("any", a)
    return _bool_reduce("any", P.reduce_or_p, a, axis, out, keepdims, where, False)


def _count(name, shape, axes, where, keepdims=False):
    """Number of reduced elements: a Python int, or an int array when ``where`` masks."""
    if where is None:
        return math.prod(shape[ax] for ax in axes)
    mask = convert(where_mask(name, where, shape), dtypes.default_int_dtype())
    count = P.reduce_sum_p.bind1(mask, axes=axes)
    return _keepdims(count, shape, axes) if keepdims else count


def _mean_dtype(dtype):
    if dtypes.kind(dtype) in "biu":
        return dtypes.default_float_dtype()
    return dtype


def _compute_dtype(dtype):
    """NumPy accumulates float16 means and variances in float32."""
    return dtypes.float32 if dtype == dtypes.float16 else dtype


def _divide(total, count, comp):
    if isinstance(count, int):
        return P.div_p.bind1(total, _const(count, total))
    return P.div_p.bind1(total, convert(count, comp))


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean over ``axis`` (integers give float64, as in NumPy).

    >>> mean(fnp.array([1, 2, 3, 4]))
    Array(2.5, dtype=float64)
    """
    check_arraylike("mean", a)
    unsupported_out("mean", out)
    a = asarray(a)
    aval = get_aval(a)
    axes = normalize_axes(axis, aval.ndim)
    out_dtype = _mean_dtype(aval.dtype) if dtype is None else \
        dtypes.canonicalize_dtype(dtype, what="fnp.mean dtype=")
    comp = _compute_dtype(out_dtype)
    if where is not None:
        where = where_mask("mean", where, aval.shape)
    total = sum(convert(a, comp), axis=axes, dtype=comp, keepdims=keepdims, where=where)
    count = _count("mean", aval.shape, axes, where, keepdims)
    if comp.kind in "biu":
        # NumPy divides an integer total in float64 and casts back (truncating).
        comp = dtypes.default_float_dtype()
        total = convert(total, comp)
    return convert(_divide(total, count, comp), out_dtype)


def _var(name, a, axis, dtype, out, ddof, keepdims, where, mean_, correction, nan_dof,
         sqrt=False, squared=False):
    unsupported_out(name, out)
    if correction is not None:
        if ddof != 0:
            raise ValueError(f"fnp.{name}: ddof and correction can't be provided simultaneously")
        ddof = correction
    a = asarray(a)
    aval = get_aval(a)
    axes = normalize_axes(axis, aval.ndim)
    out_dtype = _mean_dtype(aval.dtype) if dtype is None else \
        dtypes.canonicalize_dtype(dtype, what=f"fnp.{name} dtype=")
    if dtypes.kind(out_dtype) == "c":
        # NumPy: the mean of |x - mean|**2, a real number.
        if dtype is not None:
            raise TypeError(f"fnp.{name}: dtype= must be a floating-point dtype for the "
                            f"(real) variance of complex values, got {out_dtype}")
        x = convert(a, out_dtype)
        mu = mean(x, axis=axes, keepdims=True, where=where) if mean_ is None else \
            convert(asarray(mean_), out_dtype)
        c = P.sub_p.bind1(x, broadcast_to_shape(mu, aval.shape))
        sq = P.add_p.bind1(*(P.mul_p.bind1(p, p) for p in (P.real_p.bind1(c), P.imag_p.bind1(c))))
        return _var(name, sq, axes, None, None, ddof, keepdims, where, 0.0, None, nan_dof,
                    sqrt, squared=True)
    if dtypes.kind(out_dtype) != "f":
        raise TypeError(f"fnp.{name}: dtype= must be a floating-point dtype, got {out_dtype} "
                        "(NumPy would truncate the mean and wrap the squares around)")
    comp = _compute_dtype(out_dtype)
    if where is not None:
        where = where_mask(name, where, aval.shape)
    x = convert(a, comp)
    if mean_ is None:
        mu = mean(x, axis=axes, keepdims=True, where=where)
    else:
        mu = convert(asarray(mean_), comp)
    centered = P.sub_p.bind1(x, broadcast_to_shape(mu, aval.shape))
    # ``squared``: ``a`` already holds the squared deviations (complex input, see above).
    total = sum(x if squared else P.mul_p.bind1(centered, centered), axis=axes,
                keepdims=keepdims, where=where)
    count = _count(name, aval.shape, axes, where, keepdims)
    if isinstance(count, int):
        dof = count - ddof
        result = P.div_p.bind1(total, _const(builtins.max(dof, 0), total))
        if nan_dof and dof <= 0:
            result = lax.full_like(result, np.nan)
    else:
        dof = P.sub_p.bind1(convert(count, comp), _const(ddof, total))
        # NumPy's var divides by max(n - ddof, 0); nanvar gives nan when n - ddof <= 0.
        result = P.div_p.bind1(total, P.max_p.bind1(dof, _const(0, dof)))
        if nan_dof:
            result = lax.select(P.le_p.bind1(dof, _const(0, dof)),
                                lax.full_like(result, np.nan), result)
    if sqrt:  # before rounding to float16: the variance may overflow where std does not
        result = P.sqrt_p.bind1(result)
    return convert(result, out_dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        mean=None, correction=None):
    """Variance over ``axis`` with ``ddof`` (or its Array-API alias ``correction``).

    >>> var(fnp.array([1.0, 2.0, 3.0, 4.0]))
    Array(1.25, dtype=float64)
    """
    check_arraylike("var", a)
    return _var("var", a, axis, dtype, out, ddof, keepdims, where, mean, correction, False)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
    """Standard deviation over ``axis`` (square root of :func:`var`).

    >>> std(fnp.array([1.0, 3.0]))
    Array(1., dtype=float64)
    """
    check_arraylike("std", a)
    return _var("std", a, axis, dtype, out, ddof, keepdims, where, mean, correction, False, True)


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
    check_arraylike("argmax", a)
    return _arg_reduce("argmax", P.argmax_p, a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the minimum (first occurrence; NaN wins, as in NumPy).

    >>> argmin(fnp.array([1, 3, 0]))
    Array(2, dtype=int64)
    """
    check_arraylike("argmin", a)
    return _arg_reduce("argmin", P.argmin_p, a, axis, out, keepdims)


def _cumulative(name, prim, a, axis, dtype, out):
    unsupported_out(name, out)
    a = asarray(a)
    aval = get_aval(a)
    if axis is None:
        a = P.reshape_p.bind1(a, new_sizes=(aval.size,))
        axis = 0
    axis = normalize_axis(axis, get_aval(a).ndim)
    dtype = _accumulator_dtype(aval.dtype) if dtype is None else \
        dtypes.canonicalize_dtype(dtype, what=f"fnp.{name} dtype=")
    if dtype == dtypes.bool_:
        # Boolean add/multiply are or/and: running max/min of 0/1 values.
        prim = P.cummax_p if prim is P.cumsum_p else P.cummin_p
        scan = prim.bind1(convert(a, dtypes.uint8), axis=axis, reverse=False)
        return convert(scan, dtypes.bool_)
    return prim.bind1(convert(a, dtype), axis=axis, reverse=False)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (flattened when None).

    >>> cumsum(fnp.array([1, 2, 3]))
    Array([1, 3, 6], dtype=int64)
    """
    check_arraylike("cumsum", a)
    return _cumulative("cumsum", P.cumsum_p, a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (flattened when None).

    >>> cumprod(fnp.array([1, 2, 3]))
    Array([1, 2, 6], dtype=int64)
    """
    check_arraylike("cumprod", a)
    return _cumulative("cumprod", P.cumprod_p, a, axis, dtype, out)


def _include_initial(result, axis, identity):
    aval = get_aval(result)
    pad = [(0, 0, 0)] * aval.ndim
    pad[axis] = (1, 0, 0)
    return lax.pad(result, _const(identity, result), pad)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative sum (``axis`` required for rank > 1).

    >>> cumulative_sum(fnp.array([1, 2, 3]), include_initial=True)
    Array([0, 1, 3, 6], dtype=int64)
    """
    check_arraylike("cumulative_sum", x)
    x = asarray(x)
    if get_aval(x).ndim == 0:
        x = P.reshape_p.bind1(x, new_sizes=(1,))  # NumPy treats 0-d input as 1-d
    if axis is None:
        if get_aval(x).ndim > 1:
            raise ValueError("fnp.cumulative_sum requires axis= for arrays of rank > 1")
        axis = 0
    r = cumsum(x, axis, dtype)
    return _include_initial(r, normalize_axis(axis, get_aval(x).ndim), 0) if include_initial else r


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Array-API cumulative product (``axis`` required for rank > 1).

    >>> cumulative_prod(fnp.array([1, 2, 3]))
    Array([1, 2, 6], dtype=int64)
    """
    check_arraylike("cumulative_prod", x)
    x = asarray(x)
    if get_aval(x).ndim == 0:
        x = P.reshape_p.bind1(x, new_sizes=(1,))  # NumPy treats 0-d input as 1-d
    if axis is None:
        if get_aval(x).ndim > 1:
            raise ValueError("fnp.cumulative_prod requires axis= for arrays of rank > 1")
        axis = 0
    r = cumprod(x, axis, dtype)
    return _include_initial(r, normalize_axis(axis, get_aval(x).ndim), 1) if include_initial else r


# ---- NaN-ignoring variants -----------------------------------------------------------------------------
def _nan_to(a, value):
    # A complex number is NaN where either part is (NumPy's and JAX's nan-functions).
    a = asarray(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        return a
    return lax.select(isnan(a), lax.full_like(a, value), a)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum treating NaN as zero.

    >>> nansum(fnp.array([1.0, fnp.nan, 3.0]))
    Array(4., dtype=float64)
    """
    check_arraylike("nansum", a)
    return sum(_nan_to(a, 0), axis, dtype, out, keepdims, initial, where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product treating NaN as one.

    >>> nanprod(fnp.array([2.0, fnp.nan, 3.0]))
    Array(6., dtype=float64)
    """
    check_arraylike("nanprod", a)
    return prod(_nan_to(a, 1), axis, dtype, out, keepdims, initial, where)


def _nan_extreme(reducer, a, axis, out, keepdims, initial, where, fill):
    a = asarray(a)
    if dtypes.kind(get_aval(a).dtype) not in "fc":
        return reducer(a, axis, out, keepdims, initial, where)
    m = reducer(_nan_to(a, fill), axis, out, keepdims, initial, where)
    if initial is not None:
        return m  # NumPy's fmax/fmin reduction: the initial value beats NaNs
    return lax.select(_all_nan(a, axis, keepdims, where), lax.full_like(m, np.nan), m)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum ignoring NaNs (NaN where a slice is all-NaN).

    >>> nanmax(fnp.array([1.0, fnp.nan, 3.0]))
    Array(3., dtype=float64)
    """
    check_arraylike("nanmax", a)
    return _nan_extreme(max, a, axis, out, keepdims, initial, where, -np.inf)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum ignoring NaNs (NaN where a slice is all-NaN).

    >>> nanmin(fnp.array([1.0, fnp.nan, 3.0]))
    Array(1., dtype=float64)
    """
    check_arraylike("nanmin", a)
    return _nan_extreme(min, a, axis, out, keepdims, initial, where, np.inf)


def _all_nan(a, axis, keepdims, where=None):
    return all(isnan(a), axis=axis, keepdims=keepdims, where=where)


def _nan_mask(name, a, where):
    mask = P.not_p.bind1(isnan(a))
    if where is not None:
        mask = P.and_p.bind1(mask, where_mask(name, where, get_aval(a).shape))
    return mask


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean ignoring NaNs (NaN for all-NaN slices).

    >>> nanmean(fnp.array([1.0, fnp.nan, 3.0]))
    Array(2., dtype=float64)
    """
    check_arraylike("nanmean", a)
    a = asarray(a)
    if dtypes.kind(get_aval(a).dtype) != "f":
        return mean(a, axis, dtype, out, keepdims, where=where)
    return mean(_nan_to(a, 0), axis, dtype, out, keepdims, where=_nan_mask("nanmean", a, where))


def _nanvar(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction, sqrt):
    a = asarray(a)
    if dtypes.kind(get_aval(a).dtype) != "f":  # no NaNs: plain var, as NumPy
        return _var(name, a, axis, dtype, out, ddof, keepdims, where, mean, correction, False,
                    sqrt)
    where = _nan_mask(name, a, where)
    return _var(name, _nan_to(a, 0), axis, dtype, out, ddof, keepdims, where, mean, correction,
                True, sqrt)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """Variance ignoring NaNs (NaN where fewer than ``ddof + 1`` values remain).

    >>> nanvar(fnp.array([1.0, fnp.nan, 3.0]))
    Array(1., dtype=float64)
    """
    check_arraylike("nanvar", a)
    return _nanvar("nanvar", a, axis, dtype, out, ddof, keepdims, where, mean, correction,
                   False)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
           mean=None, correction=None):
    """Standard deviation ignoring NaNs.

    >>> nanstd(fnp.array([1.0, fnp.nan, 3.0]))
    Array(1., dtype=float64)
    """
    check_arraylike("nanstd", a)
    return _nanvar("nanstd", a, axis, dtype, out, ddof, keepdims, where, mean, correction, True)


def _nanarg(name, fn, a, axis, out, keepdims, fill):
    a = asarray(a)
    result = fn(_nan_to(a, fill), axis, out, keepdims=keepdims)
    if dtypes.kind(get_aval(a).dtype) != "f":
        return result
    # NumPy raises for all-NaN slices, which traced code cannot do: like JAX, return -1.
    return lax.select(_all_nan(a, axis, keepdims), lax.full_like(result, -1), result)


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """argmax ignoring NaNs (-1 for all-NaN slices, as in JAX).

    >>> nanargmax(fnp.array([1.0, fnp.nan, 3.0]))
    Array(2, dtype=int64)
    """
    check_arraylike("nanargmax", a)
    return _nanarg("nanargmax", argmax, a, axis, out, keepdims, -np.inf)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """argmin ignoring NaNs (-1 for all-NaN slices, as in JAX).

    >>> nanargmin(fnp.array([1.0, fnp.nan, 3.0]))
    Array(0, dtype=int64)
    """
    check_arraylike("nanargmin", a)
    return _nanarg("nanargmin", argmin, a, axis, out, keepdims, np.inf)


def nancumsum(a, axis=None, dtype=None, out=None):
    """cumsum treating NaN as zero.

    >>> nancumsum(fnp.array([1.0, fnp.nan, 3.0]))
    Array([1., 1., 4.], dtype=float64)
    """
    check_arraylike("nancumsum", a)
    return cumsum(_nan_to(a, 0), axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """cumprod treating NaN as one.

    >>> nancumprod(fnp.array([2.0, fnp.nan, 3.0]))
    Array([2., 2., 6.], dtype=float64)
    """
    check_arraylike("nancumprod", a)
    return cumprod(_nan_to(a, 1), axis, dtype, out)


def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak (max - min) over ``axis``, in the array's dtype (integers wrap).

    >>> ptp(fnp.array([[1, 5], [2, 3]]), axis=1)
    Array([4, 1], dtype=int64)
    """
    from .ufuncs import subtract
    check_arraylike("ptp", a)
    unsupported_out("ptp", out)
    return subtract(max(a, axis, None, keepdims), min(a, axis, None, keepdims))


def count_nonzero(a, axis=None, *, keepdims=False):
    """Number of non-zero elements over ``axis``.

    >>> count_nonzero(fnp.array([0, 1, 2]))
    Array(2, dtype=int64)
    """
    check_arraylike("count_nonzero", a)
    a = asarray(a)
    nz = a if get_aval(a).dtype == dtypes.bool_ else P.ne_p.bind1(a, _const(0, a))
    return sum(nz, axis=axis, keepdims=keepdims)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average over ``axis``; with ``returned=True`` also the sum of weights
    (broadcast to the average's shape). NumPy raises for weights summing to zero; traced code
    cannot, so those averages are inf or nan.

    >>> average(fnp.array([1.0, 2.0, 4.0]), weights=fnp.array([1, 1, 2]))
    Array(2.75, dtype=float64)
    """
    from .ufuncs import true_divide
    check_arraylike("average", a, weights, allow_none=True)
    a = asarray(a)
    aval = get_aval(a)
    if weights is None:
        avg = mean(a, axis, keepdims=keepdims)
        d = get_aval(avg).dtype
        count = aval.size // builtins.max(get_aval(avg).size, 1) if aval.size else 0
        return (avg, lax.full_like(avg, count, d)) if returned else avg
    w = asarray(weights)
    wval = get_aval(w)
    if dtypes.kind(aval.dtype) in "biu":
        result_dtype = dtypes.promote_types(dtypes.promote_types(aval.dtype, wval.dtype),
                                            dtypes.default_float_dtype())
    else:
        result_dtype = dtypes.promote_types(aval.dtype, wval.dtype)
    if wval.shape != aval.shape:
        if axis is None:
            raise TypeError("fnp.average: axis must be specified when shapes of a and weights "
                            f"differ, got {aval.shape} and {wval.shape}")
        normalize_axes(axis, aval.ndim)  # range and duplicate checks
        axes = tuple(normalize_axis(ax, aval.ndim) for ax in (
            axis if isinstance(axis, (tuple, list)) else (axis,)))
        if wval.shape != tuple(aval.shape[ax] for ax in axes):
            raise ValueError(f"fnp.average: shape of weights {wval.shape} must be consistent "
                             f"with shape of a {aval.shape} along specified axis {axis}")
        # The weights' dimensions follow the order of ``axis``.
        w = lax.transpose(w, tuple(int(i) for i in np.argsort(axes)))
        shape = tuple(aval.shape[d] if d in axes else 1 for d in range(aval.ndim))
        w = broadcast_to_shape(P.reshape_p.bind1(w, new_sizes=shape), aval.shape)
    a, w = convert(a, result_dtype), convert(w, result_dtype)
    wsum = sum(w, axis=axis, keepdims=keepdims)
    avg = true_divide(sum(P.mul_p.bind1(a, w), axis=axis, keepdims=keepdims), wsum)
    return (avg, wsum) if returned else avg
