"""JAX's extension API on functrans: primitives defined by libraries (``jax.extend.core``),
their rules (``jax.interpreters.ad`` / ``batching`` / ``mlir`` / ``partial_eval``),
``jax.custom_derivatives`` and ``jax.api_util``.

Oracles: NumPy for values (exact, or 1e-12 relative where the operation order differs),
central finite differences for derivatives (step 1e-6 in float64, tolerance 1e-6), Python
loops over the batch for vmap (exact), and JAX's documented behaviour for semantics.
"""
from __future__ import annotations

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core.avals import ShapedArray
from functrans.core.errors import ConcretizationTypeError
from functrans.extend import core as xcore
from functrans.interpreters import ad, batching, mlir
from functrans.transforms.jit.executable import executable_for
from functrans.transforms.jit.lowerings import expand_lowerings
from functrans.transforms.jit.segmented import jaxpr_needs_host
from functrans.transforms.passes import optimize

RTOL = 1e-12
FD_EPS, FD_TOL = 1e-6, 1e-6


def fd_grad(f, x):
    """Central finite-difference gradient of scalar ``f`` at float64 array ``x``."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = FD_EPS
        g[i] = (float(f(x + e)) - float(f(x - e))) / (2 * FD_EPS)
    return g


# ---- multiply_add, defined as JAX's "How primitives work" tutorial defines it ------------------
multiply_add_p = xcore.Primitive("multiply_add")
impl_calls = []


def multiply_add(x, y, z):
    return multiply_add_p.bind(x, y, z)


def _ma_impl(x, y, z):
    impl_calls.append(1)
    return np.add(np.multiply(x, y), z)


def _ma_abstract_eval(xs, ys, zs):
    assert xs.shape == ys.shape == zs.shape
    return ShapedArray(xs.shape, xs.dtype)


def _ma_jvp(primals, tangents):
    x, y, z = primals
    xt, yt, zt = tangents

    def inst(t):
        return lax.zeros_like_array(x) if type(t) is ad.Zero else t
    return multiply_add(x, y, z), multiply_add(inst(xt), y, multiply_add(x, inst(yt),
                                                                           inst(zt)))


def _ma_transpose(ct, x, y, z):
    if not ad.is_undefined_primal(x):
        assert ad.is_undefined_primal(y)
        ct_y = ad.Zero(y.aval) if type(ct) is ad.Zero else \
            multiply_add(x, ct, lax.zeros_like_array(x))
        return None, ct_y, ct
    ct_x = ad.Zero(x.aval) if type(ct) is ad.Zero else \
        multiply_add(ct, y, lax.zeros_like_array(y))
    return ct_x, None, ct


def _ma_batch(args, dims):
    size = next(a.shape[d] for a, d in zip(args, dims) if d is not batching.not_mapped)
    return multiply_add(*[batching.bdim_at_front(a, d, size) for a, d in zip(args, dims)]), 0


multiply_add_p.def_impl(_ma_impl)
multiply_add_p.def_abstract_eval(_ma_abstract_eval)
ad.primitive_jvps[multiply_add_p] = _ma_jvp
ad.primitive_transposes[multiply_add_p] = _ma_transpose
batching.primitive_batchers[multiply_add_p] = _ma_batch
mlir.register_lowering(multiply_add_p,
                       mlir.lower_fun(lambda x, y, z: x * y + z, multiple_results=False))


def sq_add(a, b):
    return multiply_add(a, a, b)


def loss(a, b):
    return fnp.sum(multiply_add(fnp.sin(a), a, b) ** 2)


def loss_np(a, b):
    return np.sum((np.sin(a) * a + b) ** 2)


@pytest.fixture
def ab(rng):
    return rng.normal(size=(4,)), rng.normal(size=(4,))


def test_eager_bind_runs_the_impl_and_matches_numpy(ab):
    a, b = ab
    impl_calls.clear()
    np.testing.assert_array_equal(sq_add(a, b), a * a + b)
    assert impl_calls == [1]
    assert type(multiply_add(1.0, 2.0, 3.0)) is ft.Array


def test_jaxprs_hold_the_library_primitive():
    eqns = ft.make_jaxpr(sq_add)(1.0, 2.0).eqns
    assert [e.prim.name for e in eqns] == ["multiply_add"]
    assert eqns[0].prim.facade is multiply_add_p


def test_jit_inlines_the_lower_fun_lowering(ab):
    a, b = ab
    jaxpr = ft.make_jaxpr(sq_add)(a, b)
    lowered = optimize(expand_lowerings(jaxpr))
    assert [e.prim.name for e in lowered.eqns] == ["mul", "add"]
    assert not jaxpr_needs_host(jaxpr)
    impl_calls.clear()
    np.testing.assert_array_equal(ft.jit(sq_add)(a, b), a * a + b)
    np.testing.assert_array_equal(executable_for(jaxpr, "sq_add")(a, b)[0], a * a + b)
    assert impl_calls == []  # compiled: the Python impl never ran


def test_jvp_and_grad_match_finite_differences(ab):
    a, b = ab
    for _ in range(2):  # the second call reuses the eager tape's cached linearization
        ga, gb = ft.grad(loss, argnums=(0, 1))(a, b)
        np.testing.assert_allclose(ga, fd_grad(lambda x: loss_np(x, b), a), atol=FD_TOL)
        np.testing.assert_allclose(gb, fd_grad(lambda y: loss_np(a, y), b), atol=FD_TOL)
    t = np.ones_like(a)
    out, tan = ft.jvp(loss, (a, b), (t, np.zeros_like(b)))
    np.testing.assert_allclose(out, loss_np(a, b), rtol=RTOL)
    np.testing.assert_allclose(tan, fd_grad(lambda x: loss_np(x, b), a) @ t, atol=FD_TOL)
    np.testing.assert_allclose(ft.jit(ft.grad(loss))(a, b), ga, rtol=RTOL)


def test_second_derivative_through_the_transpose_rule():
    d2 = ft.grad(ft.grad(lambda x: sq_add(x, 1.0) * x))(1.5)  # d2/dx2 (x^3 + x) = 6x
    np.testing.assert_allclose(d2, 9.0, rtol=RTOL)


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (1, None, 0), (None, 0, None)])
def test_vmap_matches_a_python_loop(rng, in_axes):
    shapes = {0: (3, 2), 1: (2, 3), None: (2,)}
    args = [rng.normal(size=shapes[d]) for d in in_axes]
    got = ft.vmap(multiply_add, in_axes=in_axes)(*args)
    pick = [(lambda a, d: lambda i: a if d is None else np.take(a, i, axis=d))(a, d)
            for a, d in zip(args, in_axes)]
    want = np.stack([pick[0](i) * pick[1](i) + pick[2](i) for i in range(3)])
    np.testing.assert_array_equal(got, want)


def test_jit_of_vmap_of_grad_matches_per_example_finite_differences(rng):
    a, b = rng.normal(size=(5, 3)), rng.normal(size=(3,))
    got = ft.jit(ft.vmap(ft.grad(loss), in_axes=(0, None)))(a, b)
    for i in range(5):
        np.testing.assert_allclose(got[i], fd_grad(lambda x: loss_np(x, b), a[i]),
                                   atol=FD_TOL)
    np.testing.assert_allclose(ft.vmap(ft.jit(ft.grad(loss)), in_axes=(0, None))(a, b), got,
                               rtol=RTOL)


# ---- a multiple-results primitive ----------------------------------------------------------------
sincos_p = xcore.Primitive("sincos")
sincos_p.multiple_results = True
sincos_p.def_impl(lambda x: [np.sin(x), np.cos(x)])
sincos_p.def_abstract_eval(lambda a: [a, a])


def _sincos_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    s, c = sincos_p.bind(x)
    if type(t) is ad.Zero:
        return [s, c], [ad.Zero(t.aval), ad.Zero(t.aval)]
    return [s, c], [t * c, -t * s]


ad.primitive_jvps[sincos_p] = _sincos_jvp
batching.defvectorized(sincos_p)
mlir.register_lowering(sincos_p, mlir.lower_fun(lambda x: [fnp.sin(x), fnp.cos(x)]))


def test_multiple_results_under_every_transformation(rng):
    x = rng.normal(size=(4,))

    def f(x):
        s, c = sincos_p.bind(x)
        return fnp.sum(s * c)
    def f_np(x):
        return np.sum(np.sin(x) * np.cos(x))
    s, c = sincos_p.bind(x)
    np.testing.assert_array_equal(s, np.sin(x))
    np.testing.assert_array_equal(c, np.cos(x))
    np.testing.assert_allclose(ft.jit(f)(x), f_np(x), rtol=RTOL)
    np.testing.assert_allclose(ft.grad(f)(x), fd_grad(f_np, x), atol=FD_TOL)
    np.testing.assert_allclose(ft.jit(ft.grad(f))(x), fd_grad(f_np, x), atol=FD_TOL)
    xs = rng.normal(size=(3, 4))
    np.testing.assert_allclose(ft.vmap(f)(xs), [f_np(r) for r in xs], rtol=RTOL)


# ---- a primitive with an impl only: jit runs it on the host ----------------------------------
host_p = xcore.Primitive("host_cumprod_rev")
host_calls = []


def _host_impl(x):
    host_calls.append(1)
    return np.cumprod(np.asarray(x)[::-1])[::-1].copy()


host_p.def_impl(_host_impl)
host_p.def_abstract_eval(lambda a: a)


def test_jit_runs_an_impl_only_primitive_between_compiled_parts(rng):
    x = rng.uniform(0.5, 1.5, size=(5,))
    f = ft.jit(lambda x: host_p.bind(x * 2.0) + 1.0)
    assert jaxpr_needs_host(ft.make_jaxpr(lambda x: host_p.bind(x))(x))
    host_calls.clear()
    for _ in range(2):
        np.testing.assert_allclose(f(x), np.cumprod((2 * x)[::-1])[::-1] + 1, rtol=RTOL)
    assert len(host_calls) == 2  # once per call


def test_a_platform_specific_lowering_elsewhere_leaves_the_host_impl(rng):
    p = xcore.Primitive("gpu_only")
    p.def_impl(lambda x: np.asarray(x) * 3)
    p.def_abstract_eval(lambda a: a)
    mlir.register_lowering(p, mlir.lower_fun(lambda x: x * 3, False), platform="cuda")
    np.testing.assert_array_equal(ft.jit(p.bind)(np.arange(3.0)), [0.0, 3.0, 6.0])


def test_an_mlir_lowering_rule_fails_when_a_program_is_compiled_not_before():
    p = xcore.Primitive("needs_mlir")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda a: a)
    mlir.register_lowering(p, lambda ctx, x: [x])  # fine to register
    assert p.bind(2.0) == 2.0  # and to evaluate
    ft.make_jaxpr(p.bind)(2.0)  # and to trace
    with pytest.raises(NotImplementedError, match="'needs_mlir'.*MLIR"):
        ft.jit(p.bind)(2.0)


def test_lowering_errors_name_the_primitive():
    p = xcore.Primitive("bad_lowering")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda a: a)
    mlir.register_lowering(p, mlir.lower_fun(lambda x: x.astype(np.int32), False))
    with pytest.raises(TypeError, match="lowering of 'bad_lowering' returned i32"):
        ft.jit(p.bind)(np.ones(2))
    mlir.register_lowering(p, mlir.lower_fun(lambda x: p.bind(x), False))
    with pytest.raises(RecursionError, match="'bad_lowering' applies 'bad_lowering'"):
        ft.jit(p.bind)(np.ones(3))
    mlir.register_lowering(p, mlir.lower_fun(lambda x: x, True))
    with pytest.raises(TypeError, match="multiple_results=True but returned"):
        ft.jit(p.bind)(np.ones(4))
    with pytest.raises(NotImplementedError, match="unknown platform metal"):
        mlir.register_lowering(p, mlir.lower_fun(lambda x: x), platform="metal")
    with pytest.raises(TypeError, match="must be callable"):
        mlir.register_lowering(p, None)
    with pytest.raises(TypeError, match="expected a function"):
        mlir.lower_fun(3)


def test_a_lowering_may_apply_its_primitive_with_other_params():
    # lineax's GMRES solve lowers to a program holding a QR solve: the same primitive with
    # other params. Only the equation being expanded itself would recurse forever.
    p = xcore.Primitive("halve_times")
    p.def_impl(lambda x, times: np.asarray(x) / 2.0 ** times)
    p.def_abstract_eval(lambda a, times: a)
    mlir.register_lowering(p, mlir.lower_fun(
        lambda x, times: x if times == 0 else p.bind(x / 2.0, times=times - 1), False))
    x = np.arange(4.0)
    f = ft.jit(lambda x: p.bind(x, times=3))
    np.testing.assert_array_equal(f(x), x / 8.0)  # exact: division by powers of two
    assert "halve_times[" not in str(expand_lowerings(ft.make_jaxpr(f)(x)))  # all inlined


# ---- Primitive's own errors and effects ------------------------------------------------------
def test_primitive_errors_name_what_is_missing_or_wrong():
    with pytest.raises(TypeError, match="name must be a str"):
        xcore.Primitive(3)
    p = xcore.Primitive("bare")
    with pytest.raises(NotImplementedError, match="Abstract evaluation for 'bare' not impl"):
        ft.make_jaxpr(p.bind)(1.0)
    p.def_abstract_eval(lambda a: a)
    with pytest.raises(NotImplementedError, match="Evaluation rule for 'bare' not impl"):
        p.bind(1.0)
    p.def_abstract_eval(lambda a: "f32[]")
    with pytest.raises(TypeError, match="'bare' must return ShapedArray values, got str"):
        ft.make_jaxpr(p.bind)(1.0)
    p.def_effectful_abstract_eval(lambda a: a)
    with pytest.raises(TypeError, match=r"must return \(avals, effects\)"):
        ft.make_jaxpr(p.bind)(np.ones(2))
    m = xcore.Primitive("multi")
    m.multiple_results = True
    m.def_impl(lambda x: x)
    m.def_abstract_eval(lambda a: [a])
    with pytest.raises(TypeError, match="impl of 'multi' .* must return a list or tuple"):
        m.bind(1.0)


def test_effectful_primitives_survive_dead_code_elimination():
    calls = []

    class Announce(xcore.Effect):
        pass

    def make(name, effects):
        p = xcore.Primitive(name)
        p.def_impl(lambda x: calls.append(name) or x)
        p.def_effectful_abstract_eval(lambda a: (a, effects))
        return p
    loud, quiet = make("loud", {Announce()}), make("quiet", xcore.no_effects)

    def f(x):
        loud.bind(x)
        quiet.bind(x)
        return x + 1.0
    np.testing.assert_array_equal(ft.jit(f)(np.ones(2)), [2.0, 2.0])
    assert calls == ["loud"]


# ---- interpreters.ad helpers and rule tables ----------------------------------------------------
def _unary(name, impl):
    p = xcore.Primitive(name)
    p.def_impl(impl)
    p.def_abstract_eval(lambda *avals: avals[0])
    return p


def test_defjvp_and_defjvp2_match_finite_differences():
    cube = _unary("cube", lambda x: x ** 3)
    ad.defjvp(cube, lambda g, x: g * 3 * x ** 2)
    myexp = _unary("myexp", fnp.exp)
    ad.defjvp2(myexp, lambda g, ans, x: g * ans)
    for p, f_np in ((cube, lambda x: x ** 3), (myexp, np.exp)):
        np.testing.assert_allclose(ft.grad(p.bind)(0.7), fd_grad(f_np, 0.7), atol=FD_TOL)
        np.testing.assert_allclose(ft.jvp(p.bind, (0.7,), (2.0,))[1],
                                   2 * fd_grad(f_np, 0.7), atol=FD_TOL)


def test_deflinear_deflinear2_and_defbilinear_transpose_as_their_jvps_say():
    triple = _unary("triple", lambda x: 3 * x)
    ad.deflinear(triple, lambda ct: [3 * ct])
    np.testing.assert_allclose(ft.grad(lambda x: triple.bind(x) ** 2)(1.0), 18.0, rtol=RTOL)
    flip = _unary("flip", lambda x: x[::-1])
    ad.deflinear2(flip, lambda ct, x: [flip.bind(ct)])
    w = np.array([1.0, 2.0, 5.0])
    np.testing.assert_array_equal(ft.grad(lambda x: fnp.sum(flip.bind(x) * w))(np.ones(3)),
                                  w[::-1])
    prod = xcore.Primitive("prod2")
    prod.def_impl(lambda x, y: x * y)
    prod.def_abstract_eval(lambda a, b: a)
    ad.defbilinear(prod, lambda ct, x, y: ct * y, lambda ct, x, y: x * ct)
    gx, gy = ft.grad(lambda x, y: prod.bind(x, y) ** 2, argnums=(0, 1))(1.5, -2.0)
    np.testing.assert_allclose([gx, gy], [2 * 1.5 * 4.0, 2 * 2.25 * -2.0], rtol=RTOL)


def test_ad_value_helpers():
    aval = ShapedArray((2,), np.float32)
    assert ad.is_undefined_primal(ad.UndefinedPrimal(aval)) and not ad.is_undefined_primal(1.0)
    np.testing.assert_array_equal(ad.instantiate_zeros(ad.Zero(aval)), np.zeros(2, np.float32))
    assert ad.instantiate_zeros(1.5) == 1.5
    assert ad.zeros_like_aval(ShapedArray((3,), np.int32)).dtype == np.int32
    assert ad.add_jaxvals(1.0, 2.0) == 3.0 and ad.add_tangents(ad.Zero(aval), 4.0) == 4.0
    assert ad.add_jaxvals_p.name == "add_any"


def test_rule_tables_read_functrans_own_rules_in_jax_conventions(rng):
    x, t = rng.normal(size=3), rng.normal(size=3)
    out, tan = ad.primitive_jvps[lax.sin_p]((x,), (t,))
    np.testing.assert_allclose(out, np.sin(x), rtol=RTOL)
    np.testing.assert_allclose(tan, np.cos(x) * t, rtol=RTOL)
    ct = ad.get_primitive_transpose(lax.neg_p)(2.0, ad.UndefinedPrimal(ShapedArray((), "f8")))
    assert float(ct[0]) == -2.0
    xs = rng.normal(size=(4, 3))
    out, d = batching.fancy_primitive_batchers[lax.sin_p](batching.AxisData(None, 4), [xs], [0])
    np.testing.assert_array_equal(out, np.sin(xs))
    assert d == 0 and lax.sin_p in batching.primitive_batchers
    assert ad.primitive_jvps[multiply_add_p] is _ma_jvp  # a library's rule, as it was set
    assert multiply_add_p in list(ad.primitive_jvps)
    assert "sin" not in ad.primitive_jvps and ad.primitive_jvps.get("sin") is None


def test_rule_table_errors():
    p = _unary("ruleless", lambda x: x)
    with pytest.raises(TypeError, match="must be callable"):
        ad.primitive_jvps[p] = "rule"
    with pytest.raises(TypeError, match="expected a primitive, got str"):
        ad.primitive_jvps["sin"] = lambda *a: a
    with pytest.raises(NotImplementedError, match="Transpose rule .* for 'ruleless'"):
        ad.get_primitive_transpose(p)
    with pytest.raises(NotImplementedError, match="differentiation rule for 'ruleless'"):
        ft.grad(p.bind)(1.0)
    ad.primitive_jvps[p] = lambda primals, tangents: primals[0]
    with pytest.raises(TypeError, match="JVP rule of 'ruleless' must return a pair"):
        ft.jvp(p.bind, (1.0,), (1.0,))
    del ad.primitive_jvps[p]
    assert p not in ad.primitive_jvps
    ad.primitive_jvps[p] = lambda primals, tangents: (p.bind(*primals), p.bind(*tangents))
    ad.primitive_transposes[p] = lambda ct, x: []
    with pytest.raises(TypeError, match="transpose rule of 'ruleless' must return"):
        ft.grad(p.bind)(1.0)
    with pytest.raises(TypeError, match="defjvp is for primitives with one output"):
        ad.defjvp(sincos_p, None)
    with pytest.raises(NotImplementedError, match="batching rule for 'ruleless'"):
        ft.vmap(p.bind)(np.ones(2))
    batching.primitive_batchers[p] = lambda args, dims: args[0]
    with pytest.raises(TypeError, match="batching rule of 'ruleless' must return a pair"):
        ft.vmap(p.bind)(np.ones(2))


# ---- interpreters.batching --------------------------------------------------------------------
def test_axis_and_fancy_batchers_are_given_the_axis():
    seen = []
    p = _unary("axis_aware", lambda x: x)

    def rule(size, name, trace_type, args, dims):
        seen.append((size, name))
        return p.bind(*args), dims[0]
    batching.axis_primitive_batchers[p] = rule
    ft.vmap(p.bind, axis_name="i")(np.ones((3, 2)))
    q = _unary("fancy", lambda x: x)

    def fancy(axis_data, args, dims):
        seen.append((axis_data.size, axis_data.name))
        return q.bind(*args), dims[0]
    batching.fancy_primitive_batchers[q] = fancy
    ft.vmap(q.bind)(np.ones((5, 2)))
    assert seen == [(3, "i"), (5, None)]


def test_an_unbatched_rule_output_is_the_same_for_the_whole_batch():
    # equinox's unvmap_any: reduces over the batch too, returns not_mapped
    any_p = _unary("unvmap_any", lambda x: fnp.any(x))
    any_p.def_abstract_eval(lambda a: ShapedArray((), np.bool_))
    batching.primitive_batchers[any_p] = lambda args, dims: (any_p.bind(args[0]), None)
    mlir.register_lowering(any_p, mlir.lower_fun(fnp.any, multiple_results=False))
    x = np.array([[False, False], [False, True]])
    for f in (ft.vmap(any_p.bind), ft.jit(ft.vmap(any_p.bind))):
        np.testing.assert_array_equal(f(x), [True, True])


def test_defvectorized_and_defbroadcasting_match_python_loops(rng):
    sq = _unary("sq", lambda x: x * x)
    batching.defvectorized(sq)
    xs = rng.normal(size=(2, 3))
    np.testing.assert_array_equal(ft.vmap(sq.bind, in_axes=1)(xs), (xs * xs).T)
    hyp = xcore.Primitive("hyp")
    hyp.def_impl(lambda x, y: np.hypot(x, y))
    hyp.def_abstract_eval(lambda a, b: ShapedArray(np.broadcast_shapes(a.shape, b.shape),
                                                   a.dtype))
    batching.defbroadcasting(hyp)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(4,))
    got = ft.vmap(hyp.bind, in_axes=(1, None))(x, y)
    np.testing.assert_array_equal(got, np.stack([np.hypot(x[:, i], y) for i in range(3)]))
    got = ft.vmap(hyp.bind, in_axes=(None, 0))(y, x.T)
    np.testing.assert_array_equal(got, np.stack([np.hypot(y, x[:, i]) for i in range(3)]))
    got = ft.vmap(hyp.bind, in_axes=(0, None))(x, 2.0)
    np.testing.assert_array_equal(got, np.hypot(x, 2.0))
    vec2 = xcore.Primitive("vec2")
    vec2.def_impl(lambda x, y: x + y)
    vec2.def_abstract_eval(lambda a, b: a)
    batching.defvectorized(vec2)
    with pytest.raises(ValueError, match="'vec2' .* same axis, got batch dims"):
        ft.vmap(vec2.bind, in_axes=(0, 1))(np.ones((2, 2)), np.ones((2, 2)))


def test_batching_helpers():
    assert batching.bdim_at_front(fnp.ones((2, 3)), 1, 3).shape == (3, 2)
    assert batching.bdim_at_front(1.0, batching.not_mapped, 4).shape == (4,)
    b = batching.broadcast(fnp.arange(3.0), 2, 1)
    np.testing.assert_array_equal(b, np.repeat(np.arange(3.0)[:, None], 2, axis=1))


# ---- extend.core ----------------------------------------------------------------------------
def test_every_jaxpr_is_a_closed_jaxpr():
    j = ft.make_jaxpr(lambda x: x * fnp.arange(3.0))(1.0)
    assert isinstance(j, xcore.ClosedJaxpr) and isinstance(j.jaxpr, xcore.Jaxpr)
    assert issubclass(xcore.Jaxpr, xcore.ClosedJaxpr) and not isinstance(1, xcore.ClosedJaxpr)
    new = xcore.ClosedJaxpr(j.jaxpr, [np.ones(3)])
    np.testing.assert_array_equal(xcore.jaxpr_as_fun(new)(2.0)[0], [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(xcore.jaxpr_as_fun(j, 2.0)()[0], [0.0, 2.0, 4.0])
    with pytest.raises(TypeError, match="has 1 constvars, got 0 consts"):
        xcore.ClosedJaxpr(j.jaxpr, [])
    with pytest.raises(TypeError, match="expected a Jaxpr, got list"):
        xcore.ClosedJaxpr([], [])
    inner = ft.make_jaxpr(ft.jit(fnp.sin))(1.0)
    assert [len(s.eqns) for s in xcore.subjaxprs(inner)] == [1]
    assert isinstance(inner.eqns[0], xcore.JaxprEqn)


def test_mapped_and_unmapped_avals():
    a = ShapedArray((2, 3), np.float32)
    assert xcore.mapped_aval(3, 1, a) == ShapedArray((2,), np.float32)
    assert xcore.mapped_aval(3, None, a) is a
    assert xcore.unmapped_aval(4, 1, a) == ShapedArray((2, 4, 3), np.float32)
    assert xcore.unmapped_aval(4, None, a) is a
    with pytest.raises(ValueError, match="f32\\[2,3\\] has no axis 0 of size 3"):
        xcore.mapped_aval(3, 0, a)
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        xcore.unmapped_aval(4, 3, a)


def test_trace_state_and_concreteness():
    outside = xcore.get_opaque_trace_state()
    seen = []
    ft.jit(lambda x: seen.append(xcore.get_opaque_trace_state()) or x)(1.0)
    assert outside == xcore.get_opaque_trace_state() and seen[0] != outside
    assert xcore.concrete_or_error(int, fnp.array(3)) == 3
    with pytest.raises(ConcretizationTypeError):
        ft.jit(lambda x: xcore.concrete_or_error(float, x, "in a test"))(1.0)
    assert xcore.valid_jaxtype(np.ones(2)) and not xcore.valid_jaxtype("a")
    assert xcore.primal_dtype_to_tangent_dtype(np.int8) == ft.dtypes.float0


def test_primitive_objects_are_the_ones_in_jaxprs():
    from functrans.extend.core import primitives as P
    assert ft.make_jaxpr(ft.jit(fnp.sin))(1.0).eqns[0].prim is P.jit_p
    assert ft.make_jaxpr(lax.sin)(1.0).eqns[0].prim is lax.sin_p is P.sin_p
    assert lax.scatter_add_p.name == "scatter-add" and P.add_jaxvals_p.name == "add_any"
    f = ft.custom_jvp(fnp.sin)
    f.defjvp(lambda p, t: (fnp.sin(p[0]), t[0]))
    assert ft.make_jaxpr(f)(1.0).eqns[0].prim is P.custom_jvp_call_p
    with pytest.raises(AttributeError, match="no primitive for JAX's clamp_p"):
        P.clamp_p
    with pytest.raises(AttributeError):
        lax.top_k_p
    with pytest.raises(ImportError):
        from functrans.extend.core.primitives import xla_pmap_p  # noqa: F401,F811


def test_call_primitives(rng):
    from functrans.extend.core.primitives import call_p, closed_call_p
    body = ft.make_jaxpr(lambda x: fnp.sin(x) * x)(np.ones(3))
    x = rng.normal(size=3)

    def f(x):
        return fnp.sum(closed_call_p.bind(x, call_jaxpr=body)[0])
    np.testing.assert_allclose(f(x), np.sum(np.sin(x) * x), rtol=RTOL)
    np.testing.assert_allclose(ft.jit(f)(x), np.sum(np.sin(x) * x), rtol=RTOL)
    np.testing.assert_allclose(ft.grad(f)(x), fd_grad(lambda v: np.sum(np.sin(v) * v), x),
                               atol=FD_TOL)
    xs = rng.normal(size=(2, 3))
    np.testing.assert_allclose(ft.vmap(f)(xs), [np.sum(np.sin(r) * r) for r in xs], rtol=RTOL)
    out = call_p.bind(lambda v: [v * 2.0], x)  # JAX's form: the function first
    np.testing.assert_array_equal(out[0], x * 2.0)
    assert ft.make_jaxpr(lambda v: call_p.bind(lambda w: [w + 1.0], v))(1.0).eqns[0].prim \
        is call_p._core
    with pytest.raises(TypeError, match="operand 0 has type f64\\[2\\]"):
        closed_call_p.bind(np.ones(2), call_jaxpr=body)


# ---- linear_util and api_util ----------------------------------------------------------------
def test_numpyro_provenance_pattern():
    from functrans import api_util
    from functrans.extend import linear_util as lu
    from functrans.tree_util import tree_flatten, tree_unflatten

    def fn(x, y, z):
        return {"a": x + y, "b": z}
    kwargs = dict(x=1.0, y=2.0, z=3.0)
    args, in_tree = tree_flatten(((), kwargs))
    info = api_util.debug_info("eval_provenance fn", fn, (), kwargs)
    assert info.arg_names == ("x", "y", "z") and info.func_name == "fn"
    wrapped, out_tree = api_util.flatten_fun(lu.wrap_init(fn, debug_info=info), in_tree)
    jaxpr = ft.make_jaxpr(wrapped.call_wrapped)(*args)
    deps = {v: {n} for v, n in zip(jaxpr.jaxpr.invars, kwargs)}
    for e in jaxpr.eqns:
        deps.update({o: set().union(*[deps.get(i, set()) for i in e.inputs]) for o in e.outputs})
    result = tree_unflatten(out_tree(), [deps.get(v, set()) for v in jaxpr.outvars])
    assert result == {"a": {"x", "y"}, "b": {"z"}}


def test_transformations_and_stores():
    from functrans.extend import linear_util as lu

    @lu.transformation
    def double_input(x):
        out = yield (2 * x,), {}
        yield out + 1

    @lu.transformation_with_aux
    def with_sign(x):
        out = yield (x,), {}
        yield out, out > 0
    fun, sign = with_sign(double_input(lu.wrap_init(lambda x, k: x * k, {"k": 10})))
    assert fun.call_wrapped(3) == 61 and sign() is True
    with pytest.raises(lu.StoreException, match="Store occupied"):
        fun.call_wrapped(3)
    fun2, aux2 = with_sign(lu.wrap_init(lambda x: x))
    with pytest.raises(lu.StoreException, match="Store empty"):
        aux2()
    assert lu.merge_linear_aux(sign, aux2) == (True, True)
    with pytest.raises(TypeError, match="expected a function"):
        lu.wrap_init(3)


def test_cache_restores_the_auxiliary_outputs_of_a_cached_call():
    from functrans import api_util
    from functrans.extend import linear_util as lu
    from functrans.tree_util import tree_flatten
    calls = []

    @lu.cache
    def run(fun, *args):
        calls.append(args)
        return fun.call_wrapped(*args)

    def g(p):
        return {"sum": p[0] + p[1]}
    leaves, in_tree = tree_flatten(((1.0, 2.0),))
    outs = []
    for _ in range(2):
        fun, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(g), in_tree)
        outs.append((run(fun, *leaves), out_tree()))
    assert len(calls) == 1 and outs[0] == outs[1] == ([3.0], tree_flatten({"sum": 0})[1])


def test_argnums_partial_debug_info_and_abstractify():
    from functrans import api_util
    from functrans.extend import linear_util as lu
    g, dyn = api_util.argnums_partial(lu.wrap_init(lambda a, b, c: a - b * c), (0, -1),
                                      (10, 2, 3))
    assert dyn == (10, 3) and g.call_wrapped(*dyn) == 4
    with pytest.raises(ValueError, match="Non-hashable static arguments.*index 1"):
        api_util.argnums_partial(lu.wrap_init(lambda a, b: a), 0, (1, [2]))
    with pytest.raises(ValueError, match="argument number 5 is out of range"):
        api_util.argnums_partial(lu.wrap_init(lambda a: a), 5, (1,))

    def h(x, *rest, k=1, **kw):
        return x
    info = api_util.debug_info("jit", h, ({"a": 1}, 2, (3, 4)), {"k": 5, "zz": [6]},
                               static_argnums=(1,))
    assert info.arg_names == ("x['a']", "rest[1][0]", "rest[1][1]", "k", "kw['zz'][0]")
    assert api_util.shaped_abstractify(ft.ShapeDtypeStruct((2,), "float32")) == \
        ShapedArray((2,), np.float32)
    with pytest.raises(ValueError, match="length mismatch"):
        api_util.safe_map(lambda a, b: a, [1], [1, 2])


# ---- custom_derivatives ----------------------------------------------------------------------
def test_symbolic_zeros_in_custom_jvp():
    from functrans.custom_derivatives import SymbolicZero, custom_jvp
    seen = []

    @custom_jvp
    def f(x, y):
        return x * y

    def f_jvp(primals, tangents):
        seen.append([type(t).__name__ for t in tangents])
        (x, y), (tx, ty) = primals, tangents
        assert isinstance(ty, SymbolicZero) and ty.shape == () and ty.dtype == np.float64
        return x * y, SymbolicZero(tx.aval) if isinstance(tx, SymbolicZero) else tx * y
    f.defjvp(f_jvp, symbolic_zeros=True)
    assert float(ft.grad(f)(2.0, 3.0)) == 3.0
    assert seen[-1][1] == "SymbolicZero"
    assert float(ft.grad(lambda x: f(x, 3.0) + x)(2.0)) == 4.0


def test_symbolic_zeros_in_custom_vjp(rng):
    from functrans.custom_derivatives import (CustomVJPPrimal, SymbolicZero, custom_vjp,
                                              custom_vjp_primal_tree_values)
    seen = {}

    @custom_vjp
    def f(x, params):
        return x * params["w"], x + params["b"]

    def fwd(x, params):
        seen["perturbed"] = (x.perturbed, params["w"].perturbed, params["b"].perturbed)
        x, params = custom_vjp_primal_tree_values((x, params))
        return f(x, params), (x, params["w"])

    def bwd(res, cts):
        x, w = res
        ct_prod, ct_sum = cts
        seen["ct_sum"] = type(ct_sum)
        return ct_prod * w, None  # None for all of params
    f.defvjp(fwd, bwd, symbolic_zeros=True)
    params = {"w": 3.0, "b": 1.0}
    assert float(ft.grad(lambda x: f(x, params)[0])(2.0)) == 3.0
    assert seen == {"perturbed": (True, False, False), "ct_sum": SymbolicZero}
    xs = rng.normal(size=4)
    got = ft.vmap(ft.grad(lambda x: f(x, params)[0] * x))(xs)
    np.testing.assert_allclose(got, 6.0 * xs, rtol=RTOL)  # d/dx (3x * x)
    with pytest.raises(TypeError, match="expected CustomVJPPrimal leaves"):
        custom_vjp_primal_tree_values([1.0])
    assert CustomVJPPrimal(1.0, False).value == 1.0


def test_zero_from_primal_and_closure_convert():
    from functrans.custom_derivatives import SymbolicZero, closure_convert, zero_from_primal
    z = zero_from_primal({"a": np.ones(2, np.float32), "i": np.int32(1)})
    assert z["a"].dtype == np.float32 and not np.any(z["a"])
    assert isinstance(zero_from_primal(1.0, symbolic_zeros=True), SymbolicZero)

    def outer(w):
        h, consts = closure_convert(lambda x: fnp.sin(x * w), 1.0)
        assert len(consts) == 1
        return h(0.5, *consts)
    np.testing.assert_allclose(ft.grad(outer)(2.0), fd_grad(lambda w: np.sin(0.5 * w), 2.0),
                               atol=FD_TOL)
    h, consts = closure_convert(lambda x: x * 2.0, 1.0)
    assert consts == [] and h(3.0) == 6.0
    with pytest.raises(TypeError, match="same Pytree structure as the example arguments"):
        h((3.0,))


def test_linear_call_transposes_with_the_given_transpose():
    from functrans.custom_derivatives import linear_call

    def div_add(x, denom):  # JAX's example: the transpose of x / r is ct / r
        return x + linear_call(lambda r, x: x / r, lambda r, ct: ct / r, denom, x)

    def transpose(f):
        return lambda y: ft.linear_transpose(f, 1.0)(y)[0]
    assert float(div_add(9.0, 3.0)) == 12.0 and float(ft.jit(div_add)(9.0, 3.0)) == 12.0
    assert float(transpose(lambda x: div_add(x, 3.0))(18.0)) == 24.0
    np.testing.assert_allclose(ft.grad(div_add)(9.0, 3.0), 4.0 / 3.0, rtol=RTOL)
    np.testing.assert_allclose(ft.jit(ft.grad(div_add))(9.0, 3.0), 4.0 / 3.0, rtol=RTOL)

    def custom_id(x):  # a deliberately "wrong" transpose shows which one runs
        return linear_call(lambda _, x: x, lambda _, ct: 7.0 * ct, (), x)
    assert float(transpose(custom_id)(1.0)) == 7.0
    assert float(transpose(transpose(custom_id))(1.0)) == 1.0
    with pytest.raises(TypeError, match="residual arguments .* must not be differentiated"):
        ft.grad(div_add, argnums=1)(9.0, 3.0)
    bad = lambda x: linear_call(lambda _, x: x, lambda _, ct: (ct, ct), (), x)  # noqa: E731
    with pytest.raises(TypeError, match="transpose's output pytree structure"):
        transpose(bad)(1.0)


# ---- interpreters.partial_eval ---------------------------------------------------------------
def test_partial_eval_public_pieces():
    from functrans.interpreters import partial_eval as pe
    known, unknown = pe.PartialVal.known(2.0), pe.PartialVal.unknown(ShapedArray((3,), "i4"))
    assert known.is_known() and known.get_known() == 2.0 and unknown.get_known() is None
    assert unknown.get_aval() == ShapedArray((3,), np.int32)
    with pytest.raises(ValueError, match="exactly one"):
        pe.PartialVal((None, None))
    j = ft.make_jaxpr(lambda x, y, z: (fnp.sin(x), y * 2))(1.0, 2.0, 3.0)
    new, used = pe.dce_jaxpr(j, [True, False])
    assert used == [True, False, False] and len(new.invars) == 1 and len(new.eqns) == 1
    new, used = pe.dce_jaxpr(j, [False, True], instantiate=[False, False, True])
    assert used == [False, True, True] and len(new.invars) == 2
    with pytest.raises(ValueError, match="used_outputs needs 2 entries"):
        pe.dce_jaxpr(j, [True])
    jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(lambda x: [x + 1], [j.in_avals[0]])
    assert out_avals == [ShapedArray((), np.float64, True)] and consts == []
    with pytest.raises(NotImplementedError, match="keep_inputs"):
        pe.trace_to_jaxpr_dynamic(lambda x: [x], [j.in_avals[0]], keep_inputs=[False])


# ---- through ``import jax`` ------------------------------------------------------------------
def test_a_library_primitive_written_against_jax(tmp_path):
    import os
    import subprocess
    import sys
    import textwrap
    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        import jax.extend.core as jex
        from jax.extend.core.primitives import jit_p, call_p, closed_call_p
        from jax.interpreters import ad, batching, mlir
        import jax.custom_derivatives, jax.api_util, jax.extend.linear_util
        p = jex.Primitive("twice")
        p.def_impl(lambda x: 2 * x)
        p.def_abstract_eval(lambda a: jax.core.ShapedArray(a.shape, a.dtype))
        ad.deflinear2(p, lambda ct, x: [p.bind(ct)])
        batching.defvectorized(p)
        mlir.register_lowering(p, mlir.lower_fun(lambda x: 2 * x, multiple_results=False))
        f = lambda x: jnp.sum(p.bind(x) ** 2)
        g = jax.jit(jax.vmap(jax.grad(f)))(jnp.ones((2, 3)))
        assert g.dtype == np.float32 and np.all(np.asarray(g) == 8.0), g
        print("ok")
        """)
    (tmp_path / "prog.py").write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    env.pop("JAX_ENABLE_X64", None)
    run = subprocess.run([sys.executable, "-m", "functrans.as_jax", str(tmp_path / "prog.py")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-3000:]


def test_trace_main_tells_a_transformations_tracers_from_others():
    # equinox's filter_jvp keeps the outputs whose tracer._trace.main is the jvp's own
    # (find_top_trace(...).main inside the function differentiated).
    seen = {}

    def f(x, c):
        main = xcore.find_top_trace([x]).main
        y = x * 2.0
        seen["own"] = isinstance(y, ad.JVPTracer) and y._trace.main is main
        seen["closed_over"] = isinstance(c, ad.JVPTracer) and c._trace.main is main
        return y

    def outer(c):
        return ft.jvp(lambda x: f(x, c), (1.0,), (1.0,))[1]

    assert float(ft.jvp(outer, (3.0,), (1.0,))[0]) == 2.0
    assert seen == {"own": True, "closed_over": False}


def test_a_lowering_that_only_emits_python_callbacks_runs_them_on_the_host():
    # equinox's noinline lowers to mlir.emit_python_callback: jit runs the callbacks as host
    # steps (pure ones as pure_callback, ones with side effects as io_callback), chained as
    # the rule chains them.
    calls = []

    def double(v):
        calls.append("double")
        return [np.asarray(v) * 2]

    def add(a, b):
        calls.append("add")
        return (np.asarray(a) + np.asarray(b),)

    def rule(ctx, x, y):
        (d,), _, keep = mlir.emit_python_callback(ctx, double, None, [x], ctx.avals_in[:1],
                                                   ctx.avals_out, has_side_effect=False)
        ctx.module_context.add_keepalive(keep)
        out, _, _ = mlir.emit_python_callback(ctx, add, None, [d, y], ctx.avals_in,
                                              ctx.avals_out, has_side_effect=True)
        return out

    p = xcore.Primitive("host_double_add")
    p.def_impl(lambda x, y: np.asarray(x) * 2 + np.asarray(y))
    p.def_abstract_eval(lambda a, b: a)
    mlir.register_lowering(p, rule)
    f = ft.jit(lambda x, y: p.bind(x, y) - 1.0)
    np.testing.assert_array_equal(f(np.arange(3.0), np.ones(3)), [0.0, 2.0, 4.0])
    assert calls == ["double", "add"]
    expanded = str(expand_lowerings(ft.make_jaxpr(p.bind)(np.arange(3.0), np.ones(3))))
    assert "pure_callback" in expanded and "io_callback" in expanded
    # The side-effecting callback runs even when the result is unused.
    calls.clear()
    ft.jit(lambda x, y: (p.bind(x, y), x)[1])(np.arange(3.0), np.ones(3))
    assert calls == ["double", "add"]


def test_emit_python_callback_outside_a_lowering_or_with_tokens_is_refused():
    with pytest.raises(NotImplementedError, match="functrans has no MLIR"):
        mlir.emit_python_callback(object(), print, None, [], [], [], has_side_effect=True)
    p = xcore.Primitive("ordered_callback")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda a: a)
    mlir.register_lowering(p, lambda ctx, x: mlir.emit_python_callback(
        ctx, lambda v: [v], object(), [x], ctx.avals_in, ctx.avals_out,
        has_side_effect=True, returns_token=True)[0])
    with pytest.raises(NotImplementedError, match="'ordered_callback'.*MLIR") as info:
        ft.jit(p.bind)(1.0)
    assert "tokens" in str(info.value.__cause__)


def test_source_info_util_exclusion_makes_recorded_lines_the_callers(tmp_path):
    # A library registered with register_exclusion is skipped: the equation it binds is
    # recorded at its caller's line (flax registers its own directory this way).
    from functrans.extend import source_info_util
    lib = tmp_path / "srclib_mod.py"
    lib.write_text("import functrans.numpy as fnp\ndef double(x):\n    return x * 2.0\n")
    import importlib.util
    spec = importlib.util.spec_from_file_location("srclib_mod", lib)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def eqn_file(f):
        return ft.make_jaxpr(f)(1.0).jaxpr.eqns[0].source.filename

    assert eqn_file(mod.double) == str(lib)
    source_info_util.register_exclusion(str(lib))
    assert eqn_file(mod.double) == __file__
    here = source_info_util.current()
    assert here.filename == __file__ and here.function.startswith("test_source_info")
