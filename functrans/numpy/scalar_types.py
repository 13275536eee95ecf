"""Scalar type objects (``fnp.float32`` & co) and NumPy's abstract dtype categories.

Each scalar type is a class, as in JAX: usable wherever a dtype is expected, equal and
hash-equal to NumPy's scalar type, and callable to make a 0-d (or cast) array::

    >>> fnp.float32(1.5)
    Array(1.5, dtype=float32)
    >>> fnp.dtype(fnp.float32), fnp.float32 == np.float32, isinstance(np.float32(1), fnp.float32)
    (dtype('float32'), True, True)
"""
from __future__ import annotations

import numpy as np

from ._core import asarray

__all__ = ["bool_", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float16", "float32", "float64", "complex64", "complex128", "int_", "uint",
           "float_", "complex_", "single", "double", "half", "csingle", "cdouble", "generic",
           "number", "integer", "signedinteger", "unsignedinteger", "floating",
           "complexfloating", "inexact", "character", "flexible", "object_",
           "ComplexWarning"]


class _ScalarMeta(type):
    """The metaclass of the scalar types: what makes ``fnp.float32`` a dtype and a function.

    >>> fnp.int8([1, 2])
    Array([1, 2], dtype=int8)
    """

    dtype: np.dtype

    def __call__(cls, x):
        if isinstance(x, (str, bytes)):
            x = np.asarray(x, dtype=cls.dtype)  # parse, as np.float32("1.5")
        return asarray(x, dtype=cls.dtype)

    # Equal (and hash-equal) to NumPy's scalar type, so ``dtype == fnp.float32``,
    # ``fnp.float32 in (np.float32,)`` and dict lookups behave as with NumPy's types.
    def __eq__(cls, other):
        return cls is other or cls.dtype.type == other

    def __ne__(cls, other):
        return not cls == other

    def __hash__(cls):
        return hash(cls.dtype.type)

    def __instancecheck__(cls, instance):
        return isinstance(instance, cls.dtype.type)


def _scalar_type(np_type) -> _ScalarMeta:
    name = np.dtype(np_type).name
    cls = _ScalarMeta(name, (object,), {
        "dtype": np.dtype(np_type),
        "__doc__": f"The {name} scalar type: a dtype, and a constructor of {name} arrays "
                   f"(functrans represents scalars as 0-d arrays).",
    })
    cls.__module__ = "functrans.numpy"
    return cls


bool_ = bool = _scalar_type(np.bool_)
int8, int16, int32, int64 = map(_scalar_type, (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = map(_scalar_type, (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = map(_scalar_type, (np.float16, np.float32, np.float64))
complex64, complex128 = map(_scalar_type, (np.complex64, np.complex128))
int_, uint, float_, complex_ = int64, uint64, float64, complex128
single, double, half = float32, float64, float16
csingle, cdouble = complex64, complex128

# NumPy's abstract categories (for issubdtype) are NumPy's own classes, as in JAX.
generic, number, integer, signedinteger, unsignedinteger = (
    np.generic, np.number, np.integer, np.signedinteger, np.unsignedinteger)
floating, complexfloating, inexact, character, flexible, object_ = (
    np.floating, np.complexfloating, np.inexact, np.character, np.flexible, np.object_)
ComplexWarning = np.exceptions.ComplexWarning
