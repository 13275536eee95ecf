"""Elementwise functions of functrans.numpy (ufuncs.py) against NumPy: values, shapes and dtypes,
eagerly and traced, for every dtype (pair) NumPy accepts, with Python scalars as weak operands.

Tolerances, in units of the result dtype's machine epsilon (``ulps``), are exact (0) unless
the function is a composite formula rather than the NumPy kernel itself:

* 0 ulps: the primitive runs NumPy's own kernel on the same dtype (sin, add, power, ...), or
  the composite reproduces NumPy's algorithm operation by operation (floor_divide/remainder
  follow npy_divmod, ldexp rounds once like C's ldexp, comparisons and integer ops are exact).
* log2/log10 = log(x) / log(base): float16/float32 are evaluated in float64 and rounded once
  (correctly rounded up to a double rounding), NumPy's own loops are accurate to ~1 ulp, so
  2 ulps; in float64 the log, the constant and the division each round: 3 ulps.
* power with a static Python int exponent n is integer_pow (repeated multiplication, as in
  JAX): |n| + 1 ulps; float16 is computed in float32 as NumPy does.
* float_power: NumPy runs libm's pow for it but a SIMD pow for ``power`` (which the pow
  primitive uses); the two differ by up to 1 ulp.
* deg2rad/rad2deg and friends multiply by a rounded constant whose rounding may differ from
  NumPy's by half an ulp: 1 ulp.
* hypot: float16/float32 via float64 squares (1 ulp, as NumPy's libm); float64 scales by the
  larger operand (sqrt, division, product each round): 3 ulps.
* logaddexp/logaddexp2 = max + log1p(exp(-|x - y|)): the result can cancel (max < 0 <
  result), so the error is absolute, relative to the operands: 4 eps * max(|x|, |y|, 1).
* maximum/minimum/fmax/fmin compare signed zeros as equal: NumPy's own sign of the result for
  (0.0, -0.0) depends on its SIMD code path and array length.
"""
from __future__ import annotations

import itertools
import warnings
from typing import Callable, NamedTuple

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import testing as T
from functrans.numpy import ufuncs


class Spec(NamedTuple):
    oracle: Callable
    ulps: float = 0
    atol: Callable | None = None  # f(*numpy_args) -> absolute tolerance in units of eps
    signed_zeros: bool = True
    # Per-argument filter of test values the function is not defined on (kind -> predicate).
    valid: Callable | None = None


def _logaddexp_atol(x, y):
    # An infinite operand gives an exact (or infinite) result: it does not scale the error.
    mag = [np.where(np.isinf(v), 0, np.abs(v)) for v in (x, y)]
    return 4 * np.maximum(np.maximum(*mag), 1)


def _nonneg_int_exponent(i, values):
    # NumPy raises for negative integer powers of integer arrays (traced code cannot raise on
    # values), so the table only feeds it non-negative integer exponents.
    return values[values >= 0] if i == 1 and values.dtype.kind in "iu" else values


def _no_int_zero(i, values):
    # 1 / 0 in integer arithmetic is C undefined behaviour; NumPy's result is platform noise.
    return values[values != 0] if values.dtype.kind in "iu" else values


def _static_exponent_ulps(size, args):
    # A static Python int exponent becomes integer_pow (JAX's convention: exact for integers,
    # clean derivatives): |n| - 1 multiplications plus a reciprocal for n < 0, each rounding,
    # where NumPy's pow rounds once. Other exponents run NumPy's own pow: exact.
    x, y = args
    return abs(y) + 1 if type(y) is int and not isinstance(x, (bool, int, float)) else 0


UNARY = {
    "negative": Spec(np.negative), "positive": Spec(np.positive),
    "absolute": Spec(np.absolute), "abs": Spec(np.absolute), "fabs": Spec(np.fabs),
    "sign": Spec(np.sign), "sqrt": Spec(np.sqrt), "cbrt": Spec(np.cbrt),
    "square": Spec(np.square), "reciprocal": Spec(np.reciprocal, valid=_no_int_zero),
    "exp": Spec(np.exp), "exp2": Spec(np.exp2), "expm1": Spec(np.expm1), "log": Spec(np.log),
    "log2": Spec(np.log2, lambda size, args: 3 if size == 8 else 2),
    "log10": Spec(np.log10, lambda size, args: 3 if size == 8 else 2),
    "log1p": Spec(np.log1p), "sin": Spec(np.sin), "cos": Spec(np.cos), "tan": Spec(np.tan),
    "arcsin": Spec(np.arcsin), "arccos": Spec(np.arccos), "arctan": Spec(np.arctan),
    "asin": Spec(np.arcsin), "acos": Spec(np.arccos), "atan": Spec(np.arctan),
    "sinh": Spec(np.sinh), "cosh": Spec(np.cosh), "tanh": Spec(np.tanh),
    "arcsinh": Spec(np.arcsinh), "arccosh": Spec(np.arccosh), "arctanh": Spec(np.arctanh),
    "asinh": Spec(np.arcsinh), "acosh": Spec(np.arccosh), "atanh": Spec(np.arctanh),
    "floor": Spec(np.floor), "ceil": Spec(np.ceil), "trunc": Spec(np.trunc),
    "fix": Spec(np.fix), "rint": Spec(np.rint), "isnan": Spec(np.isnan),
    "isinf": Spec(np.isinf), "isfinite": Spec(np.isfinite), "signbit": Spec(np.signbit),
    "logical_not": Spec(np.logical_not), "invert": Spec(np.invert),
    "bitwise_not": Spec(np.bitwise_not), "bitwise_invert": Spec(np.bitwise_invert),
    "deg2rad": Spec(np.deg2rad, 1), "radians": Spec(np.radians, 1),
    "rad2deg": Spec(np.rad2deg, 1), "degrees": Spec(np.degrees, 1),
    "conjugate": Spec(np.conjugate), "conj": Spec(np.conj), "modf": Spec(np.modf),
    "bitwise_count": Spec(np.bitwise_count),
}

BINARY = {
    "add": Spec(np.add), "subtract": Spec(np.subtract), "multiply": Spec(np.multiply),
    "divide": Spec(np.divide), "true_divide": Spec(np.true_divide),
    "floor_divide": Spec(np.floor_divide), "remainder": Spec(np.remainder),
    "mod": Spec(np.mod), "fmod": Spec(np.fmod), "divmod": Spec(np.divmod),
    "maximum": Spec(np.maximum, signed_zeros=False),
    "minimum": Spec(np.minimum, signed_zeros=False),
    "fmax": Spec(np.fmax, signed_zeros=False), "fmin": Spec(np.fmin, signed_zeros=False),
    "arctan2": Spec(np.arctan2), "atan2": Spec(np.arctan2),
    "hypot": Spec(np.hypot, lambda size, args: 3 if size == 8 else 1),
    "logaddexp": Spec(np.logaddexp, atol=_logaddexp_atol),
    "logaddexp2": Spec(np.logaddexp2, atol=_logaddexp_atol),
    "copysign": Spec(np.copysign), "nextafter": Spec(np.nextafter),
    "heaviside": Spec(np.heaviside), "ldexp": Spec(np.ldexp),
    "power": Spec(np.power, _static_exponent_ulps, valid=_nonneg_int_exponent),
    "pow": Spec(np.power, _static_exponent_ulps, valid=_nonneg_int_exponent),
    "float_power": Spec(np.float_power, 1),
    "equal": Spec(np.equal), "not_equal": Spec(np.not_equal), "less": Spec(np.less),
    "less_equal": Spec(np.less_equal), "greater": Spec(np.greater),
    "greater_equal": Spec(np.greater_equal), "logical_and": Spec(np.logical_and),
    "logical_or": Spec(np.logical_or), "logical_xor": Spec(np.logical_xor),
    "bitwise_and": Spec(np.bitwise_and), "bitwise_or": Spec(np.bitwise_or),
    "bitwise_xor": Spec(np.bitwise_xor), "left_shift": Spec(np.left_shift),
    "right_shift": Spec(np.right_shift), "bitwise_left_shift": Spec(np.left_shift),
    "bitwise_right_shift": Spec(np.right_shift),
}


def test_every_ufunc_is_in_the_tables():
    assert sorted(UNARY.keys() | BINARY.keys()) == sorted(ufuncs.__all__)


def _ulps(spec, out_dtype, args):
    u = spec.ulps
    return u(out_dtype.itemsize, args) if callable(u) else u


def _out_dtype(spec, args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        r = spec.oracle(*args)
    return np.asarray(r[0] if isinstance(r, tuple) else r).dtype


def check(name, spec, *args):
    """fnp.<name> matches NumPy on ``args``, including the errors NumPy raises."""
    fn = getattr(fnp, name)
    if T.raises_like(fn, spec.oracle, *args):
        return
    out_dtype = _out_dtype(spec, args)
    atol = 0
    if spec.atol is not None and out_dtype.kind == "f":
        atol = spec.atol(*[np.asarray(a, np.float64) for a in args]) * T.eps(out_dtype)
    T.check_against(fn, spec.oracle, *args, ulps=_ulps(spec, out_dtype, args), atol=atol,
                    signed_zeros=spec.signed_zeros)


# ---- exhaustive dtype sweep with boundary values --------------------------------------------------
def _sample_values(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    if dtype.kind == "f":
        return np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 0.5, -1.5, 2.5, 1e-3, -7.25, 100.0,
                         1.0, -1.0, 3.0, 0.7, 20.0], dtype)
    info = np.iinfo(dtype)
    vals = [info.min, info.max, 0, 1, 2, 3, 7, 100, info.max - 1]
    if dtype.kind == "i":
        vals += [-1, -2, -7, -100, info.min + 1]
    return np.array(vals, dtype)


def _valid(spec, i, values):
    return spec.valid(i, values) if spec.valid else values


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_every_dtype(name):
    spec = UNARY[name]
    for dt in T.ALL_DTYPES:
        check(name, spec, _valid(spec, 0, _sample_values(dt)))
    for scalar in (True, 3, -3, 2.5, -0.0):
        check(name, spec, scalar)


# Mixed pairs are checked eagerly for all 144 dtype pairs; tracing is exercised by the
# same-dtype pairs here and by the hypothesis tests below.
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_every_dtype_pair(name):
    spec = BINARY[name]
    for d1, d2 in itertools.product(T.ALL_DTYPES, repeat=2):
        x = _valid(spec, 0, _sample_values(d1))[:, None]
        y = _valid(spec, 1, _sample_values(d2))[None, :]
        check(name, spec, x, y)
    for dt, scalar in itertools.product(T.ALL_DTYPES, (True, 3, -3, 2.5, -0.0)):
        check(name, spec, _valid(spec, 0, _sample_values(dt)), scalar)
        check(name, spec, scalar, _valid(spec, 1, _sample_values(dt)))
    check(name, spec, 3, 2.5)


# ---- hypothesis: shapes (broadcasting, empty, rank-0), dtypes and values ---------------------------
@st.composite
def _operands(draw, spec, nin):
    shapes = draw(T.broadcastable_shapes(nin))
    out = []
    for i, shape in enumerate(shapes):
        if draw(st.integers(0, 5)) == 0:  # a weak Python scalar now and then
            kind = draw(st.sampled_from("bif"))
            v = draw(T.python_scalars(kind))
            if spec.valid is not None and not _valid(spec, i, np.array([v])).size:
                v = type(v)(1)
            out.append(v)
            continue
        dt = draw(T.all_dtypes())
        a = draw(T.arrays(dt, shape, specials=True))
        if spec.valid is not None:
            keep = np.isin(a, _valid(spec, i, a.ravel()))
            a = np.where(keep, a, np.ones_like(a))
        out.append(a)
    return out


@pytest.mark.parametrize("name", sorted(UNARY))
@given(data=st.data())
def test_unary_hypothesis(name, data):
    spec = UNARY[name]
    check(name, spec, *data.draw(_operands(spec, 1)))


@pytest.mark.parametrize("name", sorted(BINARY))
@given(data=st.data())
def test_binary_hypothesis(name, data):
    spec = BINARY[name]
    check(name, spec, *data.draw(_operands(spec, 2)))


# ---- keyword arguments and special paths -----------------------------------------------------------
@pytest.mark.parametrize("name,dtype", [("add", "float32"), ("multiply", "int16"),
                                        ("sin", "float64"), ("subtract", "float64"),
                                        ("floor_divide", "float32"), ("equal", "int64")])
def test_dtype_keyword_selects_the_loop(name, dtype):
    # dtype= is NumPy's loop signature: int8 + int8 with dtype=float32 adds in float32.
    np_fn = getattr(np, name)
    args = [np.array([100, -100, 7], np.int8)] * np_fn.nin
    try:
        np_fn(*args, dtype=dtype)
    except TypeError:
        with pytest.raises(TypeError, match=f"fnp.{name}"):
            getattr(fnp, name)(*args, dtype=dtype)
        return
    T.check_against(lambda *a: getattr(fnp, name)(*a, dtype=dtype),
                    lambda *a: np_fn(*a, dtype=dtype), *args)


def test_dtype_keyword_rejects_unsafe_casts():
    with pytest.raises(TypeError, match="fnp.add"):
        fnp.add(np.array([1.5]), np.array([2.5]), dtype="int32")


@given(T.arrays(T.numeric_dtypes(), T.shapes()), st.integers(-3, 6))
def test_power_static_exponent_is_integer_pow(x, n):
    if x.dtype.kind == "i" and n < 0:
        # NumPy checks the exponent per element (so not at all for empty arrays); a static
        # exponent is checked once, whatever the array.
        with pytest.raises(ValueError, match="negative integer powers"):
            fnp.power(x, n)
        return
    if T.raises_like(lambda a: fnp.power(a, n), lambda a: np.power(a, n), x):
        return
    # integer_pow multiplies repeatedly (|n| roundings, plus one for the reciprocal) where
    # NumPy's pow rounds once; float16 results may also underflow differently near tiny.
    ulps = abs(n) + 1 if x.dtype.kind == "f" else 0
    T.check_against(lambda a: fnp.power(a, n), lambda a: np.power(a, n), x, ulps=ulps,
                    atol=np.finfo(x.dtype).smallest_subnormal * 2 if x.dtype.kind == "f" else 0)
    jaxpr = ft.make_jaxpr(lambda a: fnp.power(a, n))(x)
    assert "integer_pow" in str(jaxpr)


def test_power_static_negative_exponent():
    with pytest.raises(ValueError, match="negative integer powers"):
        fnp.power(np.arange(3), -1)
    T.check_against(lambda a: fnp.power(a, -2), lambda a: np.power(a, -2), np.array([2.0, 4.0]))


def test_power_keeps_a_scalar_exponent_a_scalar_operand():
    # JAX's jaxpr of x ** 3.5 is `pow a 3.5:f32[]`: programs that invert jaxprs equation by
    # equation (distrax's Lambda bijector) need the exponent as the literal operand.
    x = np.array([0.5, 1.5, 2.0], np.float32)
    jaxpr = ft.make_jaxpr(lambda a: a ** 3.5)(x)
    assert [e.prim.name for e in jaxpr.eqns] == ["pow"]
    assert jaxpr.eqns[0].inputs[1].aval.shape == ()
    T.check_against(lambda a: fnp.power(a, 3.5), lambda a: np.power(a, 3.5), x)  # one pow
    # integer and boolean bases still broadcast a rank-0 exponent (int_power selects)
    for base, e in ((np.array([1, 2, 3]), np.array(3)), (np.array([True, False]),
                                                          np.array(False))):
        np.testing.assert_array_equal(fnp.power(base, e), np.power(base, e))


def test_python_int_operands_wrap_into_integer_dtypes_as_in_jax():
    u32 = np.array([1, 2], np.uint32)
    # NumPy's semantics by default: the scalar must fit the array's dtype
    with pytest.raises(OverflowError, match="-1 out of bounds for uint32"):
        fnp.multiply(u32, -1)
    np.testing.assert_array_equal(fnp.less(u32, -1), np.less(u32, -1))  # by value: all False
    # JAX 0.10.2's values (x64 off): the int becomes int32, then wraps into the dtype
    with ft.config.override(python_int_wraparound=True, enable_x64=False):
        cases = [(lambda: fnp.multiply(u32, -1), [2**32 - 1, 2**32 - 2], np.uint32),
                 (lambda: fnp.asarray(np.array([1], np.uint8)) * 300, [44], np.uint8),
                 (lambda: fnp.add(np.array([1], np.int8), 200), [-55], np.int8),
                 (lambda: fnp.add(u32, -2**31), [2**31 + 1, 2**31 + 2], np.uint32),
                 (lambda: fnp.less(u32, -1), [True, True], np.bool_),
                 (lambda: fnp.equal(u32, -1), [False, False], np.bool_),
                 (lambda: fnp.full((2,), -1, np.uint32), [2**32 - 1] * 2, np.uint32),
                 (lambda: fnp.full((1,), 2**33, np.uint32), [0], np.uint32),
                 (lambda: ft.jit(lambda a: a * -1)(u32), [2**32 - 1, 2**32 - 2], np.uint32)]
        for f, want, dtype in cases:
            got = f()
            assert got.dtype == dtype and not got.weak_type
            np.testing.assert_array_equal(got, np.array(want, dtype))
        # beyond int32 JAX raises, whatever the array's dtype
        for big in (2**31, -2**31 - 1):
            for arr in (u32, np.ones(1, np.float32)):
                with pytest.raises(OverflowError, match=f"{big} out of bounds for int32"):
                    fnp.multiply(arr, big)
    with ft.config.override(python_int_wraparound=True, enable_x64=True):
        np.testing.assert_array_equal(fnp.multiply(u32, 2**33), [0, 0])  # int64 first
        np.testing.assert_array_equal(fnp.multiply(np.array([1], np.uint64), -1), [2**64 - 1])


def test_where_and_out_are_refused_clearly():
    with pytest.raises(NotImplementedError, match="fnp.where"):
        fnp.add(np.ones(2), np.ones(2), where=np.array([True, False]))
    with pytest.raises(NotImplementedError, match="out="):
        fnp.sin(np.ones(2), out=np.ones(2))


# ---- clear errors ---------------------------------------------------------------------------------
def test_broadcast_error_names_shapes():
    with pytest.raises(ValueError, match=r"fnp.add.*\(2, 3\) \(4,\)"):
        fnp.add(np.ones((2, 3)), np.ones(4))


@pytest.mark.parametrize("bad", [np.array(["a", "b"]), np.array([1 + 2j], np.clongdouble),
                                 np.array([object(), 1], dtype=object), "text"])
def test_unsupported_dtypes_are_rejected(bad):
    with pytest.raises(TypeError, match="dtype|convert|complex|supported"):
        fnp.sin(bad)


def test_wrong_arity_is_a_type_error():
    with pytest.raises(TypeError, match="fnp.add takes 2"):
        fnp.add(np.ones(2))


def test_numpy_type_errors_name_the_function_and_dtypes():
    with pytest.raises(TypeError, match=r"fnp.bitwise_and.*float64"):
        fnp.bitwise_and(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match=r"fnp.subtract.*bool"):
        fnp.subtract(np.array([True]), np.array([False]))


def test_python_int_out_of_range_overflows_like_numpy():
    with pytest.raises(OverflowError):
        fnp.add(np.ones(2, np.uint8), -1)
    with pytest.raises(OverflowError):
        fnp.multiply(np.ones(2, np.int8), 1000)
