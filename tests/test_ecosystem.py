"""JAX's libraries run unchanged on functrans (``functrans.as_jax``): a realistic program from
each, checked against what it must compute. The libraries are the pinned releases of
tests/ecosystem.py, installed without JAX; every program runs in a child process."""
from __future__ import annotations

import json

import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)


def test_optax_trains_an_mlp_with_adamw_a_schedule_and_clipping():
    # A 1-16-1 tanh MLP fits y = sin(3x) on 64 points; the loss is recorded every 100 steps.
    # Both optimizers must bring the mean squared error from above 2 to below 0.01 (the same
    # program on JAX 0.10.2: 2.19 -> 0.0024 with adam, 0.0010 with clipped adamw and the
    # schedule), and clipping must scale the gradient to global norm 1.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import optax

        key = jax.random.PRNGKey(0)
        k1, k2 = jax.random.split(key)
        params = {"w1": jax.random.normal(k1, (1, 16)) * 0.5, "b1": jnp.zeros(16),
                  "w2": jax.random.normal(k2, (16, 1)) * 0.5, "b2": jnp.zeros(1)}
        x = jnp.linspace(-1, 1, 64)[:, None]
        y = jnp.sin(3 * x)

        def loss(p):
            h = jnp.tanh(x @ p["w1"] + p["b1"])
            return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

        schedule = optax.warmup_cosine_decay_schedule(0.0, 0.05, 50, 600, 1e-3)
        results = {}
        for name, opt in [("adam", optax.adam(0.02)),
                          ("adamw", optax.chain(optax.clip_by_global_norm(1.0),
                                                optax.adamw(schedule, weight_decay=1e-4)))]:
            state = opt.init(params)

            @jax.jit
            def step(p, s):
                l, g = jax.value_and_grad(loss)(p)
                updates, s = opt.update(g, s, p)
                return optax.apply_updates(p, updates), s, l, optax.global_norm(updates)

            p, losses = params, []
            for i in range(600):
                p, state, l, _ = step(p, state)
                if i % 100 == 0:
                    losses.append(float(l))
            losses.append(float(loss(p)))
            results[name] = losses
        clip = optax.clip_by_global_norm(1.0)
        g = jax.grad(loss)(params)
        clipped, _ = clip.update(g, clip.init(params))
        results["clipped_norm"] = float(optax.global_norm(clipped))
        results["raw_norm"] = float(optax.global_norm(g))
        results["dtype"] = str(jax.tree_util.tree_leaves(p)[0].dtype)
        print(json.dumps(results))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    for name in ("adam", "adamw"):
        losses = res[name]
        assert losses[0] > 2.0 and losses[-1] < 0.01, (name, losses)
    assert res["dtype"] == "float32"
    assert res["raw_norm"] > 1.0 and abs(res["clipped_norm"] - 1.0) < 1e-5


def test_chex_assertions_and_dataclasses():
    out = run_as_jax("""
        import json
        import chex, jax, jax.numpy as jnp

        @chex.dataclass
        class State:
            step: chex.Array
            params: dict

        s = State(step=jnp.array(1), params={"w": jnp.ones(3)})
        doubled = jax.tree_util.tree_map(lambda v: v * 2, s)
        chex.assert_trees_all_close(doubled.params["w"], jnp.full(3, 2.0))
        chex.assert_shape(s.params["w"], (3,))
        chex.assert_rank([s.step, s.params["w"]], [0, 1])
        chex.assert_type(s.params["w"], float)
        chex.assert_tree_all_finite(s)
        chex.assert_equal_shape([jnp.ones(2), jnp.zeros(2)])
        caught = []
        for bad in (lambda: chex.assert_shape(jnp.ones(3), (4,)),
                    lambda: chex.assert_trees_all_close(jnp.ones(2), jnp.zeros(2)),
                    lambda: chex.assert_tree_all_finite({"a": jnp.array([jnp.nan])})):
            try:
                bad()
            except AssertionError:
                caught.append(True)

        @jax.jit
        def f(x):
            chex.assert_rank(x, 1)
            return x * 2

        leaves = jax.tree_util.tree_leaves(jax.jit(lambda st: st.replace(step=st.step + 1))(s))
        print(json.dumps({"caught": len(caught), "f": f(jnp.ones(2)).tolist(),
                          "leaves": [l.tolist() for l in leaves]}))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res == {"caught": 3, "f": [2.0, 2.0], "leaves": [[1.0, 1.0, 1.0], 2]}
