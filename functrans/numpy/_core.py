"""Conversion, dtype promotion and broadcasting shared by every functrans.numpy function.

Dtypes follow NumPy 2 exactly: each ufunc-like function asks NumPy's own type resolution
(``ufunc.resolve_dtypes``) which loop NumPy would run, with Python scalars passed as *weak*
(NEP 50), then casts its operands to that loop's dtypes::

    >>> asarray([1, 2]).dtype, (asarray([1, 2], "int8") + 1).dtype
    (dtype('int64'), dtype('int8'))
"""
from __future__ import annotations

import functools
import operator
import warnings

import numpy as np

from .. import primitives as P
from ..core import dtypes
from ..core.array import Array
from ..core.avals import ShapedArray
from ..core.config import config
from ..core.shape_poly import DimExpr, is_symbolic_shape
from ..core.shape_poly import broadcast_shapes as symbolic_broadcast_shapes
from ..core.trace import Tracer, get_aval

ArrayLike = object  # documentation alias: Array, Tracer, ndarray, Python scalar, nested list

_PY_SCALARS = (bool, int, float, complex)
# NEP 50 has no weak booleans (bool is already the lowest kind), and NumPy's resolve_dtypes
# rejects the Python type ``bool``: weak booleans resolve as the bool dtype.
_WEAK_TYPE_FOR_KIND = {"b": np.dtype(bool), "i": int, "u": int, "f": float, "c": complex}


def is_array(x) -> bool:
    t = type(x)
    return t is Array or isinstance(x, Tracer)


def weak_scalar(x, dtype) -> Array:
    """A Python scalar as a 0-d weakly typed Array of ``dtype`` (NumPy raises on overflow)."""
    return Array._wrap(np.asarray(x, dtype=dtype), True)


def asarray(a, dtype=None, order=None, *, copy=None):
    """Convert to a functrans array (Array or tracer) without copying when possible.

    >>> asarray([1.0, 2.0])
    Array([1., 2.], dtype=float64)
    """
    if dtype is not None and not getattr(dtype, "_is_key_dtype", False):
        dtype = dtypes.canonicalize_dtype(dtype, what="requested dtype")
    t = type(a)
    if t is Array or isinstance(a, Tracer):
        out = a
    elif getattr(type(a), "_spread", False) or getattr(type(a), "_unreduced", False):
        out = a  # spread over processes, or partial sums on devices: as it is
    elif t in _PY_SCALARS:
        d = dtypes.python_scalar_dtype(a)
        if dtype is not None:
            return Array._wrap(np.asarray(a, dtype=dtype))
        return Array._wrap(np.asarray(a, dtype=d), True)
    elif t is list or t is tuple:
        out = _from_sequence(a, dtype)
    elif getattr(a, "_is_key_array", False) and (dtype is None or dtype == a.dtype):
        return a  # typed PRNG keys are arrays of their own dtype
    elif t is DimExpr:
        out = a.dimension_as_value()  # a symbolic size, as the program's value
    else:
        try:
            value = np.asarray(a)
        except Exception as e:
            raise TypeError(f"cannot convert {t.__name__} to a functrans array: {e}") from None
        if value.dtype == object:
            raise dtypes.UnsupportedDtypeError(
                f"cannot convert {t.__name__} to a functrans array: it gives a NumPy object "
                "array (ragged nesting or non-numeric elements?)")
        out = Array(value)
    # An explicit dtype gives a strongly typed array, as in JAX (weak values too).
    if dtype is not None and (get_aval(out).dtype != dtype or get_aval(out).weak_type):
        return convert(out, dtype)
    return out


def _arraylike(x) -> bool:
    t = type(x)
    return (t is Array or t in _PY_SCALARS
            or isinstance(x, (Tracer, np.ndarray, np.generic, Array))
            or hasattr(x, "__jax_array__") or np.isscalar(x))


def check_arraylike(name: str, *args, allow_none=False) -> None:
    """JAX's refusal of lists, tuples and other non-array values where an array is expected
    (only array constructors such as ``fnp.array`` convert sequences); ``allow_none`` lets
    optional arguments left as None through.

    >>> check_arraylike("sum", [1, 2])
    Traceback (most recent call last):
    TypeError: sum requires ndarray or scalar arguments, got <class 'list'> at position 0.
    """
    for x in args:
        if type(x) is not Array and not _arraylike(x) and not (allow_none and x is None):
            i = next(i for i, x in enumerate(args)
                     if not _arraylike(x) and not (allow_none and x is None))
            raise TypeError(f"{name} requires ndarray or scalar arguments, got "
                            f"{type(args[i])} at position {i}.")


def check_sequence_arraylike(name: str, arrays) -> None:
    """:func:`check_arraylike` on the members of a list or tuple of arrays (an array passed
    instead stands for its rows, as in NumPy).

    >>> check_sequence_arraylike("stack", [fnp.ones(2), [1.0, 2.0]])
    Traceback (most recent call last):
    TypeError: stack requires ndarray or scalar arguments, got <class 'list'> at position 1.
    """
    if type(arrays) in (list, tuple):
        check_arraylike(name, *arrays)


def ensure_arraylike(name: str, *args):
    """:func:`check_arraylike`, then the arguments as arrays (one, or a tuple of them).

    >>> ensure_arraylike("sin", 1.0)
    Array(1., dtype=float64, weak_type=True)
    """
    check_arraylike(name, *args)
    if len(args) == 1:
        return asarray(args[0])
    return tuple(asarray(a) for a in args)


def array(object, dtype=None, copy=True, order=None, ndmin=0):
    """Create an array (always a new, immutable value), as ``np.array``.

    >>> array([[1, 2], [3, 4]], dtype="float32").shape
    (2, 2)
    """
    out = asarray(object, dtype)
    ndim = get_aval(out).ndim
    if ndmin > ndim:
        out = reshape_raw(out, (1,) * (ndmin - ndim) + get_aval(out).shape)
    return out


def _from_sequence(seq, dtype=None):
    leaves = []

    def collect(s):
        if type(s) in (list, tuple):
            for x in s:
                collect(x)
        else:
            leaves.append(s)
    collect(seq)
    if not any(is_array(x) or type(x) is DimExpr for x in leaves):
        # With a dtype, NumPy converts each value directly (out-of-range Python ints raise).
        value = np.asarray(seq) if dtype is None else np.asarray(seq, dtype)
        if value.dtype == object:
            raise dtypes.UnsupportedDtypeError(
                "cannot convert a ragged or non-numeric nested sequence to a functrans array")
        return Array(value)
    # Sequences holding arrays/tracers: stack them. As in NumPy's array coercion, Python
    # scalars among them are strong (int64/float64), not weak.
    items = [_from_sequence(x) if type(x) in (list, tuple) else
             Array(np.asarray(x)) if type(x) in _PY_SCALARS else
             convert(x, dtypes.default_int_dtype()) if type(x) is DimExpr else  # as an int
             asarray(x) for x in seq]
    items = promote(*items)
    shapes = {get_aval(x).shape for x in items}
    if len(shapes) > 1:
        raise ValueError(f"setting an array element with a sequence: inhomogeneous shapes "
                         f"{sorted(shapes)}")
    expanded = [reshape_raw(x, (1,) + get_aval(x).shape) for x in items]
    return P.concatenate_p.bind1(*expanded, dimension=0) if len(expanded) > 1 else expanded[0]


def reshape_raw(x, shape):
    shape = tuple(shape)
    if get_aval(x).shape == shape:
        return x
    return P.reshape_p.bind1(x, new_sizes=shape)


def convert(x, dtype, weak_type=False):
    """Cast an array or Python scalar to ``dtype`` (no-op if it already has it)."""
    if type(x) is DimExpr:
        x = x.dimension_as_value()
    if type(x) in _PY_SCALARS:
        return weak_scalar(x, dtype) if weak_type else Array._wrap(np.asarray(x, dtype=dtype))
    aval = get_aval(x)
    if aval.dtype == dtype and aval.weak_type == weak_type:
        return x
    if not is_array(x):
        x = asarray(x)
    return P.convert_element_type_p.bind1(x, new_dtype=dtype, weak_type=weak_type)


def _operand(x):
    """Python scalars stay as they are (weak); everything else becomes an array."""
    if type(x) in _PY_SCALARS or type(x) is Array or isinstance(x, Tracer):
        return x
    return asarray(x)


def _type_key(x):
    """What NumPy's type resolution should see: a dtype, or a Python type for weak values."""
    if type(x) in _PY_SCALARS:
        return _WEAK_TYPE_FOR_KIND["b"] if type(x) is bool else type(x)
    aval = get_aval(x)
    return _WEAK_TYPE_FOR_KIND[dtypes.kind(aval.dtype)] if aval.weak_type else aval.dtype


@functools.lru_cache(maxsize=4096)
def resolve_loop(ufunc: np.ufunc, keys: tuple, x64: bool, dtype=None):
    """NumPy's loop dtypes for ``ufunc`` on inputs of these types: (in_dtypes, out_dtype).

    ``dtype`` is NumPy's ``dtype=`` argument: it fixes the loop's output dtype (a signature),
    and the inputs must cast to the loop with ``same_kind`` casting, as in the ufunc call.
    """
    if any(dtypes.is_narrow_float(k) for k in keys):
        return _resolve_narrow_loop(ufunc, keys, x64, dtype)
    if dtype is None:
        resolved = ufunc.resolve_dtypes(keys + (None,) * ufunc.nout)
    else:
        resolved = ufunc.resolve_dtypes(keys + (None,) * ufunc.nout,
                                        signature=(None,) * ufunc.nin + (dtype,) * ufunc.nout,
                                        casting="same_kind")
    if any(d == object for d in resolved) and all(isinstance(k, type) for k in keys):
        # Comparisons of Python ints only pick NumPy's object loop (arbitrary precision);
        # as arrays they have the default dtypes.
        defaults = {int: dtypes.default_int_dtype(), float: dtypes.default_float_dtype(),
                    complex: dtypes.default_complex_dtype()}
        return resolve_loop(ufunc, tuple(defaults[k] for k in keys), x64, dtype)
    return tuple(dtypes.canonicalize_dtype(d) for d in resolved[:ufunc.nin]), \
        dtypes.canonicalize_dtype(resolved[ufunc.nin])


def _resolve_narrow_loop(ufunc, keys, x64, dtype):
    # NumPy's loops for bfloat16/float8 (ml_dtypes') promote as NumPy does (int32 + bfloat16
    # is float64); JAX keeps the narrow type: the types meet on JAX's lattice, and the loop is
    # the float32 one, whose float32 parts then stand for the narrow type.
    target = dtypes.result_type(*[(dtypes.python_scalar_dtype(k()), True) if isinstance(k, type)
                                  else (k, False) for k in keys])[0]
    if not dtypes.is_narrow_float(target):
        wide = tuple(target if dtypes.is_narrow_float(k) else k for k in keys)
        return resolve_loop(ufunc, wide, x64, dtype)
    wide = tuple(k if isinstance(k, type) else dtypes.float32 for k in keys)
    in_dtypes, out_dtype = resolve_loop(ufunc, wide, x64, dtype)
    narrow = {dtypes.float32: target, dtypes.float64: target}
    return tuple(narrow.get(d, d) for d in in_dtypes), narrow.get(out_dtype, out_dtype)


def _shown(keys):
    return ", ".join(k.__name__ if isinstance(k, type) else str(k) for k in keys)


def ufunc_operands(name: str, ufunc: np.ufunc, args, dtype=None, keep_scalars=True):
    """Operands converted to NumPy's loop dtypes for ``ufunc`` and broadcast together.

    Returns ``(operands, out_dtype, weak)``. With ``keep_scalars`` rank-0 operands are left
    unbroadcast (single primitives accept them); composite implementations that ``select``
    between operands need every operand at the full shape.
    """
    args = [_operand(a) for a in args]
    keys = tuple(_type_key(a) for a in args)
    if dtype is not None:
        dtype = dtypes.canonicalize_dtype(dtype, what=f"fnp.{name} dtype=")
    check_strict_promotion(keys)
    try:
        x64 = dtypes.default_int_dtype() == dtypes.int64
        in_dtypes, out_dtype = resolve_loop(ufunc, keys, x64, dtype)
    except (TypeError, np.exceptions.DTypePromotionError) as e:
        raise TypeError(f"fnp.{name} does not support inputs of types ({_shown(keys)}): {e}"
                        ) from None
    # `k in _PY_SCALARS` would compare dtypes to Python types by value (int64 == int).
    weak = dtype is None and all(isinstance(k, type) and k in _PY_SCALARS for k in keys)
    if config.python_int_wraparound:
        ops = [jax_int_operand(a, d, weak) if type(a) is int else convert(a, d, weak)
               for a, d in zip(args, in_dtypes)]
    else:
        ops = [convert(a, d, weak) for a, d in zip(args, in_dtypes)]
    return broadcast_operands(name, ops, keep_scalars), out_dtype, weak


def jax_int_operand(x: int, dtype, weak_type=False) -> Array:
    """A Python int operand as JAX converts it (``config.python_int_wraparound``): to the
    default integer type, which it must fit, then to ``dtype``, wrapping into an integer one.

        >>> with config.override(python_int_wraparound=True):
        ...     jax_int_operand(-1, np.dtype("uint8"))
        Array(255, dtype=uint8)
    """
    default = dtypes.default_int_dtype()
    info = np.iinfo(default)
    if not info.min <= x <= info.max:
        raise OverflowError(f"Python integer {x} out of bounds for {default.name}: a Python int "
                            f"operand is converted to {default.name} first, as in JAX")
    if dtypes.kind(dtype) in "iu":
        return Array._wrap(np.asarray(x, default).astype(dtype), weak_type)
    return convert(x, dtype, weak_type)


def check_strict_promotion(keys) -> None:
    """Under ``jax_numpy_dtype_promotion="strict"``, raise ``TypePromotionError`` where the
    operand types (:func:`_type_key`'s keys) need an implicit promotion JAX's strict lattice
    lacks (NumPy's loop resolution would promote them)."""
    if config.jax_numpy_dtype_promotion == "strict" and len(set(keys)) > 1:
        dtypes.result_type(*[(dtypes.python_scalar_dtype(k()), True) if isinstance(k, type)
                             else (k, False) for k in keys])


def check_rank_promotion(name: str, shapes) -> None:
    """JAX's ``jax_numpy_rank_promotion``: under ``"raise"`` (``"warn"``), operands of
    different non-zero ranks raise ``ValueError`` (warn) instead of broadcasting."""
    mode = config.jax_numpy_rank_promotion
    if mode == "allow" or len({len(s) for s in shapes if s}) < 2:
        return
    msg = (f"Operands could not be broadcast together for {name} on shapes "
           f"{' '.join(str(tuple(s)) for s in shapes)} and with the config option "
           f"jax_numpy_rank_promotion={mode!r}: add dimensions explicitly (expand_dims, "
           "reshape) or set jax_numpy_rank_promotion='allow'")
    if mode == "raise":
        raise ValueError(msg)
    warnings.warn(msg, stacklevel=3)


def broadcast_shapes(name: str, *shapes) -> tuple:
    if any(is_symbolic_shape(s) for s in shapes):
        return _broadcast_symbolic(name, shapes)
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        shown = " ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"fnp.{name}: operands could not be broadcast together with shapes "
                         f"{shown}") from None


def _broadcast_symbolic(name, shapes) -> tuple:
    """NumPy's broadcasting of shapes holding symbolic sizes: a size meets 1 or an equal
    size (``a`` and ``b`` are not known equal: JAX's TypeError, in its words)."""
    try:
        return symbolic_broadcast_shapes(*shapes)
    except ValueError:
        raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                        f"{', '.join(str(tuple(s)) for s in shapes)}.") from None


def broadcast_to_shape(x, shape):
    """NumPy broadcasting of one array to ``shape`` (one broadcast_in_dim)."""
    aval = get_aval(x)
    if aval.shape == tuple(shape):
        return x
    lead = len(shape) - aval.ndim
    if lead < 0:
        raise ValueError(f"cannot broadcast an array of shape {aval.shape} to {tuple(shape)}")
    squeeze = [i for i, (d, s) in enumerate(zip(aval.shape, shape[lead:])) if d == 1 and s != 1]
    for d, s in zip(aval.shape, shape[lead:]):
        if d != s and d != 1:
            raise ValueError(f"cannot broadcast an array of shape {aval.shape} to {tuple(shape)}")
    if squeeze:
        x = P.reshape_p.bind1(x, new_sizes=tuple(d for i, d in enumerate(aval.shape)
                                                 if i not in squeeze))
    kept = [lead + i for i in range(aval.ndim) if i not in squeeze]
    return P.broadcast_in_dim_p.bind1(x, shape=tuple(shape), broadcast_dimensions=tuple(kept))


def broadcast_operands(name: str, ops, keep_scalars=True):
    """Broadcast to a common shape; with ``keep_scalars`` rank-0 operands stay scalars."""
    shapes = [get_aval(o).shape for o in ops]
    if all(s == shapes[0] or (keep_scalars and not s) for s in shapes):
        return ops
    check_rank_promotion(name, shapes)
    shape = broadcast_shapes(name, *shapes)
    return [o if (keep_scalars and not s) or s == shape else broadcast_to_shape(o, shape)
            for o, s in zip(ops, shapes)]


def promote(*args):
    """Cast arrays/scalars to their NEP 50 result dtype (no broadcasting)."""
    args = [_operand(a) for a in args]
    dw = [(get_aval(a).dtype, get_aval(a).weak_type) for a in args]
    d, weak = dtypes.result_type(*dw)
    return [convert(a, d, weak and get_aval(a).weak_type) for a in args]


def result_dtype(*args) -> np.dtype:
    """NEP 50 result dtype of arrays / scalars / dtypes."""
    pairs = []
    for a in args:
        if isinstance(a, (np.dtype, type, str)) and not type(a) in _PY_SCALARS:
            pairs.append((dtypes.canonicalize_dtype(a), False))
        elif (not isinstance(a, (Array, Tracer, np.ndarray, np.generic))
              and isinstance(getattr(a, "dtype", None), np.dtype)):
            # A description of an array (ShapeDtypeStruct, ShapedArray): its dtype, as JAX
            # takes it (equinox compares results with their ShapeDtypeStructs this way).
            pairs.append((dtypes.canonicalize_dtype(a.dtype), False))
        else:
            aval = get_aval(_operand(a))
            pairs.append((aval.dtype, aval.weak_type))
    return dtypes.result_type(*pairs)[0]


def normalize_axis(axis, ndim: int, name: str = "axis") -> int:
    """A non-negative axis, or a NumPy-style AxisError naming the axis and rank."""
    try:
        axis = operator.index(axis)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {axis!r}") from None
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(f"{name} {axis} is out of bounds for array of dimension "
                                      f"{ndim}")
    return axis % ndim


def normalize_axes(axis, ndim: int) -> tuple:
    """``None`` -> all axes; int or tuple (list, range) -> sorted unique non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (tuple, list, range)):
        axes = tuple(normalize_axis(a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise ValueError(f"duplicate value in 'axis': {axis}")
        return tuple(sorted(axes))
    return (normalize_axis(axis, ndim),)


def inexact_dtype(dtype) -> np.dtype:
    """The float dtype NumPy computes in for ``dtype`` (ints -> at least float16, as np.sin)."""
    dtype = np.dtype(dtype)
    if dtypes.kind(dtype) in "fc":
        return dtype
    return dtypes.canonicalize_dtype(np.promote_types(dtype, np.float16))


def aval(x) -> ShapedArray:
    return get_aval(_operand(x))


def unsupported_out(name, out):
    if out is not None:
        raise NotImplementedError(f"fnp.{name}: the out= argument is not supported; functrans "
                                  "arrays are immutable, use the return value instead")
