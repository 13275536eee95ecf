"""Questions about dtypes: promotion (``result_type``, ``promote_types``, ``can_cast``),
classification (``issubdtype``, ``isdtype``, ``iscomplexobj``, ...) and machine limits.

Each accepts what JAX accepts: dtypes, dtype names, scalar types (NumPy's or ``fnp``'s) and
arrays (meaning their dtype)::

    >>> issubdtype(fnp.float32, fnp.floating), iscomplexobj(fnp.complex64)
    (True, True)
"""
from __future__ import annotations

import numpy as np

from ..core import dtype_api as _ft_dtypes
from ..core import dtypes
from ..core.array import Array
from ..core.trace import Tracer, get_aval
from ._core import asarray, result_dtype

__all__ = ["iscomplexobj", "isrealobj", "isscalar", "result_type", "promote_types",
           "can_cast", "issubdtype", "isdtype", "iinfo", "finfo", "dtype"]

dtype = np.dtype


def _dtype_of(x):
    """An array's dtype; anything else is returned as it is (a dtype-like)."""
    return get_aval(x).dtype if isinstance(x, (Array, Tracer, np.ndarray)) else x


def iscomplexobj(x) -> bool:
    """True when ``x`` (an array, scalar, sequence or scalar type) has a complex dtype.

    >>> iscomplexobj(fnp.ones(2)), iscomplexobj(fnp.ones(2) * 1j), iscomplexobj(fnp.float32)
    (False, True, False)
    """
    if isinstance(x, (complex, np.complexfloating)):
        return True
    # As JAX: None and strings are not complex (rather than errors).
    if x is None or isinstance(x, (bool, int, float, str, np.generic)):
        return False
    d = getattr(x, "dtype", None)  # arrays, tracers and fnp's scalar types
    if isinstance(d, _ft_dtypes.KeyDtype):  # typed PRNG keys (no NumPy value to ask)
        return False
    if not isinstance(d, np.dtype):
        d = get_aval(asarray(x)).dtype
    return dtypes.kind(d) == "c"


def isrealobj(x) -> bool:
    """True when ``x`` does not have a complex dtype (the negation of :func:`iscomplexobj`).

    >>> isrealobj(fnp.ones(2)), isrealobj(fnp.complex64)
    (True, False)
    """
    return not iscomplexobj(x)


def isscalar(element) -> bool:
    """True for Python and NumPy scalars (strings too, as NumPy) and 0-d arrays (as JAX).

    >>> isscalar(3.0), isscalar(fnp.array(3.0)), isscalar(fnp.ones(2)), isscalar(fnp.float32)
    (True, True, False, False)
    """
    if isinstance(element, (Array, Tracer, np.ndarray)):
        return get_aval(element).ndim == 0
    return bool(np.isscalar(element))


def result_type(*arrays_and_dtypes):
    """The NEP 50 result dtype of the arguments (Python scalars are weak).

    >>> result_type(fnp.ones(2, "int8"), 1), result_type(fnp.float32, 1.0)
    (dtype('int8'), dtype('float32'))
    """
    if not arrays_and_dtypes:
        raise ValueError("at least one array or dtype is required")
    for a in arrays_and_dtypes:
        if isinstance(a, (list, tuple)):
            raise TypeError(f"Cannot determine dtype of {a!r}")
    return result_dtype(*arrays_and_dtypes)


def promote_types(type1, type2):
    """The smallest dtype both dtypes (or arrays' dtypes) cast to safely.

    >>> promote_types("int8", "uint8"), promote_types(fnp.float32, fnp.int8)
    (dtype('int16'), dtype('float32'))
    """
    return dtypes.promote_types(_dtype_of(type1), _dtype_of(type2))


def can_cast(from_, to, casting="safe"):
    """Whether a cast from a dtype (or an array's dtype) is allowed under ``casting``.

    >>> can_cast("int8", "float16"), can_cast(fnp.ones(2), "int32")
    (True, False)
    """
    return bool(np.can_cast(_dtype_of(from_), np.dtype(_dtype_of(to)), casting))


def issubdtype(arg1, arg2) -> bool:
    """Whether ``arg1`` is lower in NumPy's type hierarchy than ``arg2``.

    >>> issubdtype("int8", fnp.integer), issubdtype(fnp.ones(2), fnp.floating)
    (True, True)
    """
    if any(isinstance(getattr(x, "dtype", x), _ft_dtypes.KeyDtype) or x is _ft_dtypes.prng_key
           or x is _ft_dtypes.extended for x in (arg1, arg2)):
        return _ft_dtypes.issubdtype(arg1, arg2)  # typed keys' extended dtype
    a, b = _dtype_of(arg1), _dtype_of(arg2)
    if dtypes.is_narrow_float(a):
        return dtypes.narrow_issubdtype(a, b)  # NumPy does not know bfloat16 is a float
    return bool(np.issubdtype(a, b))


# The array API's kind names, as the dtype kinds they cover.
_KINDS = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
          "real floating": "f", "complex floating": "c", "numeric": "iufc"}


def isdtype(dtype, kind) -> bool:
    """Array-API classification: is ``dtype`` of ``kind`` (a kind name such as ``"integral"``
    or ``"real floating"``, a dtype, or a tuple of these)?

    >>> isdtype(fnp.float32, "real floating"), isdtype("int8", ("bool", fnp.int8))
    (True, True)
    """
    d = np.dtype(_dtype_of(dtype))
    for k in kind if isinstance(kind, tuple) else (kind,):
        if isinstance(k, str) and k in _KINDS:
            if dtypes.kind(d) in _KINDS[k]:
                return True
            continue
        if not (k is None or isinstance(k, (str, np.dtype, type)) or hasattr(k, "dtype")):
            raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}")
        try:
            kd = np.dtype(_dtype_of(k))
        except TypeError:
            if isinstance(k, str):
                raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_KINDS)}, or "
                                 "a compatible input for fnp.dtype()") from None
            # Abstract categories such as fnp.integer are not dtypes (use issubdtype).
            raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}"
                            ) from None
        if d == kd:
            return True
    return False


def iinfo(int_type):
    """Machine limits of an integer dtype (or an integer array's dtype).

    >>> iinfo("int8").max, iinfo(fnp.uint8).max
    (127, 255)
    """
    return np.iinfo(np.dtype(_dtype_of(int_type)))


def finfo(dtype):
    """Machine limits of a floating-point dtype (or a float array's dtype).

    >>> float(finfo("float16").eps), finfo(fnp.float32).bits
    (0.0009765625, 32)
    """
    return np.finfo(np.dtype(_dtype_of(dtype)))
