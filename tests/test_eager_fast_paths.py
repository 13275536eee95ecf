"""Eager fast paths keep eager semantics: functrans.numpy plans (replayed per signature) give
what the general path gives, cached type rules still reject bad inputs on every call and
follow the x64 flag, the impl/type-rule check still runs, and callers' NumPy arrays are never
aliased or frozen."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.trace import Primitive

UNARY = ["sin", "tanh", "exp", "log1p", "negative", "absolute", "sqrt", "floor", "square",
         "isnan", "signbit", "reciprocal", "positive"]
BINARY = ["add", "subtract", "multiply", "true_divide", "maximum", "power", "arctan2",
          "floor_divide", "remainder", "copysign", "less", "logaddexp", "hypot"]
DTYPES = ["float32", "float64", "int8", "int64", "bool", "float16"]


def _inputs(dtype, rng):
    x = (rng.standard_normal(5) * 3).astype(dtype)
    return [x, fnp.asarray(x), x[2], np.asarray(x[0])]  # ndarray, Array, NumPy scalar, 0-d


def assert_same(got, want):
    """Same type, dtype, weak type and values (NaN where NaN)."""
    assert type(got) is ft.Array and (got.dtype, got.weak_type) == (want.dtype, want.weak_type)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def _numpy_dtype(name, *args):
    with np.errstate(all="ignore"):
        return np.asarray(getattr(np, name)(*args)).dtype


def assert_plans_agree(fn, args, numpy_dtype):
    """The first call runs the general path (the oracle); the next ones replay its plan."""
    first = fn(*args)
    assert first.dtype == numpy_dtype
    for _ in range(2):
        assert_same(fn(*args), first)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY)
def test_unary_plans_agree_with_the_general_path(name, dtype, rng):
    for x in _inputs(dtype, rng):
        try:
            want = _numpy_dtype(name, x)
        except TypeError:  # NumPy has no loop: functrans raises too, every time
            for _ in range(2):
                with pytest.raises(TypeError):
                    getattr(fnp, name)(x)
            continue
        assert_plans_agree(getattr(fnp, name), (x,), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY)
def test_binary_plans_agree_with_arrays_and_python_scalars(name, dtype, rng):
    x, xa, s, z = _inputs(dtype, rng)
    y = np.abs(x[::-1]) + np.asarray(1, dtype)  # no zero divisors or negative powers
    for a, b in [(x, y), (xa, fnp.asarray(y)), (xa, 2), (3, y), (xa, 0.5), (xa, -0.0),
                 (xa, True), (s, y), (z, y)]:
        try:
            want = _numpy_dtype(name, np.asarray(a) if isinstance(a, ft.Array) else a,
                                np.asarray(b) if isinstance(b, ft.Array) else b)
        except (TypeError, OverflowError):
            continue
        assert_plans_agree(getattr(fnp, name), (a, b), want)


def test_python_scalars_are_part_of_the_signature():
    x = fnp.ones(2)
    for _ in range(2):
        np.testing.assert_array_equal(fnp.copysign(x, 0.0), [1.0, 1.0])
        np.testing.assert_array_equal(fnp.copysign(x, -0.0), [-1.0, -1.0])  # -0.0 == 0.0
        assert np.isnan(fnp.add(x, float("nan"))).all()
        np.testing.assert_array_equal(fnp.add(x, 2), [3.0, 3.0])
        np.testing.assert_array_equal(fnp.add(x, 3), [4.0, 4.0])
    small = fnp.asarray(np.ones(2, np.int8))
    for _ in range(2):  # out-of-range Python ints raise as in NumPy, on every call
        with pytest.raises(OverflowError, match="out of bounds for int8"):
            fnp.add(small, 1000)
        assert fnp.add(small, 100).dtype == np.int8


def test_plans_serve_transformations():
    x = np.linspace(-2, 2, 7)
    for _ in range(2):
        np.testing.assert_allclose(ft.vmap(ft.grad(lambda v: fnp.sin(v) * v))(x),
                                   np.cos(x) * x + np.sin(x), rtol=1e-14)
        np.testing.assert_allclose(ft.jit(lambda v: fnp.tanh(v) + 2.0)(x), np.tanh(x) + 2.0,
                                   rtol=1e-15)
        jaxpr = ft.make_jaxpr(lambda v: fnp.sin(v) * 2.0)(np.float32(1.0))
        assert str(jaxpr) == ("{ lambda ; a:f32[]. let b:f32[] = sin a; "
                              "c:f32[] = mul b 2.0:f32[] in (c,) }")


def test_traced_programs_copy_numpy_constants():
    c = np.arange(3.0)
    f = ft.jit(lambda v: fnp.add(v, c))  # c is a constant of the traced program
    fnp.add(fnp.ones(3), c)  # the plan for (f64[3], f64[3]) exists
    np.testing.assert_array_equal(f(np.ones(3)), [1.0, 2.0, 3.0])
    c[:] = 100.0
    np.testing.assert_array_equal(f(np.ones(3)), [1.0, 2.0, 3.0])


def test_callers_numpy_arrays_are_neither_aliased_nor_frozen():
    x = np.arange(6.0)
    outs = [fnp.positive(x), lax.reshape(x, (2, 3)), lax.squeeze(x[None], (0,)),
            fnp.add(x, 0.0), lax.rev(x, (0,))[::-1]]
    assert x.flags.writeable
    x[:] = -1.0
    for o in outs:
        assert type(o) is ft.Array
        np.testing.assert_array_equal(np.ravel(o), np.arange(6.0))
    z = np.array(5.0)
    ys = [lax.reshape(z, (1,)), lax.reshape(z, (1, 1))[0], fnp.positive(z)]
    assert z.flags.writeable
    z[()] = 1.0
    for y in ys:
        assert type(y) is ft.Array and float(y[0] if y.ndim else y) == 5.0


def test_cached_type_rules_reject_bad_inputs_every_time():
    a, b = np.ones(3, np.float32), np.ones(3)
    for _ in range(3):
        with pytest.raises(TypeError, match="add requires arguments to have the same dtypes"):
            lax.add(a, b)
        with pytest.raises(TypeError, match="add requires arguments to have the same dtypes"):
            ft.make_jaxpr(lax.add)(a, b)


def test_cached_type_rules_follow_the_x64_flag():
    x = np.ones(2, np.float32)
    assert lax.convert_element_type(x, np.float64).dtype == np.float64
    with ft.config.override(enable_x64=False):
        assert lax.convert_element_type(x, np.float64).dtype == np.float32
        assert ft.make_jaxpr(lambda v: lax.convert_element_type(v, np.float64))(x) \
            .out_avals[0].dtype == np.float32
    assert lax.convert_element_type(x, np.float64).dtype == np.float64


def test_impl_is_still_checked_against_its_type_rule_on_every_call():
    liar = Primitive("liar_for_test", impl=lambda x: [np.asarray(x, np.float32)],
                     abstract_eval=lambda a: [a])
    try:
        for _ in range(2):
            with ft.config.override(check_jaxprs=True):
                with pytest.raises(AssertionError, match="liar_for_test: impl output 0 is "
                                                         r"float32\[3\], abstract_eval says "
                                                         r"f64\[3\]"):
                    liar.bind1(np.ones(3))
    finally:
        from functrans.core import trace
        trace._PRIMITIVES.remove(liar)


def test_nonlinear_tangent_code_is_reported_with_its_line_in_eager_grad():
    f = ft.custom_jvp(lambda x: x * 1.0)
    f.defjvp(lambda primals, tangents: (f(primals[0]), fnp.sin(tangents[0])))  # not linear
    with pytest.raises(TypeError, match=r"does not support 'sin' \(from "
                                        r"test_eager_fast_paths.py:\d+ \(in <lambda>\)\)"):
        ft.grad(f)(1.0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128", "int8",
                                   "uint16", "bool", "float16"])
def test_select_moves_the_same_bits_as_np_where(dtype, rng):
    # From 512 elements select_n (where, ReLU derivatives) selects bitwise, without a branch
    # per element; it must give np.where's bits exactly, NaN payloads and -0.0 included.
    shape = (40, 30)
    which = rng.random(shape) > 0.5
    x = (rng.standard_normal(shape) * 1e3).astype(dtype)
    y = (rng.standard_normal(shape) * 1e3).astype(dtype)
    if np.dtype(dtype).kind in "fc":
        x.flat[:3] = [np.nan, -0.0, np.inf]
        y.flat[3:6] = [-np.nan, 0.0, -np.inf]
    cases = [(x, y), (x.T.copy().T, y[::-1]), (np.asarray(x.flat[7]), y), (x, np.zeros((), dtype))]
    for on_false, on_true in cases:
        got = np.asarray(lax.select(which, on_true, on_false))
        want = np.where(which, on_true, on_false)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))
