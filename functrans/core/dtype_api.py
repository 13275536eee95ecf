"""JAX's dtype utilities (``jax.dtypes``; public as ``functrans.dtypes``, whose face
re-exports them) over core's dtypes (``dtypes.py``): ``issubdtype``, ``result_type``,
``canonicalize_dtype`` with JAX's signatures, ``float0``, and the extended dtypes of typed PRNG
keys (``extended``, ``prng_key``, ``KeyDtype``).

    >>> issubdtype(THREEFRY_KEY, prng_key), result_type("int8", 3)
    (True, dtype('int8'))
"""
from __future__ import annotations

import importlib.util

import numpy as np

from . import dtypes as _core
from .array import Array
from .trace import get_aval

float0 = np.dtype([("float0", np.void, 0)])
"""The dtype of tangents and cotangents of integer and boolean values in JAX: zero bytes per
element, so such a tangent carries only its shape."""


class extended(np.generic):
    """Abstract scalar type of JAX's extended dtypes (dtypes that are not NumPy's, such as
    typed PRNG keys); for :func:`issubdtype` only.

    >>> issubdtype(prng_key, extended), issubdtype("float32", extended)
    (True, False)
    """


class prng_key(extended):
    """Abstract scalar type of typed PRNG key arrays (``random.key``'s dtype). Raw
    ``random.PRNGKey`` keys are plain ``uint32`` arrays, not of this type (as in JAX):

    >>> issubdtype(ft.random.key(0).dtype, prng_key)
    True
    >>> issubdtype(ft.random.PRNGKey(0).dtype, prng_key)
    False
    """


class KeyDtype:
    """The dtype of typed key arrays of one PRNG implementation (``key<fry>`` for
    threefry2x32): a subtype of :class:`prng_key`, with the item size of its raw data.

    >>> ft.random.key(0).dtype
    key<fry>
    >>> ft.random.key(0).dtype.itemsize
    8
    """

    __slots__ = ("impl", "name", "itemsize")
    type = prng_key
    kind = "V"
    _is_key_dtype = True

    def __init__(self, impl: str, short: str, itemsize: int):
        self.impl, self.name, self.itemsize = impl, f"key<{short}>", itemsize

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, KeyDtype) and other.impl == self.impl

    def __hash__(self):
        return hash(("KeyDtype", self.impl))


THREEFRY_KEY = KeyDtype("threefry2x32", "fry", 8)
"""The dtype of ``random.key`` 's keys."""


def has_bfloat16() -> bool:
    """Whether ``ml_dtypes`` is installed (looked up without importing it)."""
    return importlib.util.find_spec("ml_dtypes") is not None


def module_getattr(module: str, name: str):
    """A dtype module's lazy attributes: ``bfloat16`` is JAX's ``jax.dtypes.bfloat16``,
    ``ml_dtypes.bfloat16`` (present when ml_dtypes is installed), the same type as
    ``functrans.numpy.bfloat16``; asking for it imports ml_dtypes."""
    if name == "bfloat16":
        for d in _core.narrow_floats():
            if d.name == "bfloat16":
                return d.type
    raise AttributeError(f"module {module!r} has no attribute {name!r}")


TypePromotionError = _core.TypePromotionError
"""Promotion refused: functrans promotes as NumPy 2 does (JAX's "standard" mode), except that
the float8 types meet no other floating type, as in JAX."""


def _is_scalar_type(x) -> bool:
    return isinstance(x, type) and issubclass(x, np.generic)


def _scalar_type_arg(x):
    """``x`` as a scalar type; abstract ones such as ``np.floating`` stay abstract."""
    return x if _is_scalar_type(x) else _dtype_arg(x).type


def issubdtype(a, b) -> bool:
    """Whether ``a`` is ``b`` or below it in NumPy's type hierarchy, for any dtype-like ``a``
    and ``b``: strings, ``np.dtype`` s, scalar types, ``functrans.numpy``'s ``float32`` &
    co and abstract types (``fnp.floating``, :class:`extended`, :class:`prng_key`).

    >>> issubdtype(float, fnp.floating), issubdtype(fnp.int8, fnp.signedinteger)
    (True, True)
    >>> issubdtype(float0, fnp.floating), issubdtype(float0, float0)
    (False, True)
    """
    a, b = _scalar_type_arg(a), _scalar_type_arg(b)
    if _core.is_narrow_float(a):  # NumPy does not know bfloat16 is a float
        return _core.narrow_issubdtype(a, b)
    if issubclass(b, extended):
        return issubclass(a, b)
    return bool(np.issubdtype(a, b))


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False) -> np.dtype:
    """The dtype values of ``dtype`` get: with ``enable_x64`` off, 64-bit dtypes become
    their 32-bit counterparts (complex128 -> complex64). Other dtypes are returned as they
    are.

    >>> canonicalize_dtype(float), canonicalize_dtype("int8")
    (dtype('float64'), dtype('int8'))
    >>> with ft.config.override(enable_x64=False):
    ...     canonicalize_dtype("float64")
    dtype('float32')
    """
    del allow_extended_dtype  # no value has an extended dtype here
    d = _held_dtype(dtype)
    d = _core.np_dtype(dtype) if d is None else d
    if _core.is_supported(d):
        return _core.canonicalize_dtype(d)
    return d


def _dtype_and_weak(x, what):
    """The (dtype, weak) pair a ``result_type`` argument stands for, as JAX sees it: Python
    ``int``/``float``/``complex`` values and types are weak, ``bool`` is not."""
    if x is bool or type(x) is bool:
        return _core.bool_, False
    if x is int or x is float or x is complex:
        return _core.python_scalar_dtype(x(0)), True
    if type(x) in (int, float, complex):
        return _core.python_scalar_dtype(x), True
    if isinstance(x, (Array, np.ndarray, np.generic)):  # tracers are Arrays too
        a = get_aval(x)
        return a.dtype, a.weak_type
    try:
        return canonicalize_dtype(x), False
    except TypeError:
        raise TypeError(f"result_type: {what} is {type(x).__name__} {x!r:.60}, which is neither "
                        "an array nor a dtype") from None


def result_type(*args, return_weak_type_flag: bool = False):
    """The dtype arrays, scalars and dtypes promote to (NumPy 2's rules: Python scalars are
    weak and give way to arrays). With ``return_weak_type_flag=True`` returns ``(dtype,
    weak)``, where ``weak`` says the result came from Python scalars only.

    >>> result_type("int8", 3), result_type(1.5, return_weak_type_flag=True)
    (dtype('int8'), (dtype('float64'), True))
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    pairs = [_dtype_and_weak(x, f"argument {i}") for i, x in enumerate(args)]
    for i, (d, _) in enumerate(pairs):
        if not _core.is_supported(d):
            raise _core.UnsupportedDtypeError(
                f"result_type: argument {i} has dtype {d}, which functrans does not support")
    dtype = _core.result_type(*pairs)[0]
    # Weak values give way to strong ones except bool, which is below every weak type:
    # bool array + 1 is a weak int, as in JAX.
    weak = any(w for _, w in pairs) and all(d == _core.bool_ for d, w in pairs if not w)
    return (dtype, weak) if return_weak_type_flag else dtype


def _held_dtype(x):
    """The dtype an object holds (``functrans.numpy.float32``, arrays), else None. (NumPy's
    scalar types have a ``dtype`` attribute too, but a descriptor, not a dtype.)"""
    d = getattr(x, "dtype", None)
    return d if isinstance(d, np.dtype) and not isinstance(x, np.dtype) else None


def _dtype_arg(x) -> np.dtype:
    if isinstance(x, KeyDtype) or isinstance(getattr(x, "dtype", None), KeyDtype):
        return x if isinstance(x, KeyDtype) else x.dtype
    if isinstance(x, (Array, np.ndarray, np.generic)):
        return get_aval(x).dtype
    d = _held_dtype(x)
    return _core.np_dtype(x) if d is None else d


def finfo(dtype) -> np.finfo:
    """Machine limits of a floating-point or complex dtype (NumPy's ``finfo``; an integer
    dtype raises ValueError).

    >>> float(finfo("float32").eps), finfo(fnp.float16).bits
    (1.1920928955078125e-07, 16)
    """
    return np.finfo(_dtype_arg(dtype))


def iinfo(int_type) -> np.iinfo:
    """Machine limits of an integer dtype (NumPy's ``iinfo``; a float dtype raises
    ValueError).

    >>> iinfo(fnp.int8).max, iinfo("uint16").bits
    (127, 16)
    """
    return np.iinfo(_dtype_arg(int_type))


def itemsize_bits(dtype) -> int:
    """Bits per element of ``dtype`` (8 for bool, as stored).

    >>> itemsize_bits("float32"), itemsize_bits(bool)
    (32, 8)
    """
    return 8 * _dtype_arg(dtype).itemsize


def scalar_type_of(x) -> type:
    """The Python scalar type (``bool``, ``int``, ``float`` or ``complex``) matching the dtype
    of ``x`` (an array, a scalar or a dtype).

    >>> scalar_type_of(fnp.ones(2)), scalar_type_of(np.int8(1)), scalar_type_of(True)
    (<class 'float'>, <class 'int'>, <class 'bool'>)
    """
    if type(x) in (bool, int, float, complex):
        return type(x)
    kind = _core.kind(_dtype_arg(x))
    types = {"b": bool, "i": int, "u": int, "f": float, "c": complex}
    if kind not in types:
        raise TypeError(f"scalar_type_of: {x!r:.60} has dtype kind {kind!r}, which has no "
                        "Python scalar type")
    return types[kind]
