"""haiku (dm-haiku, the pinned release of tests/ecosystem.py) runs unchanged on functrans: its
modules are pure functions through ``hk.transform`` / ``hk.transform_with_state``, trained
with optax under ``jax.jit``; its own transforms (``hk.dynamic_unroll``, ``hk.scan``,
``hk.vmap``, ``hk.remat``, ``hk.lift``) and its check that JAX transforms are not mixed with
modules (which compares ``jax.extend.core.get_opaque_trace_state``) behave as on JAX.
Expected values come from the same programs on JAX 0.10.2 (CPU, float32); every program runs
in a child process under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import pytest

from ecosystem import all_close, run_as_jax

pytestmark = pytest.mark.timeout(900)


def test_mlp_init_is_deterministic_and_trains_with_adam_under_jit():
    # hk.nets.MLP([32, 32, 1], tanh) fits y = sin(2x) + x/2 on 64 sorted uniform points in
    # [-1, 2] (asymmetric: with symmetric inputs the first biases' gradients are pure
    # rounding noise, which adam normalises into full steps) with adam(1e-2), 150 steps.
    # On JAX 0.10.2: w[0, :4] = [-1.8850417, -1.7202797, 0.1960681, -0.3368251], loss
    # 1.4856293 at step 0, 0.05695731 at step 50, 0.0012532332 at step 149, 0.0011779475 after.
    # The initial weights come from the same threefry bits through erf_inv, which functrans
    # rounds correctly where XLA's float32 polynomial is 1 ulp off on a few percent of values:
    # held to 1e-6 relative. The first loss agrees to float32 rounding (1e-6); training
    # compounds reduction-order rounding (measured: 1.4e-6 relative after 150 steps): 1e-4.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import haiku as hk
        import optax

        mlp = hk.without_apply_rng(hk.transform(
            lambda x: hk.nets.MLP([32, 32, 1], activation=jax.nn.tanh)(x)))
        x = jnp.sort(jax.random.uniform(jax.random.PRNGKey(7), (64, 1), minval=-1.0,
                                        maxval=2.0), axis=0)
        y = jnp.sin(2.0 * x) + 0.5 * x
        params = mlp.init(jax.random.PRNGKey(0), x)
        again = mlp.init(jax.random.PRNGKey(0), x)
        other = mlp.init(jax.random.PRNGKey(1), x)
        leaves = jax.tree_util.tree_leaves
        same = all(bool((a == b).all()) for a, b in zip(leaves(params), leaves(again)))
        differ = any(bool((a != b).any()) for a, b in zip(leaves(params), leaves(other)))
        w0 = params["mlp/~/linear_0"]["w"][0, :4].tolist()
        opt = optax.adam(1e-2)
        st = opt.init(params)

        def loss_fn(p):
            return jnp.mean((mlp.apply(p, x) - y) ** 2)

        @jax.jit
        def step(p, s):
            l, g = jax.value_and_grad(loss_fn)(p)
            u, s = opt.update(g, s, p)
            return optax.apply_updates(p, u), s, l

        losses = []
        for i in range(150):
            params, st, l = step(params, st)
            losses.append(float(l))
        print(json.dumps({"same": same, "differ": differ, "w0": w0, "keys": sorted(params),
                          "shapes": [list(v.shape) for v in leaves(params)],
                          "losses": [losses[0], losses[50], losses[-1]],
                          "final": float(loss_fn(params))}))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["same"] and res["differ"]
    assert res["keys"] == ["mlp/~/linear_0", "mlp/~/linear_1", "mlp/~/linear_2"]
    assert res["shapes"] == [[32], [1, 32], [32], [32, 32], [1], [32, 1]]
    assert all_close(res["w0"], [-1.8850417, -1.7202797, 0.1960681, -0.3368251], 1e-6)
    assert all_close(res["losses"][:1], [1.4856293], 1e-6)
    assert all_close(res["losses"][1:] + [res["final"]], [0.05695731, 0.0012532332, 0.0011779475],
                  1e-4)


def test_convnet_with_batchnorm_and_dropout_trains_with_state_and_rng_under_jit():
    # Conv2D(4, 3) + BatchNorm + relu + MaxPool + dropout(0.25, hk.next_rng_key()) + Linear(2)
    # through hk.transform_with_state, trained on 16 random 8x8 images (label: is the top
    # half brighter) with sgd(0.1, momentum 0.9) for 30 jitted steps, a fresh key per step;
    # `is_training` is a Python flag that must reach BatchNorm concrete. On JAX 0.10.2: loss
    # 0.94488406 at step 0, 0.26522455 at step 10, 9.4994903e-4 at step 29; evaluation logits
    # of image 0 [7.5299778, -8.0017147]; BatchNorm's mean_ema[:3] [0.011882644,
    # -0.10073349, 0.089635692]. Dropout masks are the same threefry bits, so losses agree to
    # float32 rounding (measured: 1.2e-7 relative): held to 1e-5; the trained logits and the
    # moving averages compound 30 steps of rounding (measured: 7e-7 relative, 6e-8 absolute on
    # the averages): 1e-5 relative and 1e-6 absolute.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import haiku as hk
        import optax

        def net(x, is_training):
            x = hk.Conv2D(4, 3)(x)
            x = hk.BatchNorm(True, True, 0.9)(x, is_training)
            x = hk.MaxPool(2, 2, "VALID")(jax.nn.relu(x))
            x = hk.Flatten()(x)
            if is_training:
                x = hk.dropout(hk.next_rng_key(), 0.25, x)
            return hk.Linear(2)(x)

        f = hk.transform_with_state(net)
        kx, km = jax.random.split(jax.random.PRNGKey(1))
        xs = jax.random.normal(kx, (16, 8, 8, 1))
        labels = (xs[:, :4].mean(axis=(1, 2, 3)) > xs[:, 4:].mean(axis=(1, 2, 3)))
        labels = labels.astype(jnp.int32)
        params, state = f.init(km, xs, True)
        res = {"shapes": {k: {kk: list(vv.shape) for kk, vv in v.items()}
                          for k, v in params.items()}, "state_keys": sorted(state)}
        opt = optax.sgd(0.1, momentum=0.9)
        ost = opt.init(params)

        def loss(p, s, k):
            logits, s = f.apply(p, s, k, xs, True)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean(), s

        @jax.jit
        def step(p, s, o, k):
            (l, s), g = jax.value_and_grad(loss, has_aux=True)(p, s, k)
            u, o = opt.update(g, o, p)
            return optax.apply_updates(p, u), s, o, l

        losses = []
        key = jax.random.PRNGKey(2)
        for i in range(30):
            key, sub = jax.random.split(key)
            params, state, ost, l = step(params, state, ost, sub)
            losses.append(float(l))
        logits, _ = f.apply(params, state, None, xs, False)
        res["losses"] = [losses[0], losses[10], losses[-1]]
        res["eval0"] = logits[0].tolist()
        res["mean_ema"] = state["batch_norm/~/mean_ema"]["average"].ravel()[:3].tolist()
        print(json.dumps(res))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["shapes"] == {"conv2_d": {"w": [3, 3, 1, 4], "b": [4]},
                             "batch_norm": {"scale": [1, 1, 1, 4], "offset": [1, 1, 1, 4]},
                             "linear": {"w": [64, 2], "b": [2]}}
    assert res["state_keys"] == ["batch_norm/~/mean_ema", "batch_norm/~/var_ema"]
    assert all_close(res["losses"], [0.94488406, 0.26522455, 9.4994903e-4], 1e-5)
    assert all_close(res["eval0"], [7.5299778, -8.0017147], 1e-5)
    assert all_close(res["mean_ema"], [0.011882644, -0.10073349, 0.089635692], 1e-5, 1e-6)


def test_lstm_unroll_scan_vmap_remat_lift_and_the_jax_usage_check():
    # hk.LSTM(8) over 5 steps of a batch of 2 by hk.dynamic_unroll (jitted apply, and its
    # gradient), a tanh recurrence through hk.scan, hk.vmap of a Linear, hk.remat's gradient,
    # hk.lift of an inner transform's init; then, with check_jax_usage on, jax.vmap / jax.jit /
    # lax.scan around a module raise hk's JaxUsageError (its trace-level comparison) while
    # hk.vmap, hk.remat and hk.cond do not. On JAX 0.10.2 the values are those below (the same
    # threefry initial weights, so they agree to float32 rounding; measured: at most 5.6e-7
    # relative, in the scan): held to 1e-5.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import haiku as hk

        def unroll(xs):
            core = hk.LSTM(8)
            out, st = hk.dynamic_unroll(core, xs, core.initial_state(xs.shape[1]))
            return hk.Linear(1)(out), st

        def scan_fn(xs):
            lin = hk.Linear(4)
            return hk.scan(lambda c, x: (jnp.tanh(lin(x) + c), jnp.tanh(lin(x) + c).sum()),
                           jnp.zeros((4,)), xs)

        def lifted(x):
            inner = hk.transform(lambda x: hk.Linear(2)(x))
            p = hk.lift(inner.init, name="inner")(hk.next_rng_key(), x)
            return inner.apply(p, None, x)

        xs = jax.random.normal(jax.random.PRNGKey(3), (5, 2, 3))
        res = {}
        f = hk.transform(unroll)
        p = f.init(jax.random.PRNGKey(0), xs)
        out, st = jax.jit(f.apply)(p, None, xs)
        res["lstm_out"] = out[-1].ravel().tolist()
        res["lstm_h"] = st.hidden[0, :3].tolist()
        g = jax.grad(lambda p: f.apply(p, None, xs)[0].sum())(p)
        res["lstm_grad"] = [float(sum(jnp.sum(l ** 2) for l in jax.tree_util.tree_leaves(g)))]
        f2 = hk.transform(scan_fn)
        c, ys = f2.apply(f2.init(jax.random.PRNGKey(1), xs[:, 0]), None, xs[:, 0])
        res["scan"] = c.tolist() + ys.tolist()
        f3 = hk.transform(lambda x: hk.vmap(lambda r: hk.Linear(3)(r), split_rng=False)(x))
        res["vmap"] = f3.apply(f3.init(jax.random.PRNGKey(2), xs[0]), None, xs[0]).ravel().tolist()
        f4 = hk.transform(lambda x: hk.remat(lambda x: hk.Linear(3)(jnp.sin(x)))(x))
        p4 = f4.init(jax.random.PRNGKey(4), xs[0])
        g4 = jax.grad(lambda p: f4.apply(p, None, xs[0]).sum())(p4)
        res["remat_grad"] = g4["linear"]["w"][:, 0].tolist()
        f5 = hk.transform(lifted)
        p5 = f5.init(jax.random.PRNGKey(5), xs[0])
        res["lift_keys"] = sorted(p5)
        res["lift"] = f5.apply(p5, jax.random.PRNGKey(6), xs[0]).ravel().tolist()
        x = jnp.ones((3, 2))
        lin = lambda y: hk.Linear(2)(y)
        usage = {}
        with hk.config.context(check_jax_usage=True):
            for name, fn in [("jax_vmap", lambda x: jax.vmap(lin)(x)),
                             ("jax_jit", lambda x: jax.jit(lin)(x)),
                             ("jax_scan", lambda x: jax.lax.scan(lambda c, y: (c, lin(y)),
                                                                 0.0, x)[1]),
                             ("hk_vmap", lambda x: hk.vmap(lin, split_rng=False)(x)),
                             ("hk_remat", lambda x: hk.remat(lin)(x)),
                             ("hk_cond", lambda x: hk.cond(x.sum() > 0, lin,
                                                           lambda y: lin(-y), x))]:
                try:
                    t = hk.transform(fn)
                    usage[name] = float(t.apply(t.init(jax.random.PRNGKey(0), x), None, x).sum())
                except Exception as e:  # haiku._src.base.JaxUsageError (not exported)
                    usage[name] = type(e).__name__
        res["usage"] = usage
        print(json.dumps(res))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    want = {"lstm_out": [-0.17444958, -0.15869392], "lstm_h": [0.27722508, -0.04117987,
                                                               -0.03105166],
            "lstm_grad": [123.82141],
            "scan": [-0.66972578, 0.45670304, 0.88493794, 0.89853805, 0.69488156, 0.52988726,
                     2.5957131, 1.9657795, 1.5704532],
            "vmap": [-0.50745946, -0.54116303, 3.2300353, 1.8504583, 0.16126172, -2.4079382],
            "remat_grad": [-0.07115716, 0.44508535, 0.58113509],
            "lift": [-0.12254377, -2.5419981, -0.09553288, 1.605649]}
    for key, values in want.items():
        assert all_close(res[key], values, 1e-5), key
    assert res["lift_keys"] == ["inner/linear"]
    usage = res["usage"]
    assert [usage[k] for k in ("jax_vmap", "jax_jit", "jax_scan")] == ["JaxUsageError"] * 3
    assert all_close([usage[k] for k in ("hk_vmap", "hk_remat", "hk_cond")], [-7.9466324] * 3,
                  1e-5)
