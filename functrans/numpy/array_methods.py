"""Operators and methods of ``functrans.Array`` and of tracers (they behave alike), attached
when ``functrans.numpy`` is imported::

    >>> (fnp.arange(3) + 1).sum()
    Array(6, dtype=int64)
"""
from __future__ import annotations

import numpy as np

from ..core import dtypes
from ..core.array import Array
from ..core.trace import Tracer
from . import creation, indexing, linalg_ops, misc, reductions, shape_ops, sorting, ufuncs
from ._core import convert


def _swap(f):
    return lambda self, other: f(other, self)


def _defer(f):
    """Binary operators return NotImplemented for operands we don't understand, so Python can
    try the other operand's reflected method."""
    def op(self, other):
        if not isinstance(other, _OPERAND_TYPES) and not hasattr(other, "__array__"):
            return NotImplemented
        return f(self, other)
    return op


_OPERAND_TYPES = (Array, Tracer, np.ndarray, np.generic, bool, int, float, complex, list, tuple)

_OPERATORS = {
    "__add__": ufuncs.add, "__sub__": ufuncs.subtract, "__mul__": ufuncs.multiply,
    "__truediv__": ufuncs.true_divide, "__floordiv__": ufuncs.floor_divide,
    "__mod__": ufuncs.remainder, "__pow__": ufuncs.power, "__matmul__": linalg_ops.matmul,
    "__and__": ufuncs.bitwise_and, "__or__": ufuncs.bitwise_or, "__xor__": ufuncs.bitwise_xor,
    "__lshift__": ufuncs.left_shift, "__rshift__": ufuncs.right_shift,
    "__eq__": ufuncs.equal, "__ne__": ufuncs.not_equal, "__lt__": ufuncs.less,
    "__le__": ufuncs.less_equal, "__gt__": ufuncs.greater, "__ge__": ufuncs.greater_equal,
    "__divmod__": ufuncs.divmod,
}
_REFLECTED = {
    "__radd__": ufuncs.add, "__rsub__": ufuncs.subtract, "__rmul__": ufuncs.multiply,
    "__rtruediv__": ufuncs.true_divide, "__rfloordiv__": ufuncs.floor_divide,
    "__rmod__": ufuncs.remainder, "__rpow__": ufuncs.power, "__rmatmul__": linalg_ops.matmul,
    "__rand__": ufuncs.bitwise_and, "__ror__": ufuncs.bitwise_or,
    "__rxor__": ufuncs.bitwise_xor, "__rlshift__": ufuncs.left_shift,
    "__rrshift__": ufuncs.right_shift, "__rdivmod__": ufuncs.divmod,
}
_UNARY = {"__neg__": ufuncs.negative, "__pos__": ufuncs.positive, "__abs__": ufuncs.absolute,
          "__invert__": ufuncs.invert}


def _reshape(self, *args, order="C", **kwargs):
    shape = args[0] if len(args) == 1 else args
    if "shape" in kwargs:
        shape = kwargs["shape"]
    if order == "F":  # column-major: reshape the reversed-axes view, then reverse back
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        flipped = shape_ops.reshape(shape_ops.transpose(self), shape[::-1])
        return shape_ops.transpose(flipped)
    return shape_ops.reshape(self, shape, order)


def _transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return shape_ops.transpose(self, axes or None)


def _astype(self, dtype, copy=True):
    return convert(self, dtypes.canonicalize_dtype(dtype))


def _view(self, dtype=None, type=None):
    if dtype is None:
        return self
    from .. import lax
    return lax.bitcast_convert_type(self, dtype)


def _flatten(self, order="C"):
    if order == "F":
        return shape_ops.ravel(shape_ops.transpose(self))
    return shape_ops.ravel(self, order)


def _sort(self, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    return sorting.sort(self, axis, kind, order, stable=stable, descending=descending)


_METHODS = {
    "reshape": _reshape, "transpose": _transpose, "astype": _astype, "view": _view,
    "flatten": _flatten, "ravel": _flatten, "squeeze": shape_ops.squeeze,
    "swapaxes": shape_ops.swapaxes, "repeat": shape_ops.repeat, "clip": shape_ops.clip,
    "sum": reductions.sum, "prod": reductions.prod, "mean": reductions.mean,
    "var": reductions.var, "std": reductions.std, "max": reductions.max,
    "min": reductions.min, "argmax": reductions.argmax, "argmin": reductions.argmin,
    "all": reductions.all, "any": reductions.any, "cumsum": reductions.cumsum,
    "cumprod": reductions.cumprod, "ptp": reductions.ptp, "round": None,
    "dot": linalg_ops.dot, "take": indexing.take, "nonzero": sorting.nonzero,
    "sort": _sort, "argsort": sorting.argsort, "diagonal": creation.diagonal,
    "trace": creation.trace, "conj": ufuncs.conjugate, "conjugate": ufuncs.conjugate,
    "searchsorted": lambda self, v, side="left", sorter=None: sorting.searchsorted(
        self, v, side, sorter),
}


def _round(self, decimals=0, out=None):
    from .misc import round as round_
    return round_(self, decimals, out)


def _builtin_round(self, ndigits=None):
    """``round(x)`` rounds half to even to an integer array (as Python's ``round`` returns an
    int); ``round(x, n)`` keeps the dtype."""
    from .misc import round as round_
    if ndigits is None:
        return convert(round_(self), dtypes.default_int_dtype())
    return round_(self, ndigits)


def _argpartition(self, kth, axis=-1, kind=None, order=None):
    return sorting.argpartition(self, kth, axis)


def _setitem(self, index, value):
    raise TypeError(f"{type(self).__name__} objects are immutable: instead of x[idx] = y, use "
                    "x = x.at[idx].set(y) (or .add, .multiply, ... for x[idx] += y)")


def _array_namespace(self, *, api_version=None):
    import functrans.numpy
    return functrans.numpy


_METHODS.update(round=_round, argpartition=_argpartition, __round__=_builtin_round,
                __setitem__=_setitem, __array_namespace__=_array_namespace)


def _install(cls):
    for name, f in _OPERATORS.items():
        setattr(cls, name, _defer(f))
    for name, f in _REFLECTED.items():
        setattr(cls, name, _defer(_swap(f)))
    for name, f in _UNARY.items():
        setattr(cls, name, f)
    for name, f in _METHODS.items():
        setattr(cls, name, f)
    cls.__getitem__ = indexing.getitem
    cls.__hash__ = None
    cls.at = property(indexing._IndexUpdateHelper, doc="Functional updates: x.at[i].set(v)")
    cls.T = property(lambda self: shape_ops.transpose(self))
    cls.mT = property(shape_ops.matrix_transpose)
    cls.real = property(misc.real)
    cls.imag = property(misc.imag)
    cls.flat = property(shape_ops.ravel)
    if cls is Tracer:  # Array has its own versions of these
        cls.copy = lambda self: self  # values are immutable: a copy is the value itself
        # so are copy.copy/deepcopy (as Array's): the default deepcopy also copied the trace,
        # and the copy's values leaked out of it (jax-md's dataclasses.astuple deep-copies)
        cls.__copy__ = lambda self: self
        cls.__deepcopy__ = lambda self, memo: self
        cls.itemsize = property(lambda self: self.aval.dtype.itemsize)
        cls.nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)


_install(Array)
_install(Tracer)
