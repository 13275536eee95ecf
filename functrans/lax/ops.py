"""The primitive-level API with JAX's names: one thin function per primitive plus a few
composites (``clamp``, ``full``, ``slice_in_dim``, ...).

Like JAX's lax, these do not broadcast (except rank-0 operands) and do not promote dtypes,
except that weakly typed values (Python scalars) take their partner's dtype::

    >>> lax.add(fnp.ones(3, "float32"), 2.0)
    Array([3., 3., 3.], dtype=float32)
"""
from __future__ import annotations

import enum
import math
import operator

import numpy as np

from .. import primitives as P
from ..core import dtypes
from ..core.array import Array
from ..core.shape_poly import DimExpr, as_dim
from ..core.trace import Tracer, get_aval


# Bound once: this module defines ``lax.complex``, which shadows the builtin below.
_PY_SCALAR_TYPES = (bool, int, float, complex)


# ---- argument helpers -------------------------------------------------------------------------------
def _is_weak(x) -> bool:
    t = type(x)
    if t is Array:  # the common cases first, without getattr's property lookups
        return x._weak
    return t in _PY_SCALAR_TYPES or getattr(x, "weak_type", False)


def _convert_weak(x, dtype):
    """Give a weakly typed value (Python scalar or weak array) the dtype ``dtype``."""
    if type(x) in _PY_SCALAR_TYPES:
        return np.asarray(x, dtype=dtype)[()]
    if type(x) is DimExpr:
        x = x.dimension_as_value()
    if get_aval(x).dtype == dtype:
        return x
    return P.convert_element_type_p.bind1(x, new_dtype=dtype, weak_type=False)


# A weakly typed value (a Python scalar) takes a strongly typed partner's dtype only within
# its kind, as JAX's default (32-bit) mode converts ``f32 + 1.0`` but never ``f32 + 1``.
_WEAK_TAKES = {"b": "b", "i": "iu", "u": "iu", "f": "f", "c": "c"}
# The functrans.numpy function that promotes, named in lax's dtype errors (as JAX's tips).
_PROMOTING = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
              "max": "maximum", "min": "minimum", "eq": "equal", "ne": "not_equal",
              "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
              "atan2": "arctan2", "nextafter": "nextafter", "shift_left": "left_shift",
              "shift_right_arithmetic": "right_shift", "select": "where"}


def _dtype(x):
    if type(x) is Array:
        return x._value.dtype
    if type(x) in _PY_SCALAR_TYPES:
        return dtypes.python_scalar_dtype(x)
    return get_aval(x).dtype


def _dtype_error(name, args):
    shown = ", ".join(str(_dtype(a)) for a in args)
    tip = (f" (Tip: functrans.numpy.{_PROMOTING[name]} is a similar function that does "
           "automatic type promotion on inputs)." if name in _PROMOTING else "")
    return TypeError(f"lax.{name} requires arguments to have the same dtypes, got {shown}.{tip}")


def match_weak(*args, name="op"):
    """Weakly typed arguments take the dtype of the strongly typed ones when of the same kind
    (NEP 50); any other mix of dtypes is JAX's TypeError naming them."""
    for a in args:
        if _is_weak(a):
            break
    else:
        first = _dtype(args[0])
        for a in args[1:]:
            if _dtype(a) != first:
                raise _dtype_error(name, args)
        return args
    strong = {_dtype(a) for a in args if not _is_weak(a)}
    if len(strong) > 1:
        raise _dtype_error(name, args)
    if strong:
        target, = strong
    else:
        weak = {_dtype(a) for a in args}
        if len({dtypes.kind(d) for d in weak}) > 1:
            raise _dtype_error(name, args)
        if len(weak) == 1:
            return args  # all weak, one dtype: the result stays weak (lax.add(1, 2))
        target, _ = dtypes.result_type(*[(d, True) for d in weak])
    if any(dtypes.kind(target) not in _WEAK_TAKES[dtypes.kind(_dtype(a))]
           for a in args if _is_weak(a)):
        raise _dtype_error(name, args)
    return tuple(_convert_weak(a, target) if _is_weak(a) else a for a in args)


def _unary(prim):
    def fn(x):
        return prim.bind1(x)
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` (the ``{prim.name}`` primitive).\n\n" \
                 f"    >>> lax.{prim.name}(fnp.array([0.5, 2.0]))  # doctest: +SKIP\n"
    return fn


def _binary(prim):
    def fn(x, y):
        return prim.bind1(*match_weak(x, y, name=prim.name))
    fn.__name__ = prim.name
    fn.__doc__ = f"Elementwise ``{prim.name}`` of two arrays of one dtype (rank-0 operands " \
                 f"broadcast; Python scalars take the other operand's dtype if of its kind).\n\n" \
                 f"    >>> lax.{prim.name}(fnp.array([1.0, 2.0]), 3.0)  # doctest: +SKIP\n"
    return fn


# ---- elementwise --------------------------------------------------------------------------------------
neg, sign, floor, ceil, is_finite = map(_unary, (P.neg_p, P.sign_p, P.floor_p, P.ceil_p,
                                                   P.is_finite_p))
exp, exp2, log, log1p, expm1 = map(_unary, (P.exp_p, P.exp2_p, P.log_p, P.log1p_p, P.expm1_p))
tanh, logistic, sin, cos, tan = map(_unary, (P.tanh_p, P.logistic_p, P.sin_p, P.cos_p, P.tan_p))
asin, acos, atan = map(_unary, (P.asin_p, P.acos_p, P.atan_p))
sinh, cosh, asinh, acosh, atanh = map(_unary, (P.sinh_p, P.cosh_p, P.asinh_p, P.acosh_p,
                                                 P.atanh_p))
sqrt, rsqrt, cbrt, square, abs = map(_unary, (P.sqrt_p, P.rsqrt_p, P.cbrt_p, P.square_p,
                                               P.abs_p))
erf, erfc, erf_inv, lgamma, digamma = map(_unary, (P.erf_p, P.erfc_p, P.erf_inv_p, P.lgamma_p,
                                                     P.digamma_p))
bitwise_not, population_count = map(_unary, (P.not_p, P.population_count_p))
add, sub, mul, div, rem = map(_binary, (P.add_p, P.sub_p, P.mul_p, P.div_p, P.rem_p))
max, min, atan2, nextafter = map(_binary, (P.max_p, P.min_p, P.atan2_p, P.nextafter_p))
bitwise_and, bitwise_or, bitwise_xor = map(_binary, (P.and_p, P.or_p, P.xor_p))
zeta, polygamma = map(_binary, (P.zeta_p, P.polygamma_p))
shift_left, shift_right_arithmetic, shift_right_logical = map(
    _binary, (P.shift_left_p, P.shift_right_arithmetic_p, P.shift_right_logical_p))
eq, ne, lt, le, gt, ge = map(_binary, (P.eq_p, P.ne_p, P.lt_p, P.le_p, P.gt_p, P.ge_p))


def pow(x, y):
    """``x ** y`` elementwise: ``x`` inexact, ``y`` of ``x``'s dtype or any integer dtype.

    >>> lax.pow(fnp.array([2.0, 3.0]), fnp.array([3, 2]))
    Array([8., 9.], dtype=float64)
    """
    xd, yd = _dtype(x), _dtype(y)
    if dtypes.kind(xd) in "fc" and dtypes.kind(yd) in "iu":
        # An integer exponent is exact in x's dtype; pow_p takes one dtype.
        return P.pow_p.bind1(x, _convert_weak(y, xd) if _is_weak(y) else
                             P.convert_element_type_p.bind1(y, new_dtype=xd, weak_type=False))
    if (dtypes.kind(xd) in "fc" and dtypes.kind(yd) in "fc" and xd != yd
            and not (_is_weak(x) or _is_weak(y))):
        raise TypeError("the first argument to pow must have an inexact dtype (float or "
                        "complex), and the second argument must have an inexact or integer "
                        f"dtype, and two inexact dtypes must match, but got {xd} and {yd} "
                        "respectively.")
    return P.pow_p.bind1(*match_weak(x, y, name="pow"))


class RoundingMethod(enum.IntEnum):
    """How :func:`round` breaks ties: away from zero (C's round) or to even (NumPy's).

    >>> lax.round(fnp.array([0.5, 1.5]), lax.RoundingMethod.TO_NEAREST_EVEN)
    Array([0., 2.], dtype=float64)
    """
    AWAY_FROM_ZERO = 0
    TO_NEAREST_EVEN = 1


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):
    """Round to integral values: ``AWAY_FROM_ZERO`` (C round) or ``TO_NEAREST_EVEN`` (np.round).

    >>> lax.round(2.5)
    Array(3., dtype=float64, weak_type=True)
    """
    return P.round_p.bind1(x, rounding_method=int(rounding_method))


def integer_pow(x, y: int):
    """``x ** y`` for a static integer ``y`` (repeated multiplication).

    >>> lax.integer_pow(fnp.float32(3), 2)
    Array(9., dtype=float32)
    """
    return P.integer_pow_p.bind1(x, y=operator.index(y))


def _unchanged(operand):
    """What an operation that changes nothing returns: a functrans value (Array or tracer) as
    it is; anything else (NumPy arrays, scalars, lists) as a new Array of its traced type, as
    the operation would have made (JAX, too, returns its own arrays)."""
    if type(operand) is Array or isinstance(operand, Tracer):
        return operand
    aval = get_aval(operand)
    return P.convert_element_type_p.bind1(operand, new_dtype=aval.dtype, weak_type=aval.weak_type)


def convert_element_type(operand, new_dtype):
    """Cast to ``new_dtype`` (a no-op when the dtype already matches).

    >>> lax.convert_element_type(fnp.arange(3), "float32")
    Array([0., 1., 2.], dtype=float32)
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype, what="convert_element_type target")
    aval = get_aval(operand)
    if type(operand) in _PY_SCALAR_TYPES:
        operand = np.asarray(operand, aval.dtype)[()]
    elif isinstance(operand, (np.ndarray, np.generic)) and operand.dtype != aval.dtype:
        operand = np.asarray(operand, aval.dtype)  # float64 NumPy input with enable_x64 off
    if aval.dtype == new_dtype and not aval.weak_type:
        return _unchanged(operand)
    return P.convert_element_type_p.bind1(operand, new_dtype=new_dtype, weak_type=False)


def fma(x, y, z):
    """``x * y + z`` rounded once (a fused multiply-add), on floating-point arrays.

    >>> float(lax.fma(fnp.float32(1 + 2**-12), fnp.float32(1 + 2**-12), fnp.float32(-1)))
    0.0004883408546447754
    """
    return P.fma_p.bind1(*match_weak(x, y, z, name="fma"))


def bitcast_convert_type(operand, new_dtype):
    """Reinterpret the bits of ``operand`` as ``new_dtype`` (same width).

    >>> lax.bitcast_convert_type(fnp.float32(1.0), "int32")
    Array(1065353216, dtype=int32)
    """
    new_dtype = dtypes.canonicalize_dtype(new_dtype, what="bitcast_convert_type target")
    if get_aval(operand).dtype == new_dtype:
        return operand
    return P.bitcast_convert_type_p.bind1(operand, new_dtype=new_dtype)


def select_n(which, *cases):
    """``cases[which]`` elementwise; ``which`` is bool (two cases) or an integer array.

    >>> lax.select_n(fnp.array([True, False]), fnp.zeros(2), fnp.ones(2))
    Array([1., 0.], dtype=float64)
    """
    return P.select_n_p.bind1(which, *match_weak(*cases, name="select"))


def select(pred, on_true, on_false):
    """``on_true`` where ``pred`` else ``on_false`` (shapes must match; no broadcasting).

    >>> lax.select(fnp.array([True, False]), fnp.ones(2), fnp.zeros(2))
    Array([1., 0.], dtype=float64)
    """
    for key in (on_true, on_false):
        if getattr(key, "_is_key_array", False):  # typed PRNG keys, chosen by their data
            return key._where(pred, on_true, on_false)  # (random._keys: above lax)
    return select_n(pred, on_false, on_true)


def clamp(min, x, max):
    """``min(max(x, min), max)`` elementwise (JAX argument order).

    >>> lax.clamp(0.0, fnp.array([-1.0, 0.5, 2.0]), 1.0)
    Array([0. , 0.5, 1. ], dtype=float64)
    """
    lo, x_, hi = match_weak(min, x, max, name="clamp")
    value = P.min_p.bind1(P.max_p.bind1(x_, lo), hi)
    if dtypes.kind(get_aval(value).dtype) != "f":
        return value  # no derivatives: the selects below only route tangents
    # JAX's derivatives: x's where min < x < max, min's where x < min < max, max's where
    # max < x, and zero elsewhere (at the boundaries too). Each select picks the operand whose
    # tangent applies; the values agree with ``value`` wherever one is picked.
    shape = get_aval(value).shape
    lo, x_, hi = (v if get_aval(v).shape == shape else broadcast_in_dim(v, shape, ())
                  for v in (lo, x_, hi))
    x_in = P.and_p.bind1(P.gt_p.bind1(x_, lo), P.lt_p.bind1(x_, hi))
    lo_in = P.and_p.bind1(P.gt_p.bind1(lo, x_), P.lt_p.bind1(lo, hi))
    hi_in = P.lt_p.bind1(hi, x_)
    out = select(hi_in, hi, stop_gradient(value))
    return select(x_in, x_, select(lo_in, lo, out))


def stop_gradient(x):
    """Identity whose derivative is zero (applied to every leaf of a pytree).

    >>> ft.grad(lambda x: x * lax.stop_gradient(x))(3.0)
    Array(3., dtype=float64, weak_type=True)
    """
    from ..core.tree import tree_map
    return tree_map(lambda v: P.stop_gradient_p.bind1(v), x)


# ---- shapes ---------------------------------------------------------------------------------------------
def _axis(axis, ndim, what="axis"):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise ValueError(f"{what} {axis} is out of bounds for an array of rank {ndim}")
    return axis % ndim


def broadcast_in_dim(operand, shape, broadcast_dimensions):
    """Broadcast ``operand`` into ``shape``, its dims landing on ``broadcast_dimensions``.

    >>> lax.broadcast_in_dim(fnp.arange(3), (2, 3), (1,)).shape
    (2, 3)
    """
    shape = tuple(map(as_dim, shape))
    bdims = tuple(map(operator.index, broadcast_dimensions))
    aval = get_aval(operand)
    if aval.shape == shape and bdims == tuple(range(len(shape))):
        return _unchanged(operand)
    return P.broadcast_in_dim_p.bind1(operand, shape=shape, broadcast_dimensions=bdims)


def broadcast_shapes(*shapes):
    """The shape NumPy-style broadcasting gives these shapes (ranks are aligned on the right).

    >>> lax.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        raise ValueError("lax.broadcast_shapes needs at least one shape")
    shapes = [tuple(map(as_dim, s)) for s in shapes]
    for s in shapes:
        if any(d < 0 for d in s):
            raise TypeError("Only non-negative indices are allowed when broadcasting static "
                            f"shapes, but got shape {s}.")
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: shapes={shapes}") from None


def broadcast(operand, sizes):
    """Add leading dimensions ``sizes``: ``lax.broadcast(x, (2,)).shape == (2, *x.shape)``.

    >>> lax.broadcast(fnp.arange(3), (2,)).shape
    (2, 3)
    """
    ndim = get_aval(operand).ndim
    sizes = tuple(sizes)
    shape = sizes + get_aval(operand).shape
    return broadcast_in_dim(operand, shape, tuple(range(len(sizes), len(sizes) + ndim)))


def broadcast_to_rank(x, rank):
    """``x`` with leading dimensions of size 1 added to give it rank ``rank`` (unchanged if
    it already has that rank or more), as JAX's ``lax.broadcast_to_rank``.

    >>> lax.broadcast_to_rank(fnp.arange(3), 3).shape
    (1, 1, 3)
    """
    ndim = get_aval(x).ndim
    rank = operator.index(rank)
    if ndim >= rank:
        return _unchanged(x)
    return broadcast(x, (1,) * (rank - ndim))


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
    """Reshape (row-major); ``dimensions`` transposes first, as in JAX; ``out_sharding``
    lays the result out where the operand's splits cannot say how (JAX's).

    >>> lax.reshape(fnp.arange(6), (2, 3)).shape
    (2, 3)
    """
    if out_sharding is not None:
        from .products import out_sharding_call
        return out_sharding_call(lambda x: reshape(x, new_sizes, dimensions), (operand,),
                                 out_sharding, "reshape")
    if dimensions is not None:
        operand = transpose(operand, dimensions)
    new_sizes = tuple(map(as_dim, new_sizes))
    if get_aval(operand).shape == new_sizes:
        return _unchanged(operand)
    return P.reshape_p.bind1(operand, new_sizes=new_sizes)


def transpose(operand, permutation):
    """Permute dimensions.

    >>> lax.transpose(fnp.ones((2, 3)), (1, 0)).shape
    (3, 2)
    """
    permutation = tuple(map(operator.index, permutation))
    if permutation == tuple(range(len(permutation))) and len(permutation) == get_aval(operand).ndim:
        return _unchanged(operand)
    return P.transpose_p.bind1(operand, permutation=permutation)


def squeeze(array, dimensions):
    """Remove size-1 ``dimensions``.

    >>> lax.squeeze(fnp.ones((1, 3)), (0,)).shape
    (3,)
    """
    ndim = get_aval(array).ndim
    dims = tuple(sorted(_axis(d, ndim, "squeeze dimension") for d in dimensions))
    if not dims:
        return _unchanged(array)
    return P.squeeze_p.bind1(array, dimensions=dims)


def expand_dims(array, dimensions):
    """Insert size-1 dimensions at ``dimensions`` (positions in the result).

    >>> lax.expand_dims(fnp.ones(3), (0,)).shape
    (1, 3)
    """
    shape = list(get_aval(array).shape)
    out_ndim = len(shape) + len(dimensions)
    dims = sorted(_axis(d, out_ndim, "expand_dims dimension") for d in dimensions)
    for d in dims:
        shape.insert(d, 1)
    kept = [i for i in range(out_ndim) if i not in dims]
    return broadcast_in_dim(array, tuple(shape), tuple(kept))


def concatenate(operands, dimension):
    """Join arrays along ``dimension``.

    >>> lax.concatenate([fnp.ones(2), fnp.zeros(1)], 0)
    Array([1., 1., 0.], dtype=float64)
    """
    operands = match_weak(*operands, name="concatenate")
    if len(operands) == 1:
        return operands[0]
    return P.concatenate_p.bind1(*operands, dimension=operator.index(dimension))


def pad(operand, padding_value, padding_config):
    """Pad with ``padding_value``; ``padding_config`` is ``(low, high, interior)`` per dim.

    >>> lax.pad(fnp.ones(2), 0.0, [(1, 0, 1)])
    Array([0., 1., 0., 1.], dtype=float64)
    """
    operand, padding_value = match_weak(operand, padding_value, name="pad")
    config = tuple(tuple(map(as_dim, c)) for c in padding_config)
    return P.pad_p.bind1(operand, padding_value, padding_config=config)


def slice(operand, start_indices, limit_indices, strides=None):
    """Static slice ``operand[start:limit:stride]`` per dimension.

    >>> lax.slice(fnp.arange(5), (1,), (4,))
    Array([1, 2, 3], dtype=int64)
    """
    start = tuple(map(as_dim, start_indices))
    limit = tuple(map(as_dim, limit_indices))
    strides = None if strides is None else tuple(map(operator.index, strides))
    if strides is not None and all(s == 1 for s in strides):
        strides = None
    if start == (0,) * len(start) and limit == get_aval(operand).shape and strides is None:
        return operand
    return P.slice_p.bind1(operand, start_indices=start, limit_indices=limit, strides=strides)


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
    """``lax.slice`` along one axis (None bounds mean the ends).

    >>> lax.slice_in_dim(fnp.arange(6), 1, 5, 2)
    Array([1, 3], dtype=int64)
    """
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    start = [0] * len(shape)
    limit = list(shape)
    strides = [1] * len(shape)
    n = shape[axis]
    start[axis] = 0 if start_index is None else (start_index % n if start_index < 0 else start_index)
    limit[axis] = n if limit_index is None else (limit_index % n if limit_index < 0 else limit_index)
    strides[axis] = stride
    return slice(operand, start, limit, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
    """The slice at static ``index`` along ``axis``.

    >>> lax.index_in_dim(fnp.arange(6).reshape(2, 3), 1, axis=1, keepdims=False)
    Array([1, 4], dtype=int64)
    """
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    index = as_dim(index)
    if not -shape[axis] <= index < shape[axis]:
        raise IndexError(f"index {index} is out of bounds for axis {axis} with size {shape[axis]}")
    if index < 0:  # (index % size for an index in range; symbolic sizes have no constant mod)
        index = index + shape[axis]
    out = slice_in_dim(operand, index, index + 1, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def rev(operand, dimensions):
    """Reverse the order of elements along ``dimensions``.

    >>> lax.rev(fnp.arange(3), (0,))
    Array([2, 1, 0], dtype=int64)
    """
    dims = tuple(map(operator.index, dimensions))
    return _unchanged(operand) if not dims else P.rev_p.bind1(operand, dimensions=dims)


def _index_scalar(i):
    aval = get_aval(i)
    if aval.shape or dtypes.kind(aval.dtype) not in "iu":
        raise TypeError(f"dynamic indices must be integer scalars, got {aval.str_short()}")
    if type(i) is int:
        return np.asarray(i, dtypes.default_int_dtype())[()]
    return i


def dynamic_slice(operand, start_indices, slice_sizes):
    """Slice of static size ``slice_sizes`` at traced ``start_indices`` (clamped into range).

    >>> lax.dynamic_slice(fnp.arange(5), (fnp.array(3),), (2,))
    Array([3, 4], dtype=int64)
    """
    starts = [_index_scalar(i) for i in start_indices]
    sizes = tuple(map(as_dim, slice_sizes))
    return P.dynamic_slice_p.bind1(operand, *starts, slice_sizes=sizes)


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0):
    """``dynamic_slice`` along one axis: ``slice_size`` elements from the traced ``start_index``.

    >>> lax.dynamic_slice_in_dim(fnp.arange(5), fnp.array(1), 3)
    Array([1, 2, 3], dtype=int64)
    """
    shape = get_aval(operand).shape
    axis = _axis(axis, len(shape))
    starts = [0] * len(shape)
    starts[axis] = start_index
    sizes = list(shape)
    sizes[axis] = slice_size
    return dynamic_slice(operand, starts, sizes)


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True):
    """The slice at the traced ``index`` along ``axis`` (clamped into range).

    >>> lax.dynamic_index_in_dim(fnp.arange(5), fnp.array(2), keepdims=False)
    Array(2, dtype=int64)
    """
    out = dynamic_slice_in_dim(operand, index, 1, axis)
    return out if keepdims else squeeze(out, (axis,))


def dynamic_update_slice(operand, update, start_indices):
    """``operand`` with ``update`` written at traced ``start_indices`` (clamped).

    >>> lax.dynamic_update_slice(fnp.zeros(4), fnp.ones(2), (fnp.array(1),))
    Array([0., 1., 1., 0.], dtype=float64)
    """
    operand, update = match_weak(operand, update, name="dynamic_update_slice")
    starts = [_index_scalar(i) for i in start_indices]
    return P.dynamic_update_slice_p.bind1(operand, update, *starts)


def dynamic_update_slice_in_dim(operand, update, start_index, axis):
    """``dynamic_update_slice`` along one axis.

    >>> lax.dynamic_update_slice_in_dim(fnp.zeros(4), fnp.ones(2), fnp.array(3), 0)
    Array([0., 0., 1., 1.], dtype=float64)
    """
    ndim = get_aval(operand).ndim
    axis = _axis(axis, ndim)
    starts = [0] * ndim
    starts[axis] = start_index
    return dynamic_update_slice(operand, update, starts)


def dynamic_update_index_in_dim(operand, update, index, axis):
    """``update`` written as the slice at the traced ``index`` along ``axis``.

    >>> lax.dynamic_update_index_in_dim(fnp.zeros((2, 2)), fnp.ones(2), fnp.array(1), 0)
    Array([[0., 0.],
           [1., 1.]], dtype=float64)
    """
    ndim = get_aval(operand).ndim
    axis = _axis(axis, ndim)
    if get_aval(update).ndim == ndim - 1:
        update = expand_dims(update, (axis,))
    return dynamic_update_slice_in_dim(operand, update, index, axis)


def iota(dtype, size):
    """``[0, 1, ..., size-1]`` of ``dtype``.

    >>> lax.iota('int32', 4)
    Array([0, 1, 2, 3], dtype=int32)
    """
    return broadcasted_iota(dtype, (size,), 0)


def broadcasted_iota(dtype, shape, dimension):
    """An array of ``shape`` counting along ``dimension``.

    >>> lax.broadcasted_iota('int32', (2, 3), 1)
    Array([[0, 1, 2],
           [0, 1, 2]], dtype=int32)
    """
    dtype = dtypes.canonicalize_dtype(dtype, what="iota")
    shape = tuple(map(as_dim, shape))
    return P.iota_p.bind1(dtype=dtype, shape=shape, dimension=_axis(dimension, len(shape)))


def full(shape, fill_value, dtype=None):
    """An array of ``shape`` filled with ``fill_value``.

    >>> lax.full((2,), 7, "int32")
    Array([7, 7], dtype=int32)
    """
    shape = (as_dim(shape),) if np.ndim(shape) == 0 else tuple(map(as_dim, shape))
    aval = get_aval(fill_value)
    if aval.shape:
        raise TypeError(f"full: fill_value must be a scalar, got {aval.str_short()}")
    if dtype is not None:
        fill_value = convert_element_type(fill_value, dtype)
    elif type(fill_value) in _PY_SCALAR_TYPES:
        fill_value = np.asarray(fill_value, aval.dtype)[()]
    return broadcast_in_dim(fill_value, shape, ())


def full_like(x, fill_value, dtype=None, shape=None):
    """An array with ``x``'s shape and dtype (or the given ones) filled with ``fill_value``.

    >>> lax.full_like(fnp.ones(2, 'int8'), 5)
    Array([5, 5], dtype=int8)
    """
    aval = get_aval(x)
    return full(aval.shape if shape is None else shape, fill_value,
                aval.dtype if dtype is None else dtype)


def zeros_like_array(x):
    """Zeros with ``x``'s shape and dtype.

    >>> lax.zeros_like_array(fnp.ones(2))
    Array([0., 0.], dtype=float64)
    """
    return full_like(x, 0)


def collapse(operand, start_dimension, stop_dimension=None):
    """Merge dimensions ``start..stop-1`` into one.

    >>> lax.collapse(fnp.ones((2, 3, 4)), 0, 2).shape
    (6, 4)
    """
    shape = get_aval(operand).shape
    stop = len(shape) if stop_dimension is None else stop_dimension
    new = shape[:start_dimension] + (math.prod(shape[start_dimension:stop]),) + shape[stop:]
    return reshape(operand, new)


# ---- reductions ------------------------------------------------------------------------------------------
def _reducer(prim):
    def fn(operand, axes):
        ndim = get_aval(operand).ndim
        return prim.bind1(operand, axes=tuple(sorted(_axis(a, ndim) for a in axes)))
    fn.__name__ = prim.name
    fn.__doc__ = (f"``{prim.name}`` over ``axes``.\n\n"
                  f"    >>> lax.{prim.name}(fnp.ones((2, 3), 'int32'), (0,))  # doctest: +SKIP\n")
    return fn


reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and, reduce_or = map(
    _reducer, (P.reduce_sum_p, P.reduce_prod_p, P.reduce_max_p, P.reduce_min_p, P.reduce_and_p,
               P.reduce_or_p))


def argmax(operand, axis, index_dtype):
    """Index of the maximum along ``axis`` (first one on ties; NaN counts as the maximum).

    >>> lax.argmax(fnp.array([1.0, 3.0, 3.0]), 0, 'int32')
    Array(1, dtype=int32)
    """
    ndim = get_aval(operand).ndim
    return P.argmax_p.bind1(operand, axes=(_axis(axis, ndim),),
                            index_dtype=dtypes.canonicalize_dtype(index_dtype))


def argmin(operand, axis, index_dtype):
    """Index of the minimum along ``axis`` (first one on ties; NaN counts as the minimum).

    >>> lax.argmin(fnp.array([2.0, 1.0, 1.0]), 0, 'int32')
    Array(1, dtype=int32)
    """
    ndim = get_aval(operand).ndim
    return P.argmin_p.bind1(operand, axes=(_axis(axis, ndim),),
                            index_dtype=dtypes.canonicalize_dtype(index_dtype))


def _cumulative(prim):
    def fn(operand, axis=0, reverse=False):
        ndim = get_aval(operand).ndim
        return prim.bind1(operand, axis=_axis(axis, ndim), reverse=bool(reverse))
    fn.__name__ = prim.name
    fn.__doc__ = (f"Cumulative ``{prim.name}`` along ``axis``.\n\n"
                  f"    >>> lax.{prim.name}(fnp.array([1.0, 2.0, 3.0]))  # doctest: +SKIP\n")
    return fn


cumsum, cumprod, cummax, cummin, cumlogsumexp = map(
    _cumulative, (P.cumsum_p, P.cumprod_p, P.cummax_p, P.cummin_p, P.cumlogsumexp_p))


real, imag = map(_unary, (P.real_p, P.imag_p))


def conj(x):
    """Complex conjugate; a real operand is first converted to complex, as in JAX.

    >>> lax.conj(fnp.array([1 + 2j]))
    Array([1.-2.j], dtype=complex128)
    """
    d = get_aval(x).dtype
    if dtypes.kind(d) != "c":
        x = convert_element_type(x, dtypes.complex_dtype(d if dtypes.kind(d) == "f" else
                                                         dtypes.default_float_dtype()))
    return P.conj_p.bind1(x)


def complex(x, y):
    """``x + 1j * y`` from float parts of one dtype (float32 -> complex64, float64 ->
    complex128).

    >>> lax.complex(fnp.array([1.0]), fnp.array([2.0]))
    Array([1.+2.j], dtype=complex128)
    """
    return P.complex_p.bind1(*match_weak(x, y, name="complex"))


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


__all__ = [n for n, v in list(globals().items())
           if not n.startswith("_") and getattr(v, "__module__", None) == __name__
           and n not in ("match_weak", "is_tracer")]
