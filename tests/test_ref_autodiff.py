"""Mutable references and differentiation (JAX's refs guides): ``vjp`` with respect to a
Ref (its gradient accumulated into the ``with_refs`` target), and ``make_jaxpr`` of a
function closing over a Ref made outside any transformation. Oracles: the derivatives by
hand (d/dx x**2 = 2x; d/dx sin(x)**2 = 2 sin x cos x) and the function run eagerly."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.core.eval import eval_jaxpr


def square(x_ref):
    return x_ref[...] ** 2


def sin_in_place(x_ref):
    x_ref[...] = fnp.sin(x_ref[...])
    return x_ref[...] ** 2


def test_vjp_of_a_ref_accumulates_its_gradient_into_the_bound_ref():
    y, f_vjp = ft.vjp(square, ft.new_ref(3.0))
    assert float(y) == 9.0
    acc = ft.new_ref(100.0)
    assert repr(f_vjp.with_refs(acc)(1.0)) == "(GradRef(),)"
    assert float(acc[...]) == 106.0  # accumulated, not set: 100 + 2*3 (exact)
    f_vjp.with_refs(acc)(2.0)
    assert float(acc[...]) == 118.0


@pytest.mark.parametrize("jitted", [False, True])
def test_vjp_runs_the_function_on_the_ref_and_keeps_its_writes(jitted):
    x0 = 2.0

    def fwd_bwd(r):
        y, g_vjp = ft.vjp(sin_in_place, r)
        acc = ft.new_ref(0.0)
        g_vjp.with_refs(acc)(1.0)
        return y, acc[...]

    r = ft.new_ref(x0)
    y, g = (ft.jit(fwd_bwd) if jitted else fwd_bwd)(r)
    np.testing.assert_allclose(y, np.sin(x0) ** 2, rtol=1e-12)  # float64: rounding only
    np.testing.assert_allclose(g, 2 * np.sin(x0) * np.cos(x0), rtol=1e-12)
    np.testing.assert_allclose(r[...], np.sin(x0), rtol=1e-12)  # the write stays


def test_vjp_of_a_ref_with_other_arguments():
    W = fnp.arange(6.0).reshape(2, 3)
    r = ft.new_ref(fnp.ones(3))
    _, f_vjp = ft.vjp(lambda W, r: fnp.sum(W @ r[...]), W, r)
    assert f_vjp.args_res[1].__class__.__name__ == "NotNeeded"  # the Ref is the argument
    acc = ft.new_ref(fnp.zeros(3))
    W_bar, marker = f_vjp.with_refs(ft.ad.GradValue(), acc)(1.0)
    np.testing.assert_array_equal(W_bar, np.ones((2, 3)))  # exact: sums of ones
    np.testing.assert_array_equal(acc[...], np.arange(6.0).reshape(2, 3).sum(0))
    assert repr(marker) == "GradRef()"


def test_a_ref_argument_needs_a_ref_target():
    _, f_vjp = ft.vjp(square, ft.new_ref(2.0))
    with pytest.raises(ValueError, match="argument 0 .* is a Ref: its gradient must be "
                                         "accumulated into a ref.*with_refs"):
        f_vjp(1.0)
    with pytest.raises(TypeError, match="argument 0 is a Ref, so its gradient must be "
                                        "accumulated into a ref; got GradValue"):
        f_vjp.with_refs(ft.ad.GradValue())(1.0)


def test_refs_must_be_arguments_of_their_own_and_passed_once():
    r = ft.new_ref(1.0)
    with pytest.raises(TypeError, match="a Ref inside an argument's pytree"):
        ft.vjp(lambda d: d["r"][...], {"r": r})
    with pytest.raises(ValueError, match="the same Ref is passed more than once"):
        ft.vjp(lambda a, b: a[...] * b[...], r, r)


def test_make_jaxpr_closing_over_a_ref_traces_its_value_and_leaves_it_unchanged():
    x = fnp.arange(4.0)
    acc = ft.new_ref(fnp.ones(4))

    def accumulate(v):
        acc[...] = acc[...] + v
        return acc[...] * 2.0

    jaxpr = ft.make_jaxpr(accumulate)(x)
    np.testing.assert_array_equal(acc[...], np.ones(4))  # tracing writes nothing
    (out,) = eval_jaxpr(jaxpr, x)
    np.testing.assert_array_equal(out, (np.ones(4) + np.arange(4.0)) * 2.0)  # exact
    shape = ft.eval_shape(accumulate, x)
    assert (shape.shape, shape.dtype) == ((4,), np.float64)
    np.testing.assert_array_equal(accumulate(x), (np.ones(4) + np.arange(4.0)) * 2.0)
    np.testing.assert_array_equal(acc[...], np.arange(4.0) + 1.0)  # run eagerly: written


def test_make_jaxpr_of_with_refs_into_a_closed_over_ref():
    # JAX's refs guide: the jaxpr of a VJP accumulating into a Ref made outside
    grad_ref = ft.new_ref(fnp.zeros(10))
    take = ft.jit(lambda x, i: x[i])

    def take_vjp():
        _, take_vjp = ft.vjp(take, fnp.arange(10.0), 3)
        take_vjp.with_refs(grad_ref, ft.ad.GradValue())(1.0)

    jaxpr = ft.make_jaxpr(take_vjp)()
    assert jaxpr.out_avals == []
    np.testing.assert_array_equal(grad_ref[...], np.zeros(10))


def test_grad_with_respect_to_a_ref_says_to_use_vjp():
    r = ft.new_ref(2.0)
    with pytest.raises(ValueError, match="argument 0 is a Ref.*with_refs"):
        ft.grad(square)(r)
    with pytest.raises(ValueError, match="argument 1 is a Ref"):
        ft.grad(lambda x, d: x * d["r"][...], argnums=(0, 1))(1.0, {"r": r})
    # a Ref left out of argnums goes along for the ride (JAX's plumbing refs)
    plumbing = ft.new_ref(0.0)

    def f(x, ref):
        ref[...] += ft.lax.stop_gradient(x * 3.0)
        return x * x

    assert float(ft.grad(f)(2.0, plumbing)) == 4.0 and float(plumbing[...]) == 6.0


@pytest.mark.parametrize("jitted", [False, True])
def test_writing_a_differentiated_value_into_a_plumbing_ref_is_refused(jitted):
    plumbing = ft.new_ref(1.0)

    def err6(x, ref):  # JAX's refs guide: an error
        y = x + x
        ref[...] += y
        return y

    g = ft.grad(err6)
    with pytest.raises(ValueError, match="only non-differentiated values can be written"):
        (ft.jit(g) if jitted else g)(2.0, plumbing)
    assert float(plumbing[...]) == 1.0  # left as it was
