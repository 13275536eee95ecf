"""``vjp``'s function is a pytree of its residuals, as JAX's ``VJP``; the expected jaxprs
and values are JAX 0.10.2's."""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans.transforms.autodiff.vjp_function import NotNeeded
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
    for _ in range(2):  # the first call linearizes now, the next ones take the cached rules
        y, f_vjp = ft.vjp(f, fnp.ones(2))
        leaves = [np.asarray(leaf) for leaf in tree_leaves(f_vjp)]
        # JAX: cos a and cos d are the residuals (the tape's are its leaves)
        for want in (np.cos(1.0), np.cos(np.sin(1.0) * 2.0)):
            assert any(leaf.shape == (2,) and np.allclose(leaf, want, rtol=1e-12)
                       for leaf in leaves)
    g = ft.grad(lambda x: ft.vjp(f, x)[1](1.0)[0])(1.0)
    np.testing.assert_allclose(g, -0.97203195, rtol=1e-6)  # JAX (float32): -0.97203195


def test_with_refs_sends_each_cotangent_to_its_target():
    # JAX's refs guide: sin_vjp.with_refs(grad_ref)(1.0) -> (GradRef(),), grad_ref = cos(1)
    _, sin_vjp = ft.vjp(fnp.sin, 1.0)
    acc = ft.new_ref(0.0)
    assert repr(sin_vjp.with_refs(acc)(1.0)) == "(GradRef(),)"
    np.testing.assert_allclose(acc[...], np.cos(1.0))
    sin_vjp.with_refs(acc)(1.0)  # accumulates
    np.testing.assert_allclose(acc[...], 2 * np.cos(1.0))
    W, x = np.ones((4, 4)), np.arange(4.0)
    _, f_vjp = ft.vjp(lambda W, x: W @ x, W, x)
    W_bar, x_bar = f_vjp.with_refs(ft.ad.GradValue(), ft.ad.DontWant())(np.ones(4))
    np.testing.assert_allclose(W_bar, np.outer(np.ones(4), x))
    assert isinstance(x_bar, ft.ad.DidntWant)
    with pytest.raises(TypeError, match="targets"):
        f_vjp.with_refs(ft.ad.GradValue())(np.ones(4))
    with pytest.raises(TypeError, match="must be a Ref"):
        f_vjp.with_refs(1.0, 2.0)


def test_with_refs_accumulates_into_a_ref_made_in_the_same_jit():
    def step(W, xs):
        acc = ft.new_ref(fnp.zeros_like(W))
        for x in xs:
            _, f_vjp = ft.vjp(lambda W: fnp.sum(fnp.tanh(W @ x)), W)
            f_vjp.with_refs(acc)(1.0)
        return ft.freeze(acc)
    W, xs = np.full((3, 3), 0.1), [np.arange(3.0), np.ones(3)]
    want = sum(ft.grad(lambda W: fnp.sum(fnp.tanh(W @ x)))(W) for x in xs)
    np.testing.assert_allclose(ft.jit(step)(W, xs), want, rtol=1e-12)


def test_fwd_and_bwd_splits_vjp_into_two_jitted_functions():
    layer = lambda W, x: fnp.tanh(x @ W)
    W, x = np.full((3, 4), 0.1), np.arange(6.0).reshape(2, 3)
    fwd, bwd = ft.fwd_and_bwd(layer, argnums=(0, 1))
    y, res = fwd(W, x)
    dW, dx = bwd(res, np.ones_like(y))
    want_W, want_x = ft.grad(lambda W, x: fnp.sum(layer(W, x)), argnums=(0, 1))(W, x)
    np.testing.assert_allclose(dW, want_W, rtol=1e-12)
    np.testing.assert_allclose(dx, want_x, rtol=1e-12)
    assert float(dW.sum()) == pytest.approx(25.6226, rel=1e-5)  # JAX (float32): 25.622604
    fwd1, bwd1 = ft.fwd_and_bwd(layer, argnums=1, jitted=False)
    y, res = fwd1(W, x)
    np.testing.assert_allclose(bwd1(res, np.ones_like(y)), want_x, rtol=1e-12)


def test_with_refs_markers_are_empty_pytrees():
    W, x = np.ones((4, 4)), np.ones(4)
    _, f_vjp = ft.vjp(lambda W, x: W @ x, W, x)
    only_W = ft.make_jaxpr(
        lambda: f_vjp.with_refs(ft.ad.GradValue(), ft.ad.DontWant())(np.ones(4)))()
    assert len(only_W.outvars) == 1  # W's cotangent; DidntWant() has no leaves
    assert ft.tree_util.tree_leaves(ft.ad.GradRef()) == []


# ---- args_res: the residuals that are the arguments themselves (JAX's VJP.args_res) --------
def layer(W, x):
    return fnp.tanh(x @ W)


def _layer_grads(W, x, ct):
    """NumPy oracle of layer's VJP."""
    d = ct * (1 - np.tanh(x @ W) ** 2)
    return x.T @ d, d @ W.T


@pytest.mark.parametrize("jitted", [False, True])
def test_args_res_holds_the_arguments_the_backward_pass_reads(jitted):
    W, x = np.ones((3, 3)), np.arange(6.0).reshape(2, 3) / 10
    vjp = ft.jit(lambda W, x: ft.vjp(layer, W, x)) if jitted else \
        (lambda W, x: ft.vjp(layer, W, x))
    _, f_vjp = vjp(W, x)
    # JAX 0.10.2: [W1, x0] for this layer (dot_general's transpose reads both operands)
    np.testing.assert_array_equal(f_vjp.args_res[0], W)
    np.testing.assert_array_equal(f_vjp.args_res[1], x)
    leaves = tree_leaves(f_vjp)
    assert len(leaves) == 2 + len(f_vjp.opaque_residuals)
    ct = np.ones((2, 3))
    for got, want in zip(f_vjp(ct), _layer_grads(W, x, ct)):
        np.testing.assert_allclose(got, want, rtol=1e-12)  # float64: rounding only


@pytest.mark.parametrize("jitted", [False, True])
def test_args_res_put_back_are_what_the_backward_pass_reads(jitted):
    W, x, ct = np.ones((3, 3)), np.arange(6.0).reshape(2, 3) / 10, np.ones((2, 3))
    vjp = ft.jit(lambda W, x: ft.vjp(layer, W, x)) if jitted else \
        (lambda W, x: ft.vjp(layer, W, x))
    _, f_vjp = vjp(W, x)
    f_vjp.args_res[0] = fnp.asarray(2 * W)
    # As JAX: the new W with the forward pass's own other residuals (tanh at the old W)
    d = ct * (1 - np.tanh(x @ W) ** 2)
    np.testing.assert_allclose(f_vjp(ct)[1], d @ (2 * W).T, rtol=1e-12)
    f_vjp.args_res[0] = NotNeeded()
    with pytest.raises(ValueError, match="put the argument back into args_res"):
        f_vjp(ct)
    f_vjp.args_res = [W]
    with pytest.raises(ValueError, match="one entry per argument"):
        f_vjp(ct)
    f_vjp.args_res = [W, (x, x)]
    with pytest.raises(ValueError, match=r"args_res\[1\] must have the structure"):
        f_vjp(ct)


def test_an_eager_vjp_rebuilt_inside_jit_does_not_run_the_function_again():
    # JAX's remat guide rebuilds f_vjp from its leaves inside jit: the backward pass reads
    # them, without running the function again (its closure may have changed since)
    W, x, ct = np.ones((3, 3)), np.arange(6.0).reshape(2, 3) / 10, np.ones((2, 3))
    calls = []

    def f(W, x):
        calls.append(1)
        return layer(W, x)

    _, f_vjp = ft.vjp(f, W, x)
    res, tree = tree_flatten(f_vjp)
    got = ft.jit(lambda *a: tree_unflatten(tree, a[:-1])(a[-1]))(*res, ct)
    for g, want in zip(got, _layer_grads(W, x, ct)):
        np.testing.assert_allclose(g, want, rtol=1e-12)
    assert calls == [1]


def test_args_res_leaves_unread_arguments_out():
    # JAX 0.10.2: sin's backward pass reads cos(x), not x; Python scalars are constants
    _, f_vjp = ft.vjp(fnp.sin, fnp.float32(2.0))
    assert repr(f_vjp.args_res) == "[NotNeeded()]"
    _, f_vjp = ft.jit(lambda x: ft.vjp(fnp.sin, x))(fnp.float32(2.0))
    assert repr(f_vjp.args_res) == "[NotNeeded()]"
    np.testing.assert_allclose(f_vjp.opaque_residuals[0], np.cos(np.float32(2.0)), rtol=1e-6)
    _, f_vjp = ft.vjp(lambda d: d["a"] * d["b"], {"a": 1.0, "b": 3.0})
    assert repr(f_vjp.args_res) == "[{'a': NotNeeded(), 'b': NotNeeded()}]"
    a = fnp.float32(2.0)
    for _ in range(2):  # the first call linearizes now, the next ones take the cached rule
        _, f_vjp = ft.vjp(lambda a: a * a, a)
        assert f_vjp.args_res[0] is a


# ---- saveable_args: arguments kept out of the saved state (JAX's VJP objects guide) ---------
@pytest.mark.parametrize("jitted", [False, True])
def test_arguments_not_saveable_must_be_put_back(jitted):
    from functrans.transforms.autodiff.vjp_function import NotSaveable
    W, x, ct = np.ones((3, 3)), np.arange(6.0).reshape(2, 3) / 10, np.ones((2, 3))

    def fwd(W, x):
        return ft.vjp(layer, W, x, saveable_args=(False, True))

    def bwd(f_vjp, W, ct):
        f_vjp.args_res[0] = W
        return f_vjp(ct)

    if jitted:
        fwd, bwd = ft.jit(fwd), ft.jit(bwd)
    _, f_vjp = fwd(W, x)
    assert isinstance(f_vjp.args_res[0], NotSaveable)
    assert not any(leaf.shape == (3, 3) for leaf in tree_leaves(f_vjp))  # W is not saved
    with pytest.raises(ValueError, match=r"needs argument\(s\) \[0\] verbatim"):
        f_vjp(ct)
    for got, want in zip(bwd(f_vjp, W, ct), _layer_grads(W, x, ct)):
        np.testing.assert_allclose(got, want, rtol=1e-12)  # float64: rounding only
    restored = f_vjp.replace(args_res=[W, f_vjp.args_res[1]])
    np.testing.assert_allclose(restored(ct)[0], _layer_grads(W, x, ct)[0], rtol=1e-12)
    assert f_vjp.structured_residuals == []


def test_saveable_args_is_a_prefix_matched_by_numbers_of_children():
    from functrans.transforms.autodiff.vjp_function import NotSaveable
    d = {"hi": np.ones((4, 5)), "bye": np.ones((3, 4))}
    _, g_vjp = ft.vjp(lambda d: d["bye"] @ d["hi"], d, saveable_args=((True, False),))
    # dict children in key order: bye saved, hi not
    assert isinstance(g_vjp.args_res[0]["hi"], NotSaveable)
    np.testing.assert_array_equal(g_vjp.args_res[0]["bye"], d["bye"])
    g_vjp.args_res = [d]  # restored with the original dict
    (d_grad,) = g_vjp(np.ones((3, 5)))
    np.testing.assert_array_equal(d_grad["hi"], np.ones((3, 4)).T @ np.ones((3, 5)))  # exact
    # an argument the backward pass does not read stays NotNeeded even when marked False
    _, f_vjp = ft.vjp(fnp.sin, fnp.float32(1.0), saveable_args=(False,))
    assert repr(f_vjp.args_res) == "[NotNeeded()]"
    np.testing.assert_allclose(f_vjp(fnp.float32(1.0))[0], np.cos(1.0), rtol=1e-6)  # float32


def test_bad_saveable_args_and_replace_are_named():
    with pytest.raises(ValueError, match=r"saveable_args at saveable_args has 1 entries, but "
                                         r"the argument there has 2 children"):
        ft.vjp(lambda a, b: a * b, 1.0, 2.0, saveable_args=(True,))
    with pytest.raises(TypeError, match="saveable_args must be a tree of bools"):
        ft.vjp(fnp.sin, 1.0, saveable_args=("no",))
    _, f_vjp = ft.vjp(fnp.sin, 1.0)
    with pytest.raises(TypeError, match="VJP.replace: unknown fields"):
        f_vjp.replace(residuals=[])


def test_an_eager_vjp_reads_the_residuals_it_holds():
    # As JAX's: the backward pass reads the VJP's leaves; sin's is cos(x)
    for _ in range(2):  # linearized now, then the cached rule
        _, f_vjp = ft.vjp(fnp.sin, fnp.full(3, 0.5))
        (res,) = f_vjp.opaque_residuals
        np.testing.assert_allclose(res, np.cos(0.5), rtol=1e-15)
        f_vjp.opaque_residuals[0] = fnp.full(3, 10.0)
        np.testing.assert_array_equal(f_vjp(fnp.ones(3))[0], np.full(3, 10.0))  # exact
