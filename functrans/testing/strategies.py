"""Hypothesis strategies for functrans tests (``functrans.testing`` re-exports them): dtypes,
shapes (broadcastable ones too), axes, Python scalars, arrays with moderate values (or
special ones), and :func:`float_arrays`, well-conditioned inputs for derivative checks.
hypothesis is a dev dependency: without it the strategies raise ImportError when called.

    >>> from hypothesis import find
    >>> find(shapes(min_dims=2, max_dims=2, min_side=1), lambda s: True)
    (1, 1)
"""
from __future__ import annotations

import numpy as np

from functrans.core.dtypes import kind as dtype_kind

try:
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp
except ImportError:  # hypothesis is a dev dependency
    st = hnp = None

FLOAT_DTYPES = ("float16", "float32", "float64")
SIGNED_DTYPES = ("int8", "int16", "int32", "int64")
UNSIGNED_DTYPES = ("uint8", "uint16", "uint32", "uint64")
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
NUMERIC_DTYPES = INT_DTYPES + FLOAT_DTYPES
ALL_DTYPES = ("bool",) + NUMERIC_DTYPES
SPECIAL_FLOATS = (np.nan, np.inf, -np.inf, -0.0, 0.0)


def _need_hypothesis():
    if st is None:
        raise ImportError("functrans.testing strategies need hypothesis: pip install hypothesis")


def dtypes_from(names):
    """A strategy drawing one of the named dtypes."""
    _need_hypothesis()
    return st.sampled_from([np.dtype(n) for n in names])


def float_dtypes():
    return dtypes_from(FLOAT_DTYPES)


def int_dtypes():
    return dtypes_from(INT_DTYPES)


def numeric_dtypes():
    return dtypes_from(NUMERIC_DTYPES)


def all_dtypes():
    return dtypes_from(ALL_DTYPES)


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    """Array shapes (small by default, including empty and rank-0)."""
    _need_hypothesis()
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                            max_side=max_side)


def broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4):
    """Tuples of ``num_shapes`` shapes that broadcast together (sizes 1 and 0 included)."""
    _need_hypothesis()
    return hnp.mutually_broadcastable_shapes(num_shapes=num_shapes, min_dims=min_dims,
                                             max_dims=max_dims, min_side=0,
                                             max_side=max_side).map(lambda r: r.input_shapes)


def float_elements(dtype, bound=1e3, specials=False):
    """Finite floats in ``[-bound, bound]`` representable in ``dtype``; with ``specials``
    also nan, +-inf and signed zeros."""
    _need_hypothesis()
    el = st.floats(-bound, bound, allow_nan=False, width=8 * np.dtype(dtype).itemsize)
    return st.one_of(st.sampled_from(SPECIAL_FLOATS), el) if specials else el


def int_elements(dtype, lo=None, hi=None):
    """Integers of ``dtype`` (its full range by default, clipped to ``[lo, hi]``)."""
    _need_hypothesis()
    info = np.iinfo(dtype)
    lo = info.min if lo is None else max(lo, int(info.min))
    hi = info.max if hi is None else min(hi, int(info.max))
    return st.integers(lo, hi)


def elements_for(dtype, bound=1e3, specials=False, int_range=(None, None)):
    dtype = np.dtype(dtype)
    if dtype_kind(dtype) == "f":
        return float_elements(dtype, bound, specials)
    if dtype_kind(dtype) == "b":
        return st.booleans()
    return int_elements(dtype, *int_range)


def arrays(dtypes=None, shape=None, elements=None, finite=True, *, specials=False, bound=1e3,
           int_range=(None, None), **shape_kwargs):
    """NumPy arrays with the given dtype (strategy or dtype) and shape (strategy or tuple).

    Floats are finite and moderate (``|x| <= bound``) so oracles are stable; ``specials``
    (or ``finite=False``) mixes in nan, +-inf and signed zeros. ``elements`` may be a strategy
    or a function of the dtype returning one.
    """
    _need_hypothesis()
    dtypes = all_dtypes() if dtypes is None else dtypes
    if not isinstance(dtypes, st.SearchStrategy):
        dtypes = st.just(np.dtype(dtypes))
    shape = shapes(**shape_kwargs) if shape is None else shape
    specials = specials or not finite

    def build(dt):
        el = elements(dt) if callable(elements) else elements
        if el is None:
            el = elements_for(dt, bound, specials, int_range)
        return hnp.arrays(dt, shape, elements=el)

    return dtypes.flatmap(build)


def _inside(value, dtype, up):
    """``value`` rounded to ``dtype``, moved one step ``up`` (or down) if rounding left the
    interval it bounds."""
    v = np.dtype(dtype).type(value)
    if up and float(v) < value:
        v = np.nextafter(v, np.dtype(dtype).type(np.inf))
    if not up and float(v) > value:
        v = np.nextafter(v, np.dtype(dtype).type(-np.inf))
    return float(v)


def float_arrays(shape=None, dtype="float64", *, bound=10.0, positive=False, away_from=(),
                 margin=0.1, **shape_kwargs):
    """Well-conditioned float arrays, for derivative checks (:func:`check_transforms`): finite,
    no subnormals, ``|x| <= bound``; with ``positive`` in ``[margin, bound]`` (domains such as
    ``log``'s, with room for finite-difference steps); every element at least ``margin`` away
    from each point of ``away_from`` (kinks and poles: ``abs`` at 0, ``1/x``).

    ``dtype`` and ``shape`` may be strategies (``float_dtypes()``, :func:`shapes`); without a
    shape, ``shape_kwargs`` go to :func:`shapes`.

    >>> from hypothesis import find
    >>> x = find(float_arrays((4,), "float32", positive=True, away_from=(1.0,)), lambda a: True)
    >>> x.dtype, bool(np.all((x >= 0.1) & (np.abs(x - 1.0) >= 0.1)))
    (dtype('float32'), True)
    """
    _need_hypothesis()
    dtypes = (dtype if isinstance(dtype, st.SearchStrategy) else st.just(dtype)).map(np.dtype)
    shape = shapes(**shape_kwargs) if shape is None else shape
    points = tuple(float(p) for p in away_from)
    if positive and margin <= 0:
        raise ValueError("float_arrays: positive=True needs margin > 0")

    def build(dt):
        lo = _inside(margin if positive else -bound, dt, up=True)
        hi = _inside(bound, dt, up=False)
        el = st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False,
                       width=8 * dt.itemsize)
        if points:
            def push(v):
                for p in points:
                    if abs(v - p) < margin:
                        v = p + 1.01 * margin * (1.0 if v >= p else -1.0)
                        v = min(max(v, lo), hi)
                return float(dt.type(v))
            el = el.map(push).filter(lambda v: all(abs(v - p) >= margin for p in points))
        return hnp.arrays(dt, shape, elements=el)

    return dtypes.flatmap(build)


def python_scalars(kind, bound=1e3):
    """A Python bool/int/float for the dtype kind ``"b"``, ``"i"``/``"u"`` or ``"f"``."""
    _need_hypothesis()
    if kind == "b":
        return st.booleans()
    if kind == "i":
        return st.integers(-100, 100)
    if kind == "u":
        return st.integers(0, 200)
    return st.floats(-bound, bound, allow_nan=False)


def axes(ndim, allow_none=True, allow_tuple=True):
    """An ``axis=`` argument valid for rank ``ndim``: None, an int (negative ones included)
    or a tuple of distinct axes."""
    _need_hypothesis()
    options = [st.just(None)] if allow_none else []
    if ndim:
        options.append(st.integers(-ndim, ndim - 1))
        if allow_tuple:
            options.append(st.lists(st.integers(-ndim, ndim - 1), unique_by=lambda a: a % ndim,
                                    max_size=ndim).map(tuple))
    return st.one_of(options) if options else st.just(None)
