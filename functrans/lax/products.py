"""What products share: their precision (``lax.Precision``, ``lax.DotAlgorithmPreset``),
the dtype rules of ``preferred_element_type`` and mixed operands, and ``dot_general``'s
dimension checks; used by ``lax.dot_general``, the convolutions and ``functrans.numpy``'s
products.

On CPU, float32 and float64 products are always computed at their full precision, so a
``Precision`` changes no result: it is validated and accepted as JAX accepts it. A
``DotAlgorithmPreset`` names the dtype the product is computed in, and does change
results (``F32_F32_F32`` on float64 operands rounds them to float32)::

    >>> lax.Precision("highest"), str(lax.Precision.HIGH)
    (Precision.HIGHEST, 'HIGH')
"""
from __future__ import annotations

import enum
import operator

import numpy as np

from .. import primitives as P
from ..core import dtypes
from ..core.trace import get_aval

__all__ = ["Precision", "DotAlgorithmPreset", "dot_general", "dot", "batch_matmul"]


class Precision(enum.Enum):
    """How precisely a backend computes products of float32 values (accelerators may use
    bfloat16 passes): ``DEFAULT`` (fastest), ``HIGH``, ``HIGHEST`` (full float32).

    Also made from JAX's strings: ``'default'``/``'bfloat16'``/``'fastest'``,
    ``'high'``/``'tensorfloat32'``/``'bfloat16_3x'``, ``'highest'``/``'float32'``.

    >>> lax.Precision("tensorfloat32"), lax.Precision(None)
    (Precision.HIGH, Precision.DEFAULT)
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        if value is None:
            return cls.DEFAULT
        return _PRECISION_STRINGS.get(value) if isinstance(value, str) else None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


_PRECISION_STRINGS = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
}


class DotAlgorithmPreset(enum.Enum):
    """Named algorithms for products: ``<lhs>_<rhs>_<accumulation>`` storage types.

    functrans computes ``DEFAULT`` as usual and ``F16_F16_F16``, ``F32_F32_F32`` and
    ``F64_F64_F64`` with both operands rounded to that type (the result keeps the
    operands' dtype); presets that need bfloat16, tensorfloat32 or float8 arithmetic raise
    ``NotImplementedError``.

    >>> x = fnp.array([1.1])
    >>> float(lax.dot(x, x, precision=lax.DotAlgorithmPreset.F32_F32_F32)) == float(
    ...     np.float32(1.1) * np.float32(1.1))
    True
    """

    DEFAULT = 1
    ANY_F8_ANY_F8_F32 = 2
    ANY_F8_ANY_F8_F32_FAST_ACCUM = 3
    ANY_F8_ANY_F8_ANY = 4
    ANY_F8_ANY_F8_ANY_FAST_ACCUM = 5
    F16_F16_F16 = 6
    F16_F16_F32 = 7
    BF16_BF16_BF16 = 8
    BF16_BF16_F32 = 9
    BF16_BF16_F32_X3 = 10
    BF16_BF16_F32_X6 = 11
    BF16_BF16_F32_X9 = 12
    TF32_TF32_F32 = 13
    TF32_TF32_F32_X3 = 14
    F32_F32_F32 = 15
    F64_F64_F64 = 16

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


_PRESET_DTYPES = {DotAlgorithmPreset.F16_F16_F16: np.dtype(np.float16),
                  DotAlgorithmPreset.F32_F32_F32: np.dtype(np.float32),
                  DotAlgorithmPreset.F64_F64_F64: np.dtype(np.float64)}


def _bad_precision(precision):
    return ValueError(
        "Precision argument must be one of:\n"
        "- None,\n"
        f"- a string in {list(_PRECISION_STRINGS)},\n"
        "- a lax.Precision value,\n"
        "- a tuple of two lax.Precision values or strings,\n"
        "- a lax.DotAlgorithmPreset or the name of one of these presets;\n"
        f"but got {precision}.")


def canonicalize_precision(precision):
    """``None``, a pair of :class:`Precision` (lhs, rhs), or a :class:`DotAlgorithmPreset`;
    anything else raises JAX's ValueError listing what is accepted.

    >>> canonicalize_precision("high")
    (Precision.HIGH, Precision.HIGH)
    """
    if precision is None:
        return None
    if isinstance(precision, str):
        if precision in _PRECISION_STRINGS:
            p = _PRECISION_STRINGS[precision]
            return p, p
        if precision in DotAlgorithmPreset.__members__:
            return DotAlgorithmPreset[precision]
    elif isinstance(precision, Precision):
        return precision, precision
    elif isinstance(precision, DotAlgorithmPreset):
        return precision
    elif isinstance(precision, (list, tuple)) and len(precision) == 2:
        if all(isinstance(p, Precision) for p in precision):
            return tuple(precision)
        if all(isinstance(p, str) and p in _PRECISION_STRINGS for p in precision):
            return tuple(_PRECISION_STRINGS[p] for p in precision)
    raise _bad_precision(precision)


def _bits(d: np.dtype) -> int:
    k = dtypes.kind(d)
    return 1 if k == "b" else 8 * (d.itemsize // 2 if k == "c" else d.itemsize)


def check_dot_preferred(result_dtype, preferred, precision) -> np.dtype:
    """The dtype a product returns: ``preferred`` if given, checked as JAX checks it (an
    integer or bool result may not narrow unless an algorithm preset is named).

    >>> check_dot_preferred(np.dtype("int8"), np.dtype("int32"), None)
    dtype('int32')
    """
    if preferred is None or preferred == result_dtype:
        return result_dtype
    if (not isinstance(precision, DotAlgorithmPreset) and dtypes.kind(result_dtype) != "f"
            and _bits(preferred) < _bits(result_dtype)):
        raise TypeError("`preferred_element_type` must not be narrower than the original "
                        f"type, got preferred_element_type of {preferred} for result type "
                        f"of {result_dtype}.")
    return preferred


def check_conv_preferred(input_dtype, preferred) -> None:
    """JAX's rules for a convolution's ``preferred_element_type``: same kind (integers may
    become floats), same signedness, never narrower.

    >>> check_conv_preferred(np.dtype("int8"), np.dtype("float32"))
    """
    if preferred is None:
        return
    i, p = dtypes.kind(input_dtype), dtypes.kind(preferred)
    if not (i in "iu" and p == "f"):
        groups = ("iu", "f", "c")
        if any(i in g and p not in g for g in groups):
            raise TypeError(
                "Input type is incompatible with `preferred_element_type`. The compatible "
                "combinations of (input_type, preferred_element_type) are (integral, "
                "integral), (integral, floating), (floating, floating), (complex, complex).")
        if i == "i" and p != "i":
            raise TypeError("`preferred_element_type` must have the same signedness as the "
                            "original type.")
    if preferred.itemsize < input_dtype.itemsize:
        raise TypeError("`preferred_element_type` must not be narrower than the original "
                        "type.")


def widens(in_dtype: np.dtype, out_dtype: np.dtype) -> bool:
    """Whether every operand value is exact in ``out_dtype``'s kind, so the product can be
    computed in ``out_dtype`` itself (int8 operands accumulated in int32, as JAX's
    preferred_element_type asks); otherwise it is computed in the operands' dtype and the
    result converted.

    >>> widens(np.dtype("int8"), np.dtype("int32")), widens(np.dtype("float32"), np.dtype("int32"))
    (True, False)
    """
    i, o = dtypes.kind(in_dtype), dtypes.kind(out_dtype)
    if i in "biu":
        return o in "biufc"
    if i == "f":
        return o in "fc" and _bits(out_dtype) >= _bits(in_dtype)
    return o == "c" and out_dtype.itemsize >= in_dtype.itemsize


def _cast(x, dtype):
    if get_aval(x).dtype == dtype:
        return x
    return P.convert_element_type_p.bind1(x, new_dtype=dtype, weak_type=False)


def bind_dot(lhs, rhs, dimension_numbers, precision, out_dtype):
    """``dot_general`` of two operands of one dtype, computed as ``precision`` (canonical)
    asks and returned in ``out_dtype``.

    >>> bind_dot(fnp.ones(2, "int8"), fnp.ones(2, "int8"), (((0,), (0,)), ((), ())), None,
    ...          np.dtype("float32"))
    Array(2., dtype=float32)
    """
    in_dtype = get_aval(lhs).dtype
    compute = out_dtype if widens(in_dtype, out_dtype) else in_dtype
    if isinstance(precision, DotAlgorithmPreset) and precision is not DotAlgorithmPreset.DEFAULT:
        if precision not in _PRESET_DTYPES:
            raise NotImplementedError(
                f"lax.DotAlgorithmPreset.{precision.name}: functrans has no bfloat16, "
                "tensorfloat32 or float8 arithmetic; use DEFAULT, F16_F16_F16, F32_F32_F32 or "
                "F64_F64_F64")
        if dtypes.kind(in_dtype) == "f":
            compute = _PRESET_DTYPES[precision]
    lhs, rhs = _cast(lhs, compute), _cast(rhs, compute)
    # The primitive's own precision stays None: CPU results never depend on a Precision,
    # and compiled programs (and their caches) should not differ by it either.
    out = P.dot_general_p.bind1(lhs, rhs, dimension_numbers=dimension_numbers, precision=None,
                                preferred_element_type=compute)
    return _cast(out, out_dtype)


def _type_properties(d: np.dtype):
    """What XLA ranks operand types by when a product mixes them: complex first, then
    exponent range, mantissa, width, signedness."""
    r = dtypes.real_dtype(d)
    f = dtypes.kind(r) == "f"
    return (dtypes.kind(d) == "c", np.finfo(r).maxexp if f else -1, np.finfo(r).nmant if f else -1,
            _bits(r), dtypes.kind(r) != "u")


def dot_result_dtype(lhs_dtype: np.dtype, rhs_dtype: np.dtype) -> np.dtype:
    """The dtype of a product of operands of two dtypes, as JAX's ``dot_general``: the more
    precise of the two (a complex one, else the wider exponent, mantissa, width, sign).

    >>> dot_result_dtype(np.dtype("int8"), np.dtype("float32"))
    dtype('float32')
    """
    if lhs_dtype == rhs_dtype:
        return lhs_dtype
    lp, rp = _type_properties(lhs_dtype), _type_properties(rhs_dtype)
    if lp == rp:
        raise TypeError(f"lax.dot_general argument type error: {lhs_dtype}, {rhs_dtype}")
    return lhs_dtype if lp > rp else rhs_dtype


def check_dot_dimensions(lhs_shape, rhs_shape, dimension_numbers) -> None:
    """JAX's TypeErrors for ``dot_general`` dimension numbers that do not fit the operands.

    >>> check_dot_dimensions((2, 3), (2, 3), (((1,), (0,)), ((), ())))
    Traceback (most recent call last):
    TypeError: dot_general requires contracting dimensions to have the same shape, got (3,) and (2,).
    """
    (lc, rc), (lb, rb) = dimension_numbers
    for side, shape, c, b in (("lhs", lhs_shape, lc, lb), ("rhs", rhs_shape, rc, rb)):
        if not all(0 <= d < len(shape) for d in tuple(c) + tuple(b)):
            raise TypeError(f"dot_general requires {side} dimension numbers to be nonnegative "
                            f"and less than the number of axes of the {side} value, got "
                            f"{side}_batch of {b} and {side}_contracting of {c} for {side} of "
                            f"rank {len(shape)}")
    if len(lb) != len(rb):
        raise TypeError("dot_general requires equal numbers of lhs_batch and rhs_batch "
                        f"dimensions, got lhs_batch {lb} and rhs_batch {rb}.")
    for side, c, b in (("lhs", lc, lb), ("rhs", rc, rb)):
        for what, dims in (("batch", b), ("contracting", c)):
            if len(set(dims)) != len(dims):
                raise TypeError(f"dot_general requires {side} {what} dimensions to be "
                                f"distinct, got {side}_{what} {dims}.")
        if set(c) & set(b):
            raise TypeError(f"dot_general requires {side} batch dimensions to be disjoint from "
                            f"contracting dimensions, got {side}_batch {b} and "
                            f"{side}_contracting {c}.")
    for what, ld, rd in (("lhs batch dimensions and rhs batch", lb, rb),
                         ("contracting", lc, rc)):
        ls, rs = tuple(lhs_shape[d] for d in ld), tuple(rhs_shape[d] for d in rd)
        if ls != rs:
            raise TypeError(f"dot_general requires {what} dimensions to have the same shape, "
                            f"got {ls} and {rs}.")


# ---- the products -------------------------------------------------------------------------------
def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
    """General tensor contraction; ``dimension_numbers = ((lhs_contract, rhs_contract),
    (lhs_batch, rhs_batch))``. Operands of different dtypes meet in the more precise one (as
    JAX); ``precision`` is a :class:`Precision`, a pair, a string or a
    :class:`DotAlgorithmPreset`; ``preferred_element_type`` is the result's dtype.

    >>> lax.dot_general(fnp.ones((2, 3)), fnp.ones((3,)), (((1,), (0,)), ((), ())))
    Array([3., 3.], dtype=float64)
    >>> lax.dot_general(fnp.ones(2, "int8"), fnp.ones(2, "int8"), (((0,), (0,)), ((), ())),
    ...                 preferred_element_type="int32")
    Array(2, dtype=int32)
    """
    if out_sharding is not None:
        return out_sharding_call(lambda a, b: dot_general(
            a, b, dimension_numbers, precision, preferred_element_type), (lhs, rhs),
            out_sharding, "dot_general")
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(map(operator.index, lc)), tuple(map(operator.index, rc))),
          (tuple(map(operator.index, lb)), tuple(map(operator.index, rb))))
    precision = canonicalize_precision(precision)
    la, ra = get_aval(lhs), get_aval(rhs)
    check_dot_dimensions(la.shape, ra.shape, dn)
    dtype = dot_result_dtype(la.dtype, ra.dtype)
    if preferred_element_type is not None:
        preferred_element_type = dtypes.canonicalize_dtype(
            preferred_element_type, what="dot_general preferred_element_type")
    out_dtype = check_dot_preferred(dtype, preferred_element_type, precision)
    lhs, rhs = _cast(lhs, dtype), _cast(rhs, dtype)
    return bind_dot(lhs, rhs, dn, precision, out_dtype)


def dot(lhs, rhs, precision=None, preferred_element_type=None, *, dimension_numbers=None,
        out_sharding=None):
    """Matrix/vector products of rank-1/2 arrays (lhs's last dim with rhs's first), or
    :func:`dot_general` when given ``dimension_numbers``.

    >>> lax.dot(fnp.ones((2, 3)), fnp.ones(3))
    Array([3., 3.], dtype=float64)
    """
    if dimension_numbers is None:
        ls, rs = np.shape(lhs), np.shape(rhs)
        if not (1 <= len(ls) <= 2 and 1 <= len(rs) <= 2 and ls[-1] == rs[0]):
            raise ValueError(
                "lax.dot: dimension_numbers must be specified when not performing simple "
                "un-batched matrix-matrix, matrix-vector, or vector-vector products; got "
                f"lhs_shape={ls} rhs_shape={rs}")
        dimension_numbers = (((len(ls) - 1,), (0,)), ((), ()))
    return dot_general(lhs, rhs, dimension_numbers, precision, preferred_element_type,
                       out_sharding=out_sharding)


def check_no_out_sharding(name, out_sharding):
    """JAX's ``out_sharding=`` where functrans accepts only what the result is (None, or no
    dimension split on the empty mesh: ``jax.typeof(x).sharding``).

    >>> check_no_out_sharding("conv", None)
    """
    from ..core.out_sharding import is_unsplit
    if not is_unsplit(out_sharding):
        raise NotImplementedError(f"lax.{name}: out_sharding={out_sharding!r} is not "
                                  "supported; place the result with functrans.device_put")


def out_sharding_call(fun, args, out_sharding, name):
    """``fun(*args)`` laid out as JAX's ``out_sharding=`` of ``name`` asks (None, or nothing
    split on the empty mesh, is what every result is already).

    >>> out_sharding_call(lambda a: a + 1, (fnp.ones(2),), None, "f")
    Array([2., 2.], dtype=float64)
    """
    from ..core.out_sharding import is_unsplit
    if is_unsplit(out_sharding):
        return fun(*args)
    from .sharding_ops import with_out_sharding
    return with_out_sharding(fun, args, out_sharding, name)


def batch_matmul(lhs, rhs, precision=None):
    """Batched matrix product of arrays of equal rank (>= 2): ``lhs[..., i, k] @
    rhs[..., k, j]``.

    >>> lax.batch_matmul(fnp.ones((4, 2, 3)), fnp.ones((4, 3, 5))).shape
    (4, 2, 5)
    """
    ls, rs = np.shape(lhs), np.shape(rhs)
    if len(ls) < 2 or len(rs) < 2:
        raise ValueError(f"Arguments to batch_matmul must be at least 2D, got {len(ls)}, "
                         f"{len(rs)}")
    if len(ls) != len(rs):
        raise ValueError(f"Arguments to batch_matmul must have same ndim, got {len(ls)}, "
                         f"{len(rs)}")
    batch = tuple(range(len(ls) - 2))
    return dot_general(lhs, rhs, (((len(ls) - 1,), (len(rs) - 2,)), (batch, batch)), precision)
