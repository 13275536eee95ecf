"""lax.cond's predicate: any scalar boolean or number, meaning ``pred != 0`` (NaN is true),
as in JAX; complex numbers, bfloat16/float8 and non-scalars are refused with TypeError.

The expected branches and messages were read off JAX 0.10.2 (``jax.lax.cond``): it accepts
bool, integer and float16/32/64 predicates, and refuses complex ("Pred type must be either
boolean or number, got complex128") and bfloat16 (not a NumPy number type) alike.
"""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax


def _plus(x):
    return x + 1


def _minus(x):
    return x - 1


ACCEPTED = [  # (predicate, takes the true branch)
    (True, True), (False, False), (0, False), (3, True), (np.int8(-2), True),
    (np.uint32(0), False), (0.0, False), (0.5, True), (np.float32(-0.0), False),
    (np.float16(1), True), (np.nan, True), (np.float64(-np.inf), True), (np.array(0.0), False),
]


@pytest.mark.parametrize("pred,taken", ACCEPTED, ids=lambda v: repr(v))
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_numeric_predicates_mean_nonzero(pred, taken, mode):
    def f(p):
        return lax.cond(p, _plus, _minus, 1.0)
    out = (ft.jit(f) if mode == "jit" else f)(pred)
    assert float(out) == (2.0 if taken else 0.0)


def test_float_predicate_is_staged_as_ne_zero_like_jax():
    text = str(ft.make_jaxpr(lambda p: lax.cond(p, _plus, _minus, 1.0))(0.5))
    assert "ne a 0.0:f64[]" in text or "ne a 0.0:f32[]" in text
    assert "convert_element_type[new_dtype=int32 weak_type=False]" in text


def test_vmap_with_batched_float_predicate():
    preds = fnp.array([0.0, 2.0, np.nan, -0.0])
    xs = fnp.arange(4.0)
    f = ft.vmap(lambda p, x: lax.cond(p, _plus, _minus, x))
    expected = [-1.0, 2.0, 3.0, 2.0]  # JAX: nan is nonzero, -0.0 is zero
    np.testing.assert_array_equal(f(preds, xs), expected)
    np.testing.assert_array_equal(ft.jit(f)(preds, xs), expected)


def test_grad_through_float_predicate():
    def f(x):
        return lax.cond(x, lambda y: y * y, lambda y: -y, x)
    assert float(ft.grad(f)(3.0)) == 6.0
    assert float(ft.grad(f)(0.0)) == -1.0
    assert float(ft.jit(ft.grad(f))(-2.0)) == -4.0


@pytest.mark.parametrize("pred", [1 + 0j, np.complex64(0)], ids=repr)
def test_complex_predicate_refused(pred):
    with pytest.raises(TypeError, match="Pred type must be either boolean or number, got "
                                        "complex"):
        lax.cond(pred, _plus, _minus, 1.0)
    with pytest.raises(TypeError, match="got complex"):
        ft.jit(lambda p: lax.cond(p, _plus, _minus, 1.0))(pred)


def test_bfloat16_predicate_refused_like_jax():
    pred = fnp.asarray(1.0, fnp.bfloat16)
    with pytest.raises(TypeError, match="got bfloat16"):
        lax.cond(pred, _plus, _minus, 1.0)


@pytest.mark.parametrize("pred", [np.array([1]), np.array([True]), np.zeros(2)], ids=repr)
def test_non_scalar_predicate_refused(pred):
    with pytest.raises(TypeError, match=r"predicate must be a scalar, got shape"):
        lax.cond(pred, _plus, _minus, 1.0)


def test_none_predicate_refused():
    with pytest.raises(TypeError, match="predicate is None"):
        lax.cond(None, _plus, _minus, 1.0)


def test_switch_still_requires_an_integer_index():
    # JAX: "Index type must be an integer, got 1.0 as float64"
    with pytest.raises(TypeError, match="index must be an integer scalar"):
        lax.switch(1.0, [_plus, _minus], 1.0)
