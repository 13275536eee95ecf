"""Conversion and promotion (_core.py) against NumPy: asarray/array on nested sequences,
scalars and arrays, dtype= and ndmin=, NEP 50 result types with weak Python scalars, and the
errors for values functrans cannot hold (object, strings, complex, ragged nesting).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import testing as T


@st.composite
def _nested(draw):
    kind = draw(st.sampled_from([st.booleans(), st.integers(-1000, 1000),
                                 st.floats(-1e3, 1e3, allow_nan=False)]))
    shape = draw(T.shapes(max_dims=3, max_side=3))
    flat = draw(st.lists(kind, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    value = np.array(flat, dtype=object).reshape(shape).tolist() if shape else flat[0]
    return value


@given(_nested(), st.one_of(st.none(), T.all_dtypes()), st.integers(0, 4))
def test_array_from_python_values(value, dtype, ndmin):
    if dtype is not None and dtype.kind in "iu" and not isinstance(value, list) and \
            isinstance(value, float):
        dtype = None  # float -> int of a Python scalar truncates: not what this test is about
    if T.raises_like(lambda v: fnp.array(v, dtype, ndmin=ndmin),
                     lambda v: np.array(v, dtype, ndmin=ndmin), value):
        return
    with np.errstate(all="ignore"):
        want = np.array(value, dtype, ndmin=ndmin)
    T.assert_close(fnp.array(value, dtype, ndmin=ndmin), want)
    T.assert_close(fnp.asarray(value, dtype), np.asarray(value, dtype))


@given(T.arrays(T.all_dtypes(), T.shapes()), st.one_of(st.none(), T.all_dtypes()))
def test_asarray_of_arrays(x, dtype):
    if dtype is not None and x.dtype.kind == "f" and dtype.kind in "iu":
        return  # float -> int of nan/out-of-range values is undefined
    T.check_against(lambda a: fnp.asarray(a, dtype), lambda a: np.asarray(a, dtype), x)


def test_sequences_of_arrays_and_tracers_stack():
    a, b = np.array([1, 2], np.int8), np.array([3, 4], np.int8)
    T.check_against(lambda p, q: fnp.array([p, q]), lambda p, q: np.array([p, q]), a, b)
    # NumPy's array coercion makes Python scalars in sequences strong (int64), even next to
    # int8 arrays; the eager call sees an Array, the traced one a tracer.
    T.check_against(lambda p: fnp.array([p, 3]), lambda p: np.array([p, 3]),
                    fnp.asarray(np.array(1, np.int8)))
    T.check_against(lambda p: fnp.array([[p, 2.5]]), lambda p: np.array([[p, 2.5]]),
                    fnp.asarray(np.array(1, np.float32)))
    jaxpr = ft.make_jaxpr(lambda p, q: fnp.array([[p, q], [q, p]]))(1.0, 2.0)
    assert jaxpr.out_avals[0].shape == (2, 2)


@given(st.lists(st.one_of(T.all_dtypes(), st.sampled_from([True, 7, -7, 2.5, 300, -1])),
                min_size=1, max_size=4))
def test_result_type_matches_nep50(args):
    operands = [np.zeros(2, a) if isinstance(a, np.dtype) else a for a in args]
    if T.raises_like(fnp.result_type, np.result_type, *operands):
        return
    assert fnp.result_type(*operands) == np.result_type(*operands)


# ---- values functrans cannot hold --------------------------------------------------------------------
@pytest.mark.parametrize("value", [np.array(["a", "b"]), np.array([1 + 2j], np.clongdouble),
                                   np.array([object(), 1], dtype=object), "text",
                                   np.array([1], "datetime64[s]")])
@pytest.mark.parametrize("fn", [fnp.asarray, fnp.sum, fnp.sin, fnp.concatenate,
                                lambda v: fnp.reshape(v, -1), lambda v: fnp.add(v, 1)])
def test_unsupported_values_are_refused_clearly(value, fn):
    arg = [value] if fn is fnp.concatenate else value
    with pytest.raises(TypeError, match="dtype|complex|convert|ragged|supported"):
        fn(arg)


def test_ragged_sequences_are_refused_like_numpy():
    for value in ([[1, 2], [3]], [fnp.ones(2), fnp.ones(3)]):
        with pytest.raises(ValueError, match="inhomogeneous"):
            fnp.asarray(value)


@pytest.mark.parametrize("dtype", [np.clongdouble, "U3", object, "datetime64[s]", np.float128
                                   if hasattr(np, "float128") else np.longdouble])
def test_unsupported_requested_dtypes(dtype):
    for fn in (lambda: fnp.zeros(2, dtype), lambda: fnp.asarray([1, 2], dtype),
               lambda: fnp.astype(fnp.ones(2), dtype), lambda: fnp.sum(fnp.ones(2), dtype=dtype)):
        with pytest.raises(TypeError, match="dtype|supported"):
            fn()


def test_broadcast_errors_name_the_function_and_shapes():
    for fn in (fnp.add, fnp.where, fnp.hypot, fnp.logical_and):
        args = (np.ones((2, 3)), np.ones((4,))) if fn is not fnp.where else (
            np.ones((2, 3), bool), np.ones((4,)), 0.0)
        with pytest.raises(ValueError, match=r"could not be broadcast together with shapes"):
            fn(*args)


def test_axis_errors_name_axis_and_rank():
    for fn in (lambda: fnp.sum(np.ones((2, 2)), axis=2), lambda: fnp.cumsum(np.ones(2), 1),
               lambda: fnp.flip(np.ones(2), -2), lambda: fnp.concatenate([np.ones(2)], axis=1),
               lambda: fnp.expand_dims(np.ones(2), 3), lambda: fnp.moveaxis(np.ones(2), 0, 1)):
        with pytest.raises((np.exceptions.AxisError, ValueError), match=r"out of (bounds|range)"):
            fn()
