"""Control flow: values vs Python loops, derivatives vs finite differences, vmap vs loops
(batched predicates included), jit vs eager, check_jaxpr, and errors.

float64 throughout; values compare to Python-loop oracles with rtol 1e-12 (same operations,
same order), compiled code with rtol 1e-10 (SIMD transcendentals differ by a few ulp).
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import functrans as ft
import functrans.numpy as fnp
from functrans import lax
from functrans.transforms.autodiff.check import check_grads


def body(i, c):
    return c * fnp.cos(c) + 0.1 * i


def py_fori(lo, hi, x):
    for i in range(lo, hi):
        x = x * np.cos(x) + 0.1 * i
    return x


def scan_step(c, x):
    return c * fnp.sin(x) + x, c * x


def py_scan(c, xs, reverse=False):
    ys = []
    for x in (xs[::-1] if reverse else xs):
        c, y = c * np.sin(x) + x, c * x
        ys.append(y)
    return c, np.array(ys[::-1] if reverse else ys)


def branchy(x):
    return lax.cond(fnp.sum(x) > 0, lambda v: fnp.sin(v) * v, lambda v: v ** 3 - v, x)


def switchy(i, x):
    return lax.switch(i, [lambda v: v * 2, fnp.tanh, lambda v: v ** 2], x)


def whiley(x):
    return lax.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, c[1] * fnp.cos(c[1])),
                          (0, x))[1]


xs_strategy = st.lists(st.floats(-1.5, 1.5), min_size=0, max_size=6).map(np.array)


@given(st.integers(0, 3), st.integers(0, 6), st.floats(-1.5, 1.5))
def test_fori_loop_matches_python(lo, n, x):
    hi = lo + n
    want = py_fori(lo, hi, x)
    np.testing.assert_allclose(lax.fori_loop(lo, hi, body, x), want, rtol=1e-12)
    np.testing.assert_allclose(ft.jit(lambda v: lax.fori_loop(lo, hi, body, v))(x), want,
                               rtol=1e-10)
    # traced bounds: a while_loop
    traced = ft.jit(lambda a, b, v: lax.fori_loop(a, b, body, v))
    np.testing.assert_allclose(traced(lo, hi, x), want, rtol=1e-10)


@given(xs_strategy, st.floats(-1, 1), st.booleans())
def test_scan_matches_python(xs, c0, reverse):
    want_c, want_ys = py_scan(c0, xs, reverse)
    for fn in (lambda c, v: lax.scan(scan_step, c, v, reverse=reverse),
               ft.jit(lambda c, v: lax.scan(scan_step, c, v, reverse=reverse))):
        c, ys = fn(c0, xs)
        np.testing.assert_allclose(c, want_c, rtol=1e-10)
        assert np.asarray(ys).shape == (len(xs),)
        np.testing.assert_allclose(ys, want_ys.reshape(len(xs)), rtol=1e-10)


def test_scan_pytrees_map_and_length():
    def step(carry, x):
        a, b = carry["a"], carry["b"]
        return {"a": a + x[0], "b": b * 2}, (a, x[1] * b)

    xs = (fnp.arange(3.0), fnp.ones((3, 2)))
    carry, (ys_a, ys_b) = lax.scan(step, {"a": 0.0, "b": fnp.ones(2)}, xs)
    np.testing.assert_allclose(carry["a"], 3.0)
    np.testing.assert_allclose(carry["b"], [8.0, 8.0])
    np.testing.assert_allclose(ys_a, [0.0, 0.0, 1.0])
    np.testing.assert_allclose(ys_b, [[1, 1], [2, 2], [4, 4]])
    np.testing.assert_allclose(lax.map(fnp.sin, fnp.arange(4.0)), np.sin(np.arange(4.0)))
    c, ys = lax.scan(lambda c, _: (c + 1, c), 0, None, length=4)
    assert int(c) == 4 and np.asarray(ys).tolist() == [0, 1, 2, 3]


def test_cond_switch_and_while_values():
    x = np.array([0.3, -0.2])
    np.testing.assert_allclose(branchy(x), np.sin(x) * x)
    np.testing.assert_allclose(branchy(-x), (-x) ** 3 + x)
    for i, want in [(-5, x * 2), (0, x * 2), (1, np.tanh(x)), (2, x ** 2), (9, x ** 2)]:
        np.testing.assert_allclose(switchy(i, x), want)  # index clamped, as in JAX
        np.testing.assert_allclose(ft.jit(switchy)(i, x), want, rtol=1e-10)
    c = 0.7
    for _ in range(4):
        c = c * np.cos(c)
    np.testing.assert_allclose(whiley(0.7), c, rtol=1e-12)
    np.testing.assert_allclose(ft.jit(whiley)(0.7), c, rtol=1e-10)


def test_cond_old_five_argument_form():
    # cond(pred, true_operand, true_fun, false_operand, false_fun), JAX's deprecated form
    # (blackjax's NUTS uses it): each branch gets its own operand, under jit and grad too.
    def f(p, x):
        return lax.cond(p, (x, 2.0 * x), lambda t: t[0] * t[1], x, lambda v: -v)
    np.testing.assert_allclose(f(True, 3.0), 18.0)
    np.testing.assert_allclose(f(False, 3.0), -3.0)
    np.testing.assert_allclose(ft.jit(f)(True, 3.0), 18.0)
    np.testing.assert_allclose(ft.grad(f, argnums=1)(True, 3.0), 12.0)
    np.testing.assert_allclose(ft.grad(f, argnums=1)(False, 3.0), -1.0)
    with pytest.raises(TypeError, match="must be callable, got int and int"):
        lax.cond(True, 1, 2, 3)


@pytest.mark.parametrize("f, args", [
    (lambda x: lax.fori_loop(0, 4, body, x), (0.4,)),
    (lambda x: lax.scan(scan_step, x, fnp.array([0.1, 0.5, -0.3]))[0], (0.7,)),
    (lambda xs: fnp.sum(lax.scan(scan_step, 0.5, xs, reverse=True)[1]),
     (np.array([0.1, 0.5, -0.3]),)),
    (lambda w, xs: lax.scan(lambda c, x: (fnp.tanh(c * w + x), c), 0.2, xs)[0],
     (0.9, np.array([0.3, -0.1, 0.4, 0.2]))),
    (branchy, (np.array([0.3, -0.2]),)),
    (branchy, (np.array([-0.3, -0.2]),)),
    (lambda i, x: switchy(i, x), (1.0, np.array([0.3, 0.2]))),
])
def test_gradients_match_finite_differences(f, args):
    if len(args) == 2 and isinstance(args[0], float) and args[0] == 1.0:
        check_grads(lambda x: f(1, x), args[1:], order=2)  # index is not differentiable
        return
    check_grads(f, args, order=2)
    ft.check_jaxpr(ft.make_jaxpr(ft.grad(lambda *a: fnp.sum(f(*a))))(*args))
    np.testing.assert_allclose(ft.jit(ft.grad(lambda *a: fnp.sum(f(*a))))(*args),
                               ft.grad(lambda *a: fnp.sum(f(*a)))(*args), rtol=1e-10)


def test_while_loop_forward_mode_and_reverse_mode_error():
    check_grads(whiley, (0.6,), order=2, modes=("fwd",))
    with pytest.raises(TypeError, match="fori_loop with static"):
        ft.grad(whiley)(0.6)
    # a traced trip count (under jit) turns fori_loop into a while_loop: same error
    with pytest.raises(TypeError, match="Reverse-mode differentiation does not work"):
        ft.grad(ft.jit(lambda x, n: lax.fori_loop(0, n, body, x)))(0.5, 3)
    # a concrete one (eager) keeps it a scan, which differentiates
    np.testing.assert_allclose(ft.grad(lambda x, n: lax.fori_loop(0, n, body, x))(0.5, 3),
                               ft.grad(lambda x: lax.fori_loop(0, 3, body, x))(0.5))


def test_vmap_matches_loops_including_batched_predicates():
    xs = np.array([[0.3, -0.2], [-0.5, -0.1], [0.2, 0.4]])
    np.testing.assert_allclose(ft.vmap(branchy)(xs), np.stack([branchy(x) for x in xs]))
    idx = np.array([0, 2, 1])
    np.testing.assert_allclose(ft.vmap(switchy)(idx, xs),
                               np.stack([switchy(i, x) for i, x in zip(idx, xs)]))
    starts = np.array([0.2, 0.9, -0.4])
    np.testing.assert_allclose(ft.vmap(whiley)(starts), [whiley(s) for s in starts])
    # a batched predicate: each lane runs its own number of iterations
    limits = np.array([1.5, 3.0, 7.5])
    count = ft.vmap(lambda lim: lax.while_loop(lambda c: c[1] < lim,
                                               lambda c: (c[0] + 1, c[1] * 1.5 + 0.5),
                                               (0, 0.0))[0])(limits)
    want = []
    for lim in limits:
        k, v = 0, 0.0
        while v < lim:
            k, v = k + 1, v * 1.5 + 0.5
        want.append(k)
    assert np.asarray(count).tolist() == want
    np.testing.assert_array_equal(ft.jit(ft.vmap(
        lambda lim: lax.while_loop(lambda c: c[1] < lim, lambda c: (c[0] + 1, c[1] * 1.5 + 0.5),
                                   (0, 0.0))[0]))(limits), want)
    ws = np.array([0.5, 0.9])
    seq = np.array([0.3, -0.1, 0.4])
    per = ft.vmap(ft.grad(lambda w: lax.scan(lambda c, x: (fnp.tanh(c * w + x), c), 0.2,
                                             seq)[0]))(ws)
    loop = [ft.grad(lambda w: lax.scan(lambda c, x: (fnp.tanh(c * w + x), c), 0.2, seq)[0])(w)
            for w in ws]
    np.testing.assert_allclose(per, loop, rtol=1e-12)
    ys = ft.vmap(lambda s: lax.scan(scan_step, 0.5, s)[1], in_axes=1, out_axes=1)(
        np.stack([seq, seq * 2], 1))
    np.testing.assert_allclose(ys[:, 1], py_scan(0.5, seq * 2)[1], rtol=1e-12)


def test_control_flow_jaxprs_typecheck_and_print():
    for f, a in [(branchy, np.ones(2)), (whiley, 0.5),
                 (lambda x: lax.scan(scan_step, x, fnp.ones(3)), 0.5)]:
        jaxpr = ft.make_jaxpr(f)(a)
        ft.check_jaxpr(jaxpr)
        for name in ("cond", "while", "scan"):
            if name in str(jaxpr):
                break
        else:
            raise AssertionError(f"no control-flow primitive in {jaxpr}")
        ft.check_jaxpr(ft.make_jaxpr(ft.vmap(f))(np.stack([a, a])))


def test_errors_name_the_mismatch():
    with pytest.raises(TypeError, match=r"output 0 differs \(false_fun: f64\[3\]; true_fun: "
                                         r"f64\[2\]\)"):
        lax.cond(True, lambda x: x, lambda x: fnp.concatenate([x, x[:1]]), fnp.ones(2))
    # JAX's wording, which haiku's tests match
    with pytest.raises(TypeError, match="cond branch outputs must have the same pytree "
                                        "structure"):
        lax.cond(True, lambda x: (x, x), lambda x: x, 1.0)
    with pytest.raises(TypeError, match="switch branch outputs must have the same pytree "
                                        "structure"):
        lax.switch(0, [lambda x: (x, x), lambda x: x], 1.0)
    with pytest.raises(TypeError, match=r"predicate must be a scalar, got shape \(2,\)"):
        lax.cond(fnp.array([True, False]), lambda x: x, lambda x: x, 1.0)
    with pytest.raises(TypeError, match="boolean or number, got complex128"):
        lax.cond(1.5j, lambda x: x, lambda x: x, 1.0)  # a float is fine: tests/test_cond_predicate.py
    with pytest.raises(TypeError, match=r"carry leaf 0 goes in as f64\[2\] and comes out as "
                                        r"f64\[3\]"):
        lax.while_loop(lambda c: True, lambda c: fnp.ones(3), fnp.ones(2))
    with pytest.raises(TypeError, match="cond_fun must return a boolean scalar"):
        lax.while_loop(lambda c: c, lambda c: c, 1.0)
    with pytest.raises(TypeError, match=r"carry leaf 0 goes in as i32\[\] and comes out as "
                                        r"f64\[\]"):
        lax.scan(lambda c, x: (c * 1.5, x), fnp.int32(1), fnp.ones(3))
    with pytest.raises(ValueError, match="different leading axis sizes"):
        lax.scan(lambda c, x: (c, x), 0.0, (fnp.ones(3), fnp.ones(4)))
    with pytest.raises(ValueError, match="length="):
        lax.scan(lambda c, x: (c, x), 0.0, None)


def test_weak_typed_carries_take_the_body_dtype():
    out = lax.fori_loop(0, 3, lambda i, c: c + fnp.float32(0.5), 0.0)
    assert out.dtype == np.float32 and float(out) == 1.5


def test_fori_loop_index_is_weak_default_int():
    # Under x64 the index is int64, so sums past 2**31 do not wrap...
    n = 100_000
    want = sum(i * i for i in range(n))
    assert int(lax.fori_loop(0, n, lambda i, s: s + i * i, 0)) == want
    assert int(ft.jit(lambda: lax.fori_loop(0, n, lambda i, s: s + i * i, 0))()) == want
    # ...and it is weakly typed, so an int32 or float32 carry keeps its dtype.
    assert lax.fori_loop(0, 5, lambda i, s: s + i, np.int32(0)).dtype == np.int32
    assert lax.fori_loop(0, 5, lambda i, s: s + i, np.float32(0)).dtype == np.float32
    with ft.config.override(enable_x64=False):
        assert lax.fori_loop(0, 5, lambda i, s: s + i, 0).dtype == np.int32


def test_a_function_given_for_several_branches_is_traced_once():
    # As in JAX (haiku's tests count the traces): switch(i, [f, g] * 3) traces f and g once
    # each; the branches keep their own closed-over arrays (oracle: calling the branch).
    calls = []
    c, d = fnp.array([1.0, 2.0, 3.0]), fnp.array([5.0, 6.0, 7.0])

    def f(x):
        calls.append("f")
        return x * c

    def g(x):
        calls.append("g")
        return x - d

    x = np.array([0.5, -1.0, 2.0])
    for i in range(6):
        del calls[:]
        np.testing.assert_array_equal(lax.switch(i, [f, g] * 3, x), (x * c, x - d)[i % 2])
        assert sorted(calls) == ["f", "g"]
    del calls[:]
    assert float(lax.cond(False, lambda v: calls.append(1) or v * 2, lambda v: v, 3.0)) == 3.0
    twice = lambda v: calls.append(1) or v * 2  # noqa: E731
    del calls[:]
    assert float(lax.cond(False, twice, twice, 3.0)) == 6.0 and calls == [1]


def _weak(x):
    return fnp.where(x > 0, 1.0, -1.0)  # Python-scalar branches: a weakly typed float64


def _strong(x):
    return x * 2.0


@pytest.mark.parametrize("false_fun, true_fun, weak", [(_weak, _strong, True),
                                                        (_strong, _weak, False),
                                                        (_weak, _weak, True)])
def test_cond_result_is_as_weakly_typed_as_its_first_branch(false_fun, true_fun, weak):
    # JAX 0.10.2 gives cond's outputs the types of branches[0] (false_fun), weak type
    # included, whichever branch runs: read off jax.lax.cond eagerly, under jit, in
    # make_jaxpr and under jvp. (equinox's error_if is cond(pred, raise, lambda: x): x keeps
    # its weak type, which strict dtype promotion then relies on.)
    x = fnp.float64(1.0)
    f = lambda v: lax.cond(v > 0, true_fun, false_fun, v)  # noqa: E731
    assert f(x).weak_type is weak and f(-x).weak_type is weak
    assert ft.jit(f)(x).weak_type is weak
    assert ft.make_jaxpr(f)(x).out_avals[0].weak_type is weak
    assert ft.jvp(f, (x,), (x,))[0].weak_type is weak
    assert lax.switch(1, [false_fun, true_fun, true_fun], x).weak_type is weak
    # A batched predicate selects between the branches' results: weak only when all are.
    all_weak = weak and true_fun is _weak
    assert ft.vmap(f)(fnp.array([1.0, -1.0])).weak_type is all_weak


def test_cond_keeps_a_weak_int_for_strict_promotion():
    # The pattern of equinox's error_if: a weak int passed through cond still multiplies a
    # float under jax_numpy_dtype_promotion="strict" (a strong int64 would be refused).
    def f(t, pred):
        direction = fnp.where(t > 0, 1, -1)
        direction = lax.cond(pred, lambda: fnp.int64(0), lambda: direction)
        return t * direction

    with ft.numpy_dtype_promotion("strict"):
        assert float(ft.jit(f)(fnp.float64(2.5), False)) == 2.5
        # A strong first branch makes a strong result, which strict promotion refuses.
        strong = lax.cond(False, lambda: fnp.where(True, 1, -1), lambda: fnp.int64(1))
        with pytest.raises(ft.dtypes.TypePromotionError, match="strict"):
            strong * fnp.float64(1.0)
