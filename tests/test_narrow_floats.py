"""bfloat16 and the float8 types (from ``ml_dtypes``), computed as JAX computes them on CPU:
each operation in float32, its result rounded to the narrow type. Expected values are JAX
0.10.2's for the same programs (its promotion table, its PRNG bits)."""
from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.dtypes as ftd
import functrans.numpy as fnp
import functrans.random as random
from functrans import lax

ml_dtypes = pytest.importorskip("ml_dtypes")  # an optional dependency ([ecosystem], in [dev])
BF16 = np.dtype(ml_dtypes.bfloat16)
F8 = np.dtype(ml_dtypes.float8_e4m3fn)
F32 = np.dtype(np.float32)


def rounded(x):
    """A float32 result rounded once to bfloat16: what one bfloat16 operation must give."""
    return np.asarray(x, F32).astype(BF16)


@pytest.mark.parametrize("other, expected", [
    ("int32", BF16), ("int8", BF16), ("bool", BF16), ("uint8", BF16), ("float16", F32),
    ("float32", F32), ("complex64", np.dtype(np.complex64))])
def test_bfloat16_promotes_on_jaxs_lattice(other, expected):
    assert fnp.promote_types(BF16, other) == expected
    x = fnp.ones(3, BF16)
    assert (x + fnp.ones(3, other)).dtype == expected
    assert (fnp.ones(3, other) * x).dtype == expected


def test_weak_scalars_keep_the_narrow_type():
    x = fnp.asarray([1.5, 2.25], BF16)
    assert (x + 1.0).dtype == BF16 and (x + 1).dtype == BF16 and (2 * x).dtype == BF16
    assert (x + 1j).dtype == np.complex64
    assert (fnp.ones(2, F8) + 1.0).dtype == F8 and (fnp.ones(2, F8) + fnp.int32(1)).dtype == F8


def test_float8_does_not_meet_other_floats_implicitly():
    with pytest.raises(ftd.TypePromotionError, match="8-bit floats"):
        fnp.ones(2, F8) + fnp.ones(2, np.float32)
    with pytest.raises(ftd.TypePromotionError):
        fnp.promote_types(F8, BF16)


@pytest.mark.parametrize("name", ["sin", "exp", "tanh", "log1p", "sqrt", "negative", "abs"])
def test_unary_ops_round_the_float32_result_once(name):
    x = np.linspace(0.05, 3.0, 41).astype(BF16)
    got = getattr(fnp, name)(x)
    assert got.dtype == BF16
    np.testing.assert_array_equal(np.asarray(got), rounded(getattr(np, name)(x.astype(F32))))


def test_binary_ops_matmul_and_sums_compute_in_float32():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((5, 7)).astype(BF16)
    b = rng.standard_normal((7, 3)).astype(BF16)
    a32, b32 = a.astype(F32), b.astype(F32)
    for got, want in [(fnp.asarray(a) * 3.0 - a, a32 * np.float32(3) - a32),
                      (fnp.matmul(a, b), a32 @ b32), (fnp.sum(a, axis=1), a32.sum(axis=1)),
                      (fnp.max(a), a32.max())]:
        assert got.dtype == BF16
        # `a * 3 - a` is two operations: the product is rounded before the difference.
        if want.shape == (5, 7):
            want = rounded(rounded(a32 * np.float32(3)).astype(F32) - a32)
        np.testing.assert_array_equal(np.asarray(got), rounded(want))
    assert fnp.mean(fnp.arange(10.0, dtype=BF16)) == 4.5  # JAX: 4.5, bfloat16


def test_jit_vmap_and_grad_agree_with_eager():
    x = fnp.asarray(np.linspace(-2, 2, 9), BF16)

    def f(v):
        return fnp.sum(fnp.tanh(v) * v + 1.0)

    eager = f(x)
    assert ft.make_jaxpr(f)(x).jaxpr.invars[0].aval.str_short() == "bf16[9]"
    assert ft.jit(f)(x) == eager and ft.jit(f)(x).dtype == BF16
    np.testing.assert_array_equal(np.asarray(ft.vmap(lambda v: fnp.tanh(v) * v)(x)),
                                  np.asarray(fnp.tanh(x) * x))
    g = ft.grad(f)(x)
    assert g.dtype == BF16
    np.testing.assert_array_equal(np.asarray(ft.jit(ft.grad(f))(x)), np.asarray(g))
    # Against the float32 derivative: each of the gradient's few operations rounds to
    # bfloat16 (8 significant bits), so a few bfloat16 ulps (2**-7 relative) apart.
    x32 = np.asarray(x, F32)
    exact = np.tanh(x32) + x32 * (1 - np.tanh(x32) ** 2)
    np.testing.assert_allclose(np.asarray(g, F32), exact, rtol=4 * 2.0 ** -7, atol=2.0 ** -7)


def test_random_draws_match_jaxs_bits():
    # JAX 0.10.2: random.normal(PRNGKey(1), (4,), bfloat16), random.uniform(PRNGKey(1), (4,),
    # float8_e4m3fn) (types with fewer than 8 mantissa bits draw 8 random bits).
    n = random.normal(random.PRNGKey(1), (4,), dtype=BF16)
    u = random.uniform(random.PRNGKey(1), (4,), dtype=F8)
    assert n.dtype == BF16 and u.dtype == F8
    np.testing.assert_array_equal(np.asarray(n, F32), [0.5625, -0.69140625, -0.053955078125, 1.546875])
    np.testing.assert_array_equal(np.asarray(u, F32), [0.625, 0.125, 0.375, 0.875])


def test_dtype_queries_know_the_narrow_floats():
    assert fnp.issubdtype(BF16, fnp.floating) and ftd.issubdtype(ml_dtypes.bfloat16, fnp.inexact)
    assert not fnp.issubdtype(BF16, fnp.integer)
    assert fnp.finfo(BF16).eps == 2.0 ** -7 and fnp.finfo(F8).bits == 8
    assert ft.grad(lambda v: fnp.sum(v * v))(fnp.ones(2, BF16)).dtype == BF16


def test_bitcasts_see_the_narrow_bits():
    x = fnp.asarray([1.0, -2.0], BF16)
    bits = lax.bitcast_convert_type(x, np.uint16)
    np.testing.assert_array_equal(np.asarray(bits), np.array([1.0, -2.0], BF16).view(np.uint16))
    assert lax.bitcast_convert_type(bits, BF16).dtype == BF16


def test_narrow_integers_are_refused_by_name():
    with pytest.raises(ft.UnsupportedDtypeError, match="int4"):
        fnp.asarray(np.zeros(2, ml_dtypes.int4))


def test_control_flow_and_callbacks_see_the_narrow_values():
    # Their bodies are programs typed for bfloat16 (each of whose equations computes through
    # float32); a callback gets the values as they are, as in JAX.
    x = fnp.ones(2, BF16)

    def f(v):
        return lax.cond(v[0] > 0, lambda a: a * fnp.asarray(2, BF16), lambda a: a, v)

    for out in (f(x), ft.jit(f)(x), ft.grad(lambda v: fnp.sum(f(v)))(x),
                lax.fori_loop(0, 1, lambda i, a: a * 2, x)):
        assert out.dtype == BF16 and np.asarray(out, F32).tolist() == [2.0, 2.0]
    seen = []
    ft.pure_callback(lambda a: seen.append(a.dtype) or a, ft.ShapeDtypeStruct((2,), BF16), x)
    assert seen == [BF16]
