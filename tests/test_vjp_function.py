"""``vjp``'s function is a pytree of its residuals, as JAX's ``VJP``; the expected jaxprs
and values are JAX 0.10.2's."""
import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans.tree_util import tree_flatten, tree_leaves, tree_unflatten


def f(x):
    return fnp.sin(fnp.sin(x) * 2.0)


def test_make_jaxpr_of_a_function_returning_vjp_lists_the_residuals():
    jaxpr = ft.make_jaxpr(lambda x: ft.vjp(f, x))(np.float32(1.0))
    # JAX: (e, c, f) with c = cos a, f = cos d: the output and the two residuals
    assert [e.prim.name for e in jaxpr.eqns] == ["sin", "cos", "mul", "sin", "cos"]
    assert len(jaxpr.outvars) == 3


def test_vjp_returned_from_jit_computes_the_cotangents_from_its_residuals():
    _, f_vjp = ft.jit(lambda x: ft.vjp(f, x))(1.0)
    assert len(tree_leaves(f_vjp)) == 2
    want = np.cos(np.sin(1.0) * 2.0) * 2.0 * np.cos(1.0)
    np.testing.assert_allclose(f_vjp(1.0)[0], want, rtol=1e-12)


def test_the_backward_pass_rebuilt_from_residuals_is_a_jaxpr_of_them():
    res, tree = tree_flatten(ft.jit(lambda x: ft.vjp(f, x))(1.0)[1])
    bwd = ft.make_jaxpr(lambda *a: tree_unflatten(tree, a[:-1])(a[-1]))(*res, 1.0)
    assert [e.prim.name for e in bwd.eqns] == ["mul", "mul", "mul"]  # as JAX's
    np.testing.assert_allclose(tree_unflatten(tree, [r * 0 + 1 for r in res])(1.0)[0], 2.0)


def test_eager_vjp_and_vjp_of_vjp_still_work():
    y, f_vjp = ft.vjp(f, 1.0)
    assert tree_leaves(f_vjp) == []  # eager residuals stay on the tape
    g = ft.grad(lambda x: ft.vjp(f, x)[1](1.0)[0])(1.0)
    np.testing.assert_allclose(g, -0.97203195, rtol=1e-6)  # JAX (float32): -0.97203195
