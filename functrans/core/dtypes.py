"""Dtypes: the supported set, canonicalization and NumPy 2 (NEP 50) promotion.

Python scalars are *weak*: they take the dtype of the array they meet instead of upcasting it,
so ``float32_array * 2.0`` stays float32, exactly as in NumPy 2 and JAX::

    >>> result_type((np.dtype("float32"), False), (np.dtype("float64"), True))
    (dtype('float32'), False)
"""
from __future__ import annotations

import sys

import numpy as np

from .config import config

bool_ = np.dtype(np.bool_)
int8, int16, int32, int64 = (np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (np.dtype(t) for t in (np.float16, np.float32, np.float64))
complex64, complex128 = np.dtype(np.complex64), np.dtype(np.complex128)

_NARROW_NAMES = ("bfloat16", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
                 "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                 "float8_e8m0fnu", "float4_e2m1fn")
_BASE_DTYPES = (bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
                float16, float32, float64, complex64, complex128)

# The narrow float types come from ``ml_dtypes`` (an optional dependency: JAX's libraries use
# its types, NumPy has none of them), whose import costs more than half of functrans' own.
# It is imported on the first need (:func:`narrow_floats`): a narrow dtype asked for by name,
# or a value of one of its types (which exists only once ml_dtypes is imported). Until then
# these sets hold the ordinary dtypes only; they are filled in place, so that modules which
# bound them (core.trace) see the narrow types too.
_NARROW: set = set()
_SUPPORTED: set = set(_BASE_DTYPES)
_narrow_floats = None  # the tuple, once ml_dtypes was looked for
_TO_32 = {int64: int32, uint64: uint32, float64: float32, complex128: complex64}

_SHORT = {d: ("bool" if d == bool_ else f"{d.kind}{8 * d.itemsize}") for d in _BASE_DTYPES}


def narrow_floats() -> tuple:
    """bfloat16 and the float8/float4 types of ``ml_dtypes`` (empty when it is not installed),
    importing it on the first call. As in JAX on CPU, every operation on them computes in
    float32 and rounds its result to the narrow type (see ``widen``); NumPy calls their kind
    ``'V'``, functrans's :func:`kind` calls it ``'f'``.

    >>> [d.name for d in narrow_floats()][:1] in ([], ["bfloat16"])
    True
    """
    global _narrow_floats
    if _narrow_floats is None:
        try:
            import ml_dtypes
        except ImportError:
            ml_dtypes = None
        found = tuple(np.dtype(getattr(ml_dtypes, n)) for n in _NARROW_NAMES
                      if hasattr(ml_dtypes, n))
        _SHORT.update({d: "bf16" if d.name == "bfloat16" else
                       d.name.replace("float8_", "f8_").replace("float4_", "f4_")
                       for d in found})
        _NARROW.update(found)
        _NARROW.update(d.type for d in found)
        _SUPPORTED.update(found)
        _narrow_floats = found
    return _narrow_floats


def _load_if_narrow(x) -> bool:
    """Import ml_dtypes if ``x`` (a dtype, scalar type or dtype name) may be one of its types
    and it was not looked for yet; True if that happened (the caller asks again). Answered
    without importing it: a value of its types exists only once something imported it, and
    then taking its types costs nothing."""
    if _narrow_floats is None and ("ml_dtypes" in sys.modules or
                                     (isinstance(x, str) and x in _NARROW_NAMES)):
        narrow_floats()
        return True
    return False


def __getattr__(name):
    # The narrow types' tuples, for code that lists every dtype (export, tests): asking for
    # them imports ml_dtypes.
    if name == "NARROW_FLOATS":
        return narrow_floats()
    if name == "SUPPORTED_DTYPES":
        return _BASE_DTYPES + narrow_floats()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def np_dtype(x) -> np.dtype:
    """``np.dtype(x)``, importing ml_dtypes first where ``x`` names one of its types (NumPy
    knows "bfloat16" only once ml_dtypes is imported).

    >>> np_dtype("float32")
    dtype('float32')
    """
    try:
        return np.dtype(x)
    except TypeError:
        if _load_if_narrow(x):
            return np.dtype(x)
        raise


def is_supported(dtype: np.dtype) -> bool:
    """Whether functrans computes with ``dtype`` (a ``np.dtype``): the ordinary numeric
    dtypes and, when ml_dtypes is installed, the narrow floats.

    >>> is_supported(float32), is_supported(np.dtype("U3"))
    (True, False)
    """
    return dtype in _SUPPORTED or (_narrow_floats is None and _load_if_narrow(dtype)
                                   and dtype in _SUPPORTED)


# Placeholder Python scalars let np.result_type apply NEP 50's weak-scalar rules for us.
_WEAK_PLACEHOLDER = {"b": True, "i": 0, "u": 0, "f": 0.0, "c": 0j}


class UnsupportedDtypeError(TypeError):
    """A value or requested dtype is outside functrans' supported set."""


class TypePromotionError(ValueError):
    """Types that do not promote implicitly (JAX's ``jax.dtypes.TypePromotionError``): the
    float8 types meet no other type but integers, bools and weak scalars."""


def canonicalize_dtype(dtype, *, what: str = "value") -> np.dtype:
    """Return the ``np.dtype`` functrans uses for ``dtype`` or raise a clear TypeError.

    >>> canonicalize_dtype("float32")
    dtype('float32')
    """
    if isinstance(dtype, np.dtype) and dtype in _SUPPORTED:
        d = dtype
    else:
        try:
            d = np.dtype(dtype)
        except TypeError as e:
            if _load_if_narrow(dtype):  # "bfloat16" names a type once ml_dtypes is imported
                return canonicalize_dtype(dtype, what=what)
            raise UnsupportedDtypeError(f"{what} has unsupported dtype {dtype!r}: {e}") from None
        if not is_supported(d):
            names = ", ".join(str(s) for s in _BASE_DTYPES) + (
                ", " + ", ".join(str(s) for s in narrow_floats()) if _NARROW else "")
            raise UnsupportedDtypeError(
                f"{what} has dtype {d} ({d.kind!r} kind), which functrans does not support; "
                f"supported dtypes are: {names}")
    if not config.enable_x64:
        d = _TO_32.get(d, d)
    return d


def is_narrow_float(dtype) -> bool:
    """Whether ``dtype`` (a dtype or a scalar type) is bfloat16 or a float8/float4 type
    (computed through float32).

    >>> is_narrow_float(float16)
    False
    """
    return dtype in _NARROW or (_narrow_floats is None and _load_if_narrow(dtype)
                                and dtype in _NARROW)


def kind(dtype) -> str:
    """``dtype.kind``, except that the narrow float types are ``'f'`` (NumPy says ``'V'``).

    >>> kind(int8), kind(float32)
    ('i', 'f')
    """
    d = dtype if type(dtype) is not type else np.dtype(dtype)
    if not isinstance(d, np.dtype):
        d = np.dtype(d)
    k = d.kind
    return "f" if k == "V" and is_narrow_float(d) else k


def narrow_issubdtype(a, b) -> bool:
    """``np.issubdtype`` for the narrow float types, which NumPy does not place under
    ``np.floating`` (JAX does).

        >>> narrow_issubdtype(narrow_floats()[0], np.floating) if narrow_floats() else True
        True
    """
    b = b if isinstance(b, type) and issubclass(b, np.generic) else np.dtype(b).type
    return b is np.dtype(a).type or b in (np.floating, np.inexact, np.number, np.generic)


def short_name(dtype: np.dtype) -> str:
    """The jaxpr spelling of a dtype: ``f32``, ``i64``, ``u8``, ``bool`` (extended dtypes
    such as typed keys' ``key<fry>`` spell themselves)."""
    short = _SHORT.get(dtype)
    return str(dtype) if short is None else short


def default_float_dtype() -> np.dtype:
    return float64 if config.enable_x64 else float32


def default_complex_dtype() -> np.dtype:
    return complex128 if config.enable_x64 else complex64


def default_int_dtype() -> np.dtype:
    return int64 if config.enable_x64 else int32


def default_uint_dtype() -> np.dtype:
    return uint64 if config.enable_x64 else uint32


def python_scalar_dtype(x) -> np.dtype:
    """Dtype a Python scalar gets when it becomes an array (weakly typed)."""
    if isinstance(x, bool):
        return bool_
    if isinstance(x, int):
        return default_int_dtype()
    if isinstance(x, float):
        return default_float_dtype()
    if isinstance(x, complex):
        return default_complex_dtype()
    raise TypeError(f"{type(x).__name__} is not a Python scalar")


def is_python_scalar(x) -> bool:
    return type(x) in (bool, int, float, complex)


def is_float(dtype) -> bool:
    return kind(dtype) == "f"


def is_complex(dtype) -> bool:
    return np.dtype(dtype).kind == "c"


def real_dtype(dtype) -> np.dtype:
    """The dtype of a complex dtype's real and imaginary parts (others map to themselves).

    >>> real_dtype(complex64)
    dtype('float32')
    """
    d = np.dtype(dtype)
    return {complex64: float32, complex128: float64}.get(d, d)


def complex_dtype(dtype) -> np.dtype:
    """The complex dtype whose parts have float dtype ``dtype`` (float16 -> complex64).

    >>> complex_dtype(float64)
    dtype('complex128')
    """
    d = np.dtype(dtype)
    if d.kind == "c":
        return d
    return canonicalize_dtype(complex128 if d == float64 else complex64)


def is_int(dtype) -> bool:
    """True for signed and unsigned integer dtypes (not bool)."""
    return np.dtype(dtype).kind in "iu"


def is_bool(dtype) -> bool:
    return np.dtype(dtype) == bool_


def is_inexact(dtype) -> bool:
    return kind(dtype) in "fc"


def result_type(*dtypes_weak: tuple[np.dtype, bool]) -> tuple[np.dtype, bool]:
    """NEP 50 promotion of ``(dtype, weak)`` pairs; the result is weak iff every input is.

    >>> result_type((int8, False), (int64, True))
    (dtype('int8'), False)
    """
    if len(dtypes_weak) == 1:
        return dtypes_weak[0]
    first = dtypes_weak[0]
    if all(dw == first for dw in dtypes_weak):
        return first
    if (_NARROW or _load_if_narrow(None)) and any(d in _NARROW for d, _ in dtypes_weak):
        return _narrow_result_type(dtypes_weak), False
    args = [(_WEAK_PLACEHOLDER[d.kind] if w else d) for d, w in dtypes_weak]
    weak = all(w for _, w in dtypes_weak)
    if not weak and config.jax_numpy_dtype_promotion == "strict":
        return _strict_result_type(dtypes_weak), False
    if weak:
        # np.result_type of only Python scalars picks 64-bit defaults; keep the widest kind.
        kinds = {d.kind for d, _ in dtypes_weak}
        d = (default_complex_dtype() if "c" in kinds else
             default_float_dtype() if "f" in kinds else
             default_int_dtype() if kinds & {"i", "u"} else bool_)
        return d, True
    return canonicalize_dtype(np.result_type(*args)), False


# JAX's strict lattice: a Python scalar (weak type) promotes to a strong type of its kind or
# a higher one (int -> float -> complex); two different strong types never meet.
_WEAK_REACHES = {"i": "iufc", "u": "iufc", "f": "fc", "c": "c", "b": "b"}


def _strict_result_type(dtypes_weak) -> np.dtype:
    """The result of ``jax_numpy_dtype_promotion="strict"`` (some input strong)."""
    strong = {d for d, w in dtypes_weak if not w}
    ok = len(strong) == 1
    if ok:
        (d,) = strong
        ok = all(kind(d) in _WEAK_REACHES[kind(x)] for x, w in dtypes_weak if w)
    if not ok:
        names = tuple(str(x) if not w else f"{x} (weak)" for x, w in dtypes_weak)
        raise TypePromotionError(
            f"Input dtypes {names} have no available implicit dtype promotion path when "
            "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the desired "
            "output type, or set jax_numpy_dtype_promotion=standard.")
    return d


def _narrow_result_type(dtypes_weak) -> np.dtype:
    # JAX's lattice where a narrow float takes part: integers, bools and weak floats take the
    # float's type; two different 16-bit-or-narrower floats meet at float32; a wider float or
    # a complex value wins as usual.
    strong = {d for d, w in dtypes_weak if not w}
    eight = {d for d in strong if d in _NARROW and d.itemsize == 1}
    if eight and len({d for d in strong if kind(d) in "fc"}) > 1:
        names = ", ".join(sorted(d.name for d in strong))
        raise TypePromotionError(
            f"the types ({names}) have no implicit promotion: 8-bit floats promote only with "
            "integers, bools and Python scalars; convert explicitly, e.g. x.astype('float32')")
    kinds = {kind(d) for d, _ in dtypes_weak}
    wide = any(d in (float64, complex128) for d in strong)
    if "c" in kinds:
        return canonicalize_dtype(complex128 if wide else complex64)
    floats = {d for d in strong if kind(d) == "f"}
    if wide:
        return canonicalize_dtype(float64)
    if float32 in floats or len(floats) > 1:
        return float32
    return floats.pop() if floats else next(d for d in strong if d in _NARROW)


def promote_types(a, b) -> np.dtype:
    """Promotion of two strong dtypes (``np.promote_types`` restricted to the supported set)."""
    a, b = canonicalize_dtype(a), canonicalize_dtype(b)
    if a in _NARROW or b in _NARROW:
        return _narrow_result_type([(a, False), (b, False)])
    return canonicalize_dtype(np.promote_types(a, b))


def finfo(dtype):
    d = canonicalize_dtype(dtype)
    if d in _NARROW:
        import ml_dtypes  # imported already: d is one of its types
        return ml_dtypes.finfo(d)
    return np.finfo(d)


def iinfo(dtype):
    return np.iinfo(canonicalize_dtype(dtype))
