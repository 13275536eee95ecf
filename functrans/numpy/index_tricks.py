"""NumPy's index-trick objects for building arrays by concatenation: ``r_`` and ``c_``.

    >>> fnp.r_[1:4, 0, fnp.array([7, 8])]
    Array([1, 2, 3, 0, 7, 8], dtype=int64)
"""
from __future__ import annotations

import numpy as np

from ..core.trace import get_aval
from ._core import asarray
from .creation import arange, linspace
from .joining import concatenate
from .dtype_utils import result_type
from .shape_ops import reshape, transpose

__all__ = ["r_", "c_"]


def _ndmin(x, ndmin):
    shape = get_aval(x).shape
    return x if len(shape) >= ndmin else reshape(x, (1,) * (ndmin - len(shape)) + shape)


def _place_1d(x, item_ndim, ndmin, trans1d):
    """NumPy's placement of an upgraded array's own axes (``trans1d``)."""
    if trans1d == -1 or item_ndim >= ndmin:
        return x
    k2 = ndmin - item_ndim
    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
    axes = list(range(ndmin))
    return transpose(x, axes[:k1] + axes[k2:] + axes[k1:k2])


class _AxisConcatenator:
    """``obj[items]`` concatenates the items along ``axis``, as NumPy's AxisConcatenator:
    slices become ``arange`` (or ``linspace`` for a complex step ``Nj``), scalars and arrays are
    upgraded to ``ndmin`` dimensions, and a leading string sets ``"axis[,ndmin[,trans1d]]"``."""

    def __init__(self, name, axis, ndmin, trans1d):
        self.name, self.axis, self.ndmin, self.trans1d = name, axis, ndmin, trans1d

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, kinds = [], []
        for k, item in enumerate(key):
            if isinstance(item, str):
                if k != 0:
                    raise ValueError(f"fnp.{self.name}: a string directive must be the first "
                                     f"entry, got {item!r} at position {k}")
                axis, ndmin, trans1d = self._directive(item, ndmin, trans1d)
                continue
            if isinstance(item, slice):
                obj = self._slice(item)
                if ndmin > 1:
                    obj = _ndmin(obj, ndmin)
                    if trans1d != -1:
                        obj = _swap_last(obj, trans1d)
                objs.append(obj)
                kinds.append(obj)
            elif isinstance(item, (bool, int, float, complex)):
                objs.append(item)
                kinds.append(item)  # a Python scalar promotes weakly, as in NumPy
            else:
                x = asarray(item)
                item_ndim = len(get_aval(x).shape)
                x = _place_1d(_ndmin(x, ndmin), item_ndim, ndmin, trans1d)
                objs.append(x)
                kinds.append(x)
        if not objs:
            return asarray(np.zeros((0,) * max(ndmin, 1)))
        dtype = result_type(*kinds)
        return concatenate([_ndmin(asarray(o, dtype=dtype), ndmin) for o in objs], axis=axis)

    def _directive(self, item, ndmin, trans1d):
        if item in ("r", "c"):
            raise NotImplementedError(f"fnp.{self.name}: the matrix directives 'r' and 'c' "
                                      "are not supported (functrans has no matrix type)")
        try:
            parts = [int(p) for p in item.split(",")]
        except ValueError:
            raise ValueError(f"fnp.{self.name}: unknown special directive {item!r}") from None
        if not 1 <= len(parts) <= 3:
            raise ValueError(f"fnp.{self.name}: unknown special directive {item!r}")
        axis = parts[0]
        if len(parts) >= 2:
            ndmin = parts[1]
        if len(parts) == 3:
            trans1d = parts[2]
        return axis, ndmin, trans1d

    def _slice(self, item):
        start = 0 if item.start is None else item.start
        step = 1 if item.step is None else item.step
        if isinstance(step, complex):
            return linspace(start, item.stop, int(abs(step)))
        return arange(start, item.stop, step)

    def __len__(self):
        return 0


def _swap_last(x, trans1d):
    axes = list(range(len(get_aval(x).shape)))
    axes[-1], axes[trans1d] = axes[trans1d], axes[-1]
    return transpose(x, axes)


r_ = _AxisConcatenator("r_", 0, 1, -1)
r_.__doc__ = """Concatenate along the first axis (NumPy's ``r_``).

    >>> fnp.r_[fnp.array([1.0, 2.0]), 0:1:3j]
    Array([1. , 2. , 0. , 0.5, 1. ], dtype=float64)
    >>> fnp.r_["0,2", [1, 2], [3, 4]]
    Array([[1, 2],
           [3, 4]], dtype=int64)
"""
c_ = _AxisConcatenator("c_", -1, 2, 0)
c_.__doc__ = """Stack 1-d items as columns (NumPy's ``c_``: ``r_["-1,2,0", ...]``).

    >>> fnp.c_[fnp.array([1, 2]), fnp.array([3, 4])]
    Array([[1, 3],
           [2, 4]], dtype=int64)
"""
