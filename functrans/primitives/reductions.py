"""Reductions (reduce_sum/max/min/prod/and/or, argmax/argmin) and cumulative ops
(cumsum/cumprod/cummax/cummin/cumlogsumexp), built by the :func:`reducer` and
:func:`cumulative` category factories.

    >>> reduce_sum_p.bind1(np.ones((2, 3)), axes=(1,))
    Array([3., 3.], dtype=float64)
"""
from __future__ import annotations

import numpy as np

from ..core.avals import ShapedArray
from ..core.trace import Primitive
from .elementwise import check_dtypes
from .structural import _check_axes


def _identity(ufunc, dtype):
    """The reduction's identity: what reducing an empty axis gives (XLA semantics)."""
    if ufunc is np.maximum:
        return -np.inf if dtype.kind == "f" else (False if dtype.kind == "b" else np.iinfo(dtype).min)
    if ufunc is np.minimum:
        return np.inf if dtype.kind == "f" else (True if dtype.kind == "b" else np.iinfo(dtype).max)
    if ufunc is np.bitwise_and:
        return True if dtype.kind == "b" else -1 if dtype.kind == "i" else np.iinfo(dtype).max
    return {np.add: 0, np.multiply: 1, np.bitwise_or: 0}[ufunc]


def reducer(name, ufunc, kinds) -> Primitive:
    """A reduction primitive over ``axes`` with the monoid ``ufunc``."""
    def abstract_eval(x, *, axes):
        _check_axes(name, axes, x.ndim)
        d = check_dtypes(name, [x], kinds)
        shape = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return [ShapedArray(shape, d, x.weak_type)]

    def impl(x, *, axes):
        with np.errstate(all="ignore"):
            if ufunc is np.add or ufunc is np.multiply:
                return [ufunc.reduce(x, axis=axes, dtype=x.dtype)]
            return [ufunc.reduce(x, axis=axes, initial=_identity(ufunc, x.dtype))]

    return Primitive(name, impl=impl, abstract_eval=abstract_eval, traits={"reduction"})


reduce_sum_p = reducer("reduce_sum", np.add, "iuf")
reduce_prod_p = reducer("reduce_prod", np.multiply, "iuf")
reduce_max_p = reducer("reduce_max", np.maximum, "iufb")
reduce_min_p = reducer("reduce_min", np.minimum, "iufb")
reduce_and_p = reducer("reduce_and", np.bitwise_and, "iub")
reduce_or_p = reducer("reduce_or", np.bitwise_or, "iub")


def _arg_reducer(name, np_fn):
    def abstract_eval(x, *, axes, index_dtype):
        if len(axes) != 1:
            raise TypeError(f"{name} reduces exactly one axis, got axes={axes}")
        _check_axes(name, axes, x.ndim)
        if x.shape[axes[0]] == 0:
            raise ValueError(f"{name}: cannot reduce the empty axis {axes[0]} of {x.str_short()}")
        if np.dtype(index_dtype).kind not in "iu":
            raise TypeError(f"{name}: index_dtype must be an integer dtype, got {index_dtype}")
        shape = tuple(s for i, s in enumerate(x.shape) if i != axes[0])
        return [ShapedArray(shape, np.dtype(index_dtype))]

    def impl(x, *, axes, index_dtype):
        return [np_fn(x, axis=axes[0]).astype(index_dtype)]

    return Primitive(name, impl=impl, abstract_eval=abstract_eval, traits={"reduction"})


argmax_p = _arg_reducer("argmax", np.argmax)
argmin_p = _arg_reducer("argmin", np.argmin)


def cumulative(name, accumulate, kinds) -> Primitive:
    """A scan along ``axis`` (optionally ``reverse``) with a NumPy accumulate function."""
    def abstract_eval(x, *, axis, reverse):
        _check_axes(name, (axis,), x.ndim, "axis")
        check_dtypes(name, [x], kinds)
        return [x]

    def impl(x, *, axis, reverse):
        with np.errstate(all="ignore"):
            if reverse:
                return [np.flip(accumulate(np.flip(x, axis), axis), axis)]
            return [accumulate(x, axis)]

    return Primitive(name, impl=impl, abstract_eval=abstract_eval, traits={"cumulative"})


cumsum_p = cumulative("cumsum", lambda x, a: np.cumsum(x, a, dtype=x.dtype), "iuf")
cumprod_p = cumulative("cumprod", lambda x, a: np.cumprod(x, a, dtype=x.dtype), "iuf")
cummax_p = cumulative("cummax", lambda x, a: np.maximum.accumulate(x, a), "iuf")
cummin_p = cumulative("cummin", lambda x, a: np.minimum.accumulate(x, a), "iuf")
cumlogsumexp_p = cumulative("cumlogsumexp", lambda x, a: np.logaddexp.accumulate(x, a), "f")
