"""custom_jvp, custom_vjp and checkpoint: values, composition with jit/vmap, jaxprs, errors."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp

from finite_diff import fd_grad


# ---- custom_jvp ------------------------------------------------------------------------------------
@ft.custom_jvp
def log1pexp(x):
    return fnp.log1p(fnp.exp(x))


@log1pexp.defjvp
def _log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1 - 1 / (1 + fnp.exp(x)))  # stable where exp(x) overflows


def test_custom_jvp_is_used_by_every_mode():
    x = fnp.array([0.0, 2.0, 1000.0])
    want = np.array([0.5, 1 / (1 + np.exp(-2.0)), 1.0])
    np.testing.assert_allclose(ft.vmap(ft.grad(log1pexp))(x), want, rtol=1e-12)
    np.testing.assert_allclose(ft.jvp(log1pexp, (x,), (fnp.ones(3),))[1], want, rtol=1e-12)
    np.testing.assert_allclose(ft.jit(ft.vmap(ft.grad(log1pexp)))(x), want, rtol=1e-12)
    np.testing.assert_allclose(ft.vmap(ft.grad(ft.jit(log1pexp)))(x), want, rtol=1e-12)
    # the naive derivative is nan at 1000 (inf / inf): the rule is really what ran
    assert np.isnan(float(ft.grad(lambda x: fnp.log1p(fnp.exp(x)))(1000.0)))


def test_custom_jvp_under_eager_vmap_runs_the_function_itself():
    # With nothing differentiating above vmap, the batched function runs as is: its values
    # are the per-example loop's, and an output that is its argument is that very array
    # (optimistix's inexact_asarray relies on it to avoid copies).
    ident = ft.custom_jvp(lambda x: fnp.asarray(x, dtype=fnp.float64))
    ident.defjvp(lambda p, t: (ident(p[0]), t[0]))
    y = fnp.array([1.0, 2.0])
    assert ft.vmap(ident)(y) is y
    x = fnp.array([0.0, 2.0, 30.0])
    loop = np.array([float(log1pexp(v)) for v in x])
    np.testing.assert_array_equal(ft.vmap(log1pexp)(x), loop)  # same operations per element
    # under a JVP the rule still runs batched
    _, t = ft.jvp(ft.vmap(log1pexp), (x,), (fnp.ones(3),))
    np.testing.assert_allclose(t, 1 / (1 + np.exp(-np.asarray(x))), rtol=1e-12)


def test_custom_jvp_shows_in_jaxpr_and_typechecks():
    jaxpr = ft.make_jaxpr(log1pexp)(1.0)
    assert "custom_jvp_call" in str(jaxpr)
    ft.check_jaxpr(jaxpr)
    ft.check_jaxpr(ft.make_jaxpr(ft.grad(log1pexp))(1.0))


def test_custom_jvp_second_order_and_nondiff_args():
    @ft.custom_jvp
    def f(x, y):
        return fnp.sin(x) * y

    f.defjvps(lambda t, ans, x, y: fnp.cos(x) * y * t, lambda t, ans, x, y: fnp.sin(x) * t)
    np.testing.assert_allclose(ft.grad(ft.grad(f))(0.3, 2.0), -np.sin(0.3) * 2.0, rtol=1e-12)

    from functools import partial

    @partial(ft.custom_jvp, nondiff_argnums=(0,))
    def app(fn, x):
        return fn(x)

    @app.defjvp
    def app_jvp(fn, primals, tangents):
        (x,), (t,) = primals, tangents
        return fn(x), 3.0 * t

    assert float(ft.grad(lambda x: app(fnp.sin, x))(1.0)) == 3.0


def test_custom_jvp_applied_to_tangents_is_transposed_through_its_function():
    # lineax's dtype conversion: a rule that calls the custom_jvp function on the tangent.
    # Reverse mode transposes that call (linear in the tangent) through the function, as JAX
    # does; finite differences are the oracle (a linear map: exact up to rounding, 1e-8).
    @ft.custom_jvp
    def scale(x):
        return 3.0 * x

    @scale.defjvp
    def scale_jvp(primals, tangents):
        return scale(primals[0]), scale(tangents[0])

    f = lambda x: fnp.sum(fnp.sin(scale(x)))  # noqa: E731
    x = np.array([0.3, -1.2])
    np.testing.assert_allclose(ft.grad(f)(x), fd_grad(f, x), rtol=1e-8)

    @ft.custom_jvp
    def square(x):
        return x * x

    @square.defjvp
    def square_jvp(primals, tangents):
        return square(primals[0]), square(tangents[0])  # not linear in the tangent
    with pytest.raises(Exception, match="not linear|transpose"):
        ft.grad(lambda x: square(x).sum())(x)


def test_custom_jvp_errors():
    @ft.custom_jvp
    def f(x):
        return x * 2

    with pytest.raises(AttributeError, match="No JVP defined"):
        ft.grad(f)(1.0)

    @f.defjvp
    def bad(primals, tangents):
        return (primals[0] * 2, primals[0]), tangents[0]  # wrong structure

    with pytest.raises(TypeError, match="pytree structure"):
        ft.grad(f)(1.0)

    @ft.custom_jvp
    def g(x):
        return x * 2

    @g.defjvp
    def bad_shape(primals, tangents):
        return primals[0] * 2, fnp.ones(3)  # wrong shape

    with pytest.raises(TypeError, match=r"f64\[3\]"):
        ft.jvp(g, (fnp.ones(2),), (fnp.ones(2),))

    def closes_over(y):
        @ft.custom_jvp
        def h(x):
            return x * y

        h.defjvp(lambda p, t: (p[0] * y, t[0] * y))
        return h(2.0)

    with pytest.raises(TypeError, match="closes over a value"):
        ft.grad(closes_over)(3.0)


# ---- custom_vjp ------------------------------------------------------------------------------------
@ft.custom_vjp
def clip_gradient(x, lo, hi):
    return x


def _clip_fwd(x, lo, hi):
    return x, {"bounds": (lo, hi)}


def _clip_bwd(res, g):
    lo, hi = res["bounds"]
    return fnp.clip(g, lo, hi), None, None


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def test_custom_vjp_values_and_pytree_residuals():
    f = lambda x: fnp.sum(clip_gradient(x, -0.5, 0.5) * fnp.array([1.0, -2.0, 0.1]))  # noqa
    x = fnp.zeros(3)
    np.testing.assert_allclose(ft.grad(f)(x), [0.5, -0.5, 0.1])
    np.testing.assert_allclose(ft.jit(ft.grad(f))(x), [0.5, -0.5, 0.1])
    xs = fnp.zeros((4, 3))
    np.testing.assert_allclose(ft.vmap(ft.grad(f))(xs), np.tile([0.5, -0.5, 0.1], (4, 1)))
    np.testing.assert_allclose(ft.jacrev(lambda x: clip_gradient(x, -1.0, 1.0) * 3)(x),
                               np.eye(3) * 1.0)


def test_custom_vjp_python_scalar_residuals_reach_bwd_as_python_values():
    # As in JAX (literals): equinox's bwd rules use residual bools as filter masks.
    seen = []

    @ft.custom_vjp
    def f(x):
        return x * 2.0

    def fwd(x):
        return x * 2.0, (True, 3, 2.5, x)

    def bwd(res, g):
        seen.append(tuple(type(r) for r in res[:3]))
        flag, n, scale, x = res
        return (g * n * scale * x if flag else g,)

    f.defvjp(fwd, bwd)
    assert float(ft.grad(f)(2.0)) == 15.0
    assert float(ft.jit(ft.grad(f))(2.0)) == 15.0
    assert float(ft.grad(lambda x: ft.jit(f)(x))(2.0)) == 15.0
    assert seen == [(bool, int, float)] * 3
    np.testing.assert_allclose(ft.vmap(ft.grad(f))(fnp.arange(3.0)), [0.0, 7.5, 15.0])


def test_custom_vjp_under_vmap_sums_shared_argument_cotangents():
    @ft.custom_vjp
    def scale(w, x):
        return w * x

    scale.defvjp(lambda w, x: (w * x, (w, x)), lambda res, g: (g * res[1], g * res[0]))
    xs = fnp.arange(1.0, 4.0)
    # w is shared by the batch: its gradient is the sum over examples
    g = ft.grad(lambda w: fnp.sum(ft.vmap(scale, (None, 0))(w, xs)))(2.0)
    assert float(g) == 6.0


def test_custom_vjp_forward_mode_is_an_error():
    with pytest.raises(TypeError, match="forward-mode"):
        ft.jvp(lambda x: clip_gradient(x, -1.0, 1.0), (1.0,), (1.0,))


def test_custom_vjp_forward_mode_under_vmap_is_the_same_error():
    # As in JAX (its batching rule for custom_lin raises the forward-mode error): vmap of jvp,
    # jacfwd, and vmap of a linearized function fail as the loop of jvps does; vmap of
    # vjp/grad (reverse mode) batches the bwd rule instead and agrees with the loop.
    f = lambda x: clip_gradient(x, -1.0, 1.0) * x  # noqa: E731
    x = fnp.array([0.5, 2.0, -3.0])
    ts = fnp.eye(3)
    with pytest.raises(TypeError, match="forward-mode"):
        for t in ts:  # the oracle: the loop fails on its first jvp
            ft.jvp(f, (x,), (t,))
    for batched in (lambda: ft.vmap(lambda t: ft.jvp(f, (x,), (t,)))(ts),
                    lambda: ft.jit(ft.vmap(lambda t: ft.jvp(f, (x,), (t,))))(ts),
                    lambda: ft.jacfwd(f)(x)):
        with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
            batched()
    cts = fnp.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, -1.0]])
    pullback = ft.vjp(f, x)[1]
    np.testing.assert_array_equal(ft.vmap(pullback)(cts)[0],
                                  np.stack([pullback(c)[0] for c in cts]))
    np.testing.assert_array_equal(ft.vmap(ft.grad(lambda v: f(v).sum()))(ts * x),
                                  np.stack([ft.grad(lambda v: f(v).sum())(v) for v in ts * x]))


def test_custom_vjp_bwd_errors():
    @ft.custom_vjp
    def f(x, y):
        return x * y

    f.defvjp(lambda x, y: (x * y, (x, y)), lambda res, g: (g * res[1],))  # one cotangent short
    with pytest.raises(TypeError, match="pytree structure"):
        ft.grad(f)(1.0, 2.0)

    @ft.custom_vjp
    def h(x):
        return x

    h.defvjp(lambda x: (x, None), lambda res, g: (fnp.ones(5),))
    with pytest.raises(TypeError, match=r"f64\[5\]"):
        ft.grad(lambda x: fnp.sum(h(x)))(fnp.ones(2))


# ---- checkpoint ------------------------------------------------------------------------------------
def _count(jaxpr, name):
    n = 0
    for eqn in jaxpr.eqns:
        n += eqn.prim.name == name
        for v in eqn.params.values():
            if isinstance(v, ft.Jaxpr):
                n += _count(v, name)
    return n


def test_checkpoint_recomputes_instead_of_saving():
    def block(x):
        return fnp.sin(fnp.sin(fnp.sin(x)))

    f_plain = lambda x: fnp.sum(block(x))  # noqa: E731
    f_remat = lambda x: fnp.sum(ft.checkpoint(block)(x))  # noqa: E731
    x = fnp.linspace(0.0, 1.0, 5)
    np.testing.assert_allclose(ft.grad(f_remat)(x), ft.grad(f_plain)(x), rtol=1e-14)
    j_plain = ft.make_jaxpr(ft.grad(f_plain))(x)
    j_remat = ft.make_jaxpr(ft.grad(f_remat))(x)
    ft.check_jaxpr(j_remat)
    assert "checkpoint" in str(j_remat)
    # Forward: 3 sins either way. Backward: checkpoint recomputes them next to the cotangents.
    assert _count(j_plain, "sin") == 3
    assert _count(j_remat, "sin") == 3 + 2
    # Residuals crossing into the backward pass: just the input instead of every intermediate.
    remat_eqn = next(e for e in j_remat.eqns if e.prim.name == "checkpoint")
    assert len(remat_eqn.inputs) == 2  # x and the output cotangent


def test_checkpoint_composes():
    f = ft.checkpoint(lambda x, y: fnp.tanh(x * y) ** 2)
    x, y = fnp.array([0.1, 0.2]), fnp.array([1.5, -0.5])
    g = ft.grad(lambda a: fnp.sum(f(a, y)))
    want = ft.grad(lambda a: fnp.sum(fnp.tanh(a * y) ** 2))(x)
    np.testing.assert_allclose(ft.jit(g)(x), want, rtol=1e-14)
    np.testing.assert_allclose(ft.vmap(ft.grad(lambda a, b: f(a, b)))(x, y),
                               ft.vmap(ft.grad(lambda a, b: fnp.tanh(a * b) ** 2))(x, y),
                               rtol=1e-14)
    np.testing.assert_allclose(ft.grad(ft.grad(lambda a: f(a, 1.0)))(0.3),
                               ft.grad(ft.grad(lambda a: fnp.tanh(a) ** 2))(0.3), rtol=1e-14)


def test_checkpoint_called_eagerly_still_traces_its_function():
    # As in JAX: the function runs in a trace of its own even outside any transformation, so
    # a Python branch on its argument is an error there too (JAX: TracerBoolConversionError),
    # and haiku sees a different trace inside than outside.
    from functrans.core.trace import EVAL_TRACE, current_trace
    seen = []

    def f(x):
        seen.append(current_trace() is EVAL_TRACE)
        return fnp.sin(x) * 2.0

    assert float(ft.checkpoint(f)(0.5)) == pytest.approx(2.0 * np.sin(0.5), rel=1e-15)
    assert seen == [False]
    with pytest.raises(ft.errors.TracerBoolConversionError):
        ft.checkpoint(lambda x: x * 2 if x > 0 else x)(1.0)


# ---- bad input to the autodiff API ---------------------------------------------------------------------
def test_grad_errors_name_the_problem():
    with pytest.raises(TypeError, match=r"scalar-output.*\(3,\)"):
        ft.grad(lambda x: x * 2)(fnp.ones(3))
    with pytest.raises(TypeError, match="int64"):
        ft.grad(lambda x: x * 2.0)(3)
    with pytest.raises(ValueError, match="argnums=2 is out of range"):
        ft.grad(lambda x, y: x * y, argnums=2)(1.0, 2.0)
    with pytest.raises(TypeError, match="has_aux=True"):
        ft.grad(lambda x: x * 2, has_aux=True)(1.0)
    with pytest.raises(TypeError, match="same tree structure"):
        ft.jvp(lambda x, y: x, (1.0, 2.0), (1.0,))
    with pytest.raises(TypeError, match="do not match"):
        ft.jvp(fnp.sin, (fnp.ones(3),), (fnp.ones(2),))
    _, f_vjp = ft.vjp(fnp.sin, fnp.ones(3))
    with pytest.raises(TypeError, match=r"f64\[2\]"):
        f_vjp(fnp.ones(2))


def test_value_and_grad_with_aux_and_pytrees():
    def loss(params, x):
        pred = params["w"] * x + params["b"]
        return fnp.sum(pred ** 2), {"pred": pred}

    params = {"w": fnp.array(2.0), "b": fnp.array(0.5)}
    (val, aux), g = ft.value_and_grad(loss, has_aux=True)(params, fnp.arange(3.0))
    pred = 2.0 * np.arange(3.0) + 0.5
    np.testing.assert_allclose(val, np.sum(pred ** 2))
    np.testing.assert_allclose(aux["pred"], pred)
    np.testing.assert_allclose(g["w"], np.sum(2 * pred * np.arange(3.0)))
    np.testing.assert_allclose(g["b"], np.sum(2 * pred))


def test_eager_grad_runs_custom_rules_on_the_values_at_hand():
    # JAX's custom-derivatives notebook: Python control flow on the argument's value in a
    # custom_jvp function and its rule works under (eager) grad: grad(f)(1.) == 2., (-1.) == 3.
    @ft.custom_jvp
    def f(x):
        if x > 0:
            return fnp.sin(x)
        return fnp.cos(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (x_dot,) = primals, tangents
        return f(x), (2 * x_dot if x > 0 else 3 * x_dot)

    assert float(ft.grad(f)(1.0)) == 2.0 and float(ft.grad(f)(-1.0)) == 3.0
    assert float(ft.jvp(f, (1.0,), (1.0,))[1]) == 2.0
    with pytest.raises(ft.errors.TracerBoolConversionError):
        ft.jit(ft.grad(f))(1.0)  # under jit the value is not known, as in JAX

    @ft.custom_vjp
    def g(x):
        return fnp.sin(x) if x > 0 else fnp.cos(x)

    g.defvjp(lambda x: (g(x), x), lambda x, ct: ((2 if x > 0 else 3) * ct,))
    assert float(ft.grad(g)(1.0)) == 2.0 and float(ft.grad(g)(-1.0)) == 3.0
