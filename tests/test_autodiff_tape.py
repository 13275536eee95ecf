"""Eager reverse mode on the tape (``transforms/autodiff/tape.py``) against the general path.

Outside every transformation, ``vjp``/``grad`` record cached per-primitive linearizations on a
tape; under a transformation they stage the whole linear program and transpose it. Both apply
the same JVP, partial-evaluation and transpose rules, equation by equation and in the same
order, so the tape must reproduce the general path bit for bit (not within a tolerance) for
every differentiable primitive. test_autodiff checks the derivatives themselves (finite
differences); here the two paths, the cache, the fallbacks and the API's edges.
"""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.core import trace as trace_module
from functrans.core.avals import ShapedArray
from functrans.core.trace import Primitive, get_aval
from functrans.transforms.autodiff import tape
from functrans.transforms.autodiff.api import linearize_flat
from functrans.transforms.autodiff.jvp import Zero, instantiate, jvp_rules
from functrans.transforms.autodiff.transpose import backward_pass
from functrans.tree_util import tree_flatten, tree_unflatten

from programs import build, programs
from test_autodiff import CASES


def _flat(f, args):
    leaves, tree = tree_flatten(args)
    return (lambda *xs: tree_flatten(f(*tree_unflatten(tree, xs)))[0]), leaves


def _cotangents(outs, seed):
    rng = np.random.default_rng(seed)
    return [Zero(get_aval(o)) if get_aval(o).dtype.kind not in "fc"
            else np.asarray(rng.standard_normal(np.shape(o)), get_aval(o).dtype) for o in outs]


def _general_vjp(flat, leaves, cts):
    outs, jaxpr, _ = linearize_flat(flat, leaves)
    n = len(jaxpr.invars)
    return outs, backward_pass(jaxpr, [True] * n, [None] * n, cts)


def _tape_vjp(flat, leaves, cts):
    mask = [get_aval(x).dtype.kind in "fc" for x in leaves]
    outs, backward = tape.vjp_on_tape(flat, [fnp.asarray(x) for x in leaves], mask)
    return outs, backward(cts)


def _assert_same(a, b, what):
    a, b = instantiate(a), instantiate(b)
    assert get_aval(a).weak_type == get_aval(b).weak_type, what
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    np.testing.assert_array_equal(a, b, err_msg=what)


FLOAT64_ONLY = {"triangular_solve"}  # its case closes over a float64 matrix
PATH_CASES = [(n, np.float64) for n in sorted(CASES)] + \
    [(n, np.float32) for n in sorted(set(CASES) - FLOAT64_ONLY)]


@pytest.mark.parametrize("name, dtype", PATH_CASES)
def test_tape_matches_the_general_path_bit_for_bit(name, dtype):
    f, args = CASES[name]
    args = tuple(np.asarray(a, dtype) if np.asarray(a).dtype == np.float64 else a
                 for a in args)
    flat, leaves = _flat(f, args)
    outs_general, _, _ = linearize_flat(flat, leaves)
    cts = _cotangents(outs_general, seed=len(name))
    outs_general, cts_general = _general_vjp(flat, leaves, cts)
    tape._cache.clear()
    for call in ("first (per call)", "second (cached)"):
        outs_tape, cts_tape = _tape_vjp(flat, leaves, cts)
        for a, b in zip(outs_general, outs_tape):
            _assert_same(a, b, f"{name}, {call}: primal output")
        for i, (a, b) in enumerate(zip(cts_general, cts_tape)):
            _assert_same(a, b, f"{name}, {call}: cotangent of input {i}")


@given(programs, st.sampled_from([np.float64, np.float32]), st.integers(0, 2**32 - 1))
def test_random_programs_tape_matches_the_general_path_bit_for_bit(prog, dtype, seed):
    rng = np.random.default_rng(seed)
    f = build(prog)
    x = rng.standard_normal(3).astype(dtype)
    ct = rng.standard_normal(3).astype(dtype)
    flat = lambda v: [f(v)]  # noqa: E731
    _, want = _general_vjp(flat, [x], [ct])
    tape._cache.clear()
    for _ in range(2):  # a signature's first use is linearized per call, its second cached
        _, got = _tape_vjp(flat, [x], [ct])
        _assert_same(want[0], got[0], f"program {prog}")


def test_eager_grad_runs_on_the_tape_and_reuses_its_linearizations(monkeypatch):
    built = []
    real = tape.Linearized.__init__

    def counting(self, prim, *rest):
        built.append(prim.name)
        real(self, prim, *rest)

    monkeypatch.setattr(tape.Linearized, "__init__", counting)
    tape._cache.clear()
    f = lambda x: fnp.sum(fnp.sin(x) * x)  # noqa: E731
    g = ft.grad(f)
    x = np.linspace(0.1, 1.0, 7)
    first = g(x)
    assert built == []  # a signature's first use is linearized per call
    np.testing.assert_allclose(first, np.cos(x) * x + np.sin(x), rtol=1e-15)
    np.testing.assert_array_equal(g(x), first)
    assert sorted(built) == ["mul", "reduce_sum", "sin"]  # its second builds the cache
    np.testing.assert_array_equal(g(x), first)
    assert len(built) == 3  # later calls trace nothing
    g(np.linspace(0.1, 1.0, 5))
    g(np.linspace(0.1, 1.0, 5))
    assert len(built) == 6  # a new shape is a new signature


def _value_dependent_primitive():
    """A toy primitive whose JVP rule branches on the primal value (so it can only be
    linearized with concrete values), registered for one test."""
    p = Primitive("toy_relu", impl=lambda x: [np.maximum(x, 0.0)],
                  abstract_eval=lambda a: [ShapedArray(a.shape, a.dtype)])

    def jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        slope = 1.0 if float(fnp.sum(x)) > 0 else 0.5  # needs the concrete value
        return [p.bind1(x)], [t * slope]

    jvp_rules[p] = jvp
    return p


def test_a_rule_that_needs_values_is_linearized_per_call():
    p = _value_dependent_primitive()
    try:
        g = ft.grad(lambda x: fnp.sum(p.bind1(x) * x))
        x = np.array([1.0, -0.5, 2.0])
        relu = np.maximum(x, 0)
        np.testing.assert_allclose(g(x), relu + x, rtol=1e-15)
        np.testing.assert_allclose(g(-x), np.maximum(-x, 0) + 0.5 * -x, rtol=1e-15)
        key = (p, ft.config.enable_x64, (True,), get_aval(fnp.asarray(x)))
        assert tape._cache[key] is tape._UNCACHEABLE
    finally:
        trace_module._PRIMITIVES.remove(p)
        del jvp_rules[p]


def test_control_flow_and_custom_rules_on_the_tape_match_jit():
    @ft.custom_jvp
    def soft(x):
        return fnp.log1p(fnp.exp(x))

    soft.defjvp(lambda p, t: (soft(p[0]), t[0] * lax.logistic(p[0])))

    def f(x):
        y = lax.cond(fnp.sum(x) > 0, lambda v: v * 2.0, fnp.sin, x)
        y, _ = lax.scan(lambda c, v: (c * v + soft(v), None), y, fnp.stack([x, x * 0.5]))
        return fnp.sum(ft.checkpoint(fnp.tanh)(y))

    x = np.array([0.3, -0.2, 0.9])
    for arg in (x, -x):
        np.testing.assert_allclose(ft.grad(f)(arg), ft.jit(ft.grad(f))(arg), rtol=1e-13)


def test_outputs_without_a_cotangent_and_multi_output_primitives():
    def f(x):
        keys, vals = lax.sort((x, x * x), num_keys=1)
        return vals, keys.astype(np.int32)

    x = np.array([0.5, -1.0, 2.0])
    y, f_vjp = ft.vjp(f, x)
    ct = np.array([1.0, 2.0, 3.0])
    (got,) = f_vjp((ct, np.zeros(3, np.int32)))
    order = np.argsort(x)
    want = np.zeros(3)
    want[order] = ct * 2 * x[order]
    np.testing.assert_allclose(got, want, rtol=1e-15)
    assert y[1].dtype == np.int32


def test_vjp_function_under_jit_and_vmap_matches_eager():
    f = lambda x: fnp.sin(x) * fnp.cumsum(x)  # noqa: E731
    x = np.linspace(-1.0, 1.0, 4)
    _, f_vjp = ft.vjp(f, x)
    cts = np.eye(4)
    eager = np.stack([np.asarray(f_vjp(c)[0]) for c in cts])
    np.testing.assert_array_equal(ft.vmap(lambda c: f_vjp(c)[0])(cts), eager)
    np.testing.assert_allclose(ft.jit(lambda c: f_vjp(c)[0])(cts[1]), eager[1], rtol=1e-14)
    np.testing.assert_allclose(ft.jacrev(f)(x), eager, rtol=1e-15)


def test_aux_outputs_are_values_not_tracers():
    f = lambda x: (fnp.sum(x * x), {"double": x * 2})  # noqa: E731
    x = np.array([1.0, 2.0])
    for aux in (ft.grad(f, has_aux=True)(x)[1], ft.vjp(f, x, has_aux=True)[2],
                ft.jvp(f, (x,), (x,), has_aux=True)[2], ft.linearize(f, x, has_aux=True)[2]):
        assert type(aux["double"]) is ft.Array
        np.testing.assert_array_equal(aux["double"], x * 2)
    g = ft.jit(lambda v: ft.grad(f, has_aux=True)(v)[1]["double"])
    np.testing.assert_array_equal(g(x), x * 2)


def test_a_leaked_tape_tracer_raises_when_used():
    box = []

    def f(x):
        box.append(x * 2)
        return fnp.sum(x)

    ft.grad(f)(np.ones(2))
    with pytest.raises(ft.UnexpectedTracerError, match="leaked tracer f64"):
        fnp.sin(box[0])


def test_gradients_keep_the_inputs_types_and_do_not_alias_the_callers_arrays():
    w = np.array([1.0, 2.0, 3.0])
    g = ft.grad(lambda x, c: fnp.sum(x * c), argnums=(0, 1))
    gx, gc = g(w.astype(np.float32), w)
    assert gx.dtype == np.float32 and gc.dtype == np.float64
    np.testing.assert_array_equal(gc, w.astype(np.float32))
    w[:] = 0.0
    assert not gx.weak_type and np.asarray(gx).flags.writeable is False
    np.testing.assert_array_equal(gx, [1.0, 2.0, 3.0])
    assert ft.grad(lambda s: s * s)(3.0).weak_type  # a Python float: weakly typed, as in JAX


def test_leak_checking_accepts_the_tape_and_its_per_call_linearizations():
    tape._cache.clear()  # so the cached linearizations are traced under the check too
    f = lambda x: fnp.sum(lax.cond(x[0] > 0, fnp.sin, fnp.cos, x * x))  # noqa: E731
    x = np.array([0.5, 2.0])
    with ft.config.override(check_tracer_leaks=True):
        gs = [ft.grad(f)(x) for _ in range(3)]  # per call, building the cache, cached
    for g in gs:
        np.testing.assert_allclose(g, np.cos(x * x) * 2 * x, rtol=1e-15)


def test_a_cotangent_passed_through_is_not_the_callers_array():
    x = np.arange(4.0)
    for f in (lambda v: v, lambda v: v.reshape(2, 2)):  # the gradient: ct itself, or a view
        _, f_vjp = ft.vjp(f, x)
        ct = np.ones(np.shape(f(x)))
        (g,) = f_vjp(ct)
        assert ct.flags.writeable  # the caller's array is neither frozen...
        ct[...] = 5.0
        np.testing.assert_array_equal(g, np.ones(4))  # ...nor aliased by the gradient
