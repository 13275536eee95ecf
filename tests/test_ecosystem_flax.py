"""flax runs unchanged on functrans (``functrans.as_jax``): a linen CNN trained with optax,
checked against the same program's values on JAX 0.10.2. The program runs in a child process
(tests/ecosystem.py)."""
from __future__ import annotations

import json

import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)


def test_flax_linen_cnn_trains_with_adam_under_jit():
    # Conv(4, 3x3) -> relu -> avg_pool 2x2 -> Dense(2) on 8 random 8x8x1 images whose class
    # (0/1 alternating) shifts them by 0.5; 30 jitted adam steps (lr 0.05) of softmax cross
    # entropy. On JAX 0.10.2 the losses at steps 0, 1, 9 and 29 are 0.8227264881134033,
    # 0.4421110153198242, 0.0013893097639083862 and 1.0728836059570312e-06 (float32).
    # functrans gives the same values to the last digit or two of float32: the
    # initialisation (threefry bits, variance scaling) is JAX's and the arithmetic is
    # float32; reduction orders may differ, so 1e-5 relative (a few float32 ulps per op
    # over 30 steps) on the early losses, and the converged loss must be below 1e-5.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp, optax
        import flax.linen as nn

        class CNN(nn.Module):
            @nn.compact
            def __call__(self, x):
                x = nn.Conv(4, (3, 3))(x)
                x = nn.relu(x)
                x = nn.avg_pool(x, (2, 2), strides=(2, 2))
                x = x.reshape((x.shape[0], -1))
                return nn.Dense(2)(x)

        kx, kp = jax.random.split(jax.random.PRNGKey(0))
        x = jax.random.normal(kx, (8, 8, 8, 1))
        y = jnp.arange(8) % 2
        x = x + y[:, None, None, None] * 0.5
        model = CNN()
        params = model.init(kp, x)
        tx = optax.adam(0.05)
        opt = tx.init(params)

        def loss_fn(p):
            logits = model.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        @jax.jit
        def step(p, o):
            l, g = jax.value_and_grad(loss_fn)(p)
            u, o = tx.update(g, o, p)
            return optax.apply_updates(p, u), o, l

        losses = []
        for i in range(30):
            params, opt, l = step(params, opt)
            losses.append(float(l))
        shapes = jax.tree_util.tree_map(lambda a: list(a.shape), params)
        print(json.dumps({"losses": losses, "shapes": shapes,
                          "dtype": str(params["params"]["Conv_0"]["kernel"].dtype)}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["shapes"] == {"params": {"Conv_0": {"kernel": [3, 3, 1, 4], "bias": [4]},
                                        "Dense_0": {"kernel": [64, 2], "bias": [2]}}}
    assert got["dtype"] == "float32"
    losses = got["losses"]
    expected = {0: 0.8227264881134033, 1: 0.4421110153198242, 9: 0.0013893097639083862}
    for i, v in expected.items():
        assert losses[i] == pytest.approx(v, rel=1e-5), (i, losses[i])
    assert losses[-1] < 1e-5


def test_flax_linen_batchnorm_dropout_layernorm_with_sgd_momentum():
    # Conv -> BatchNorm -> gelu -> max_pool -> Dropout(0.2) -> Dense(8) -> LayerNorm ->
    # Dense(2), 20 jitted steps of sgd (lr 0.1, momentum 0.9) with batch statistics updated
    # through mutable=["batch_stats"] and a fresh dropout key per step (same threefry bits as
    # JAX, so the same units drop). On JAX 0.10.2: loss 0.7120205760002136 at step 0,
    # 0.00018155574798583984 at step 19, and the eval-mode (running averages, no dropout)
    # output sums to 7.832510471343994. Tolerance: 1e-5 relative on the first loss and the
    # eval sum (float32 rounding over the run; measured 1e-7 and 2e-7), and the last loss
    # below 1e-3 (it is exponentially small, so relative agreement is not meaningful).
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp, optax
        import flax.linen as nn

        class M(nn.Module):
            @nn.compact
            def __call__(self, x, train):
                x = nn.Conv(4, (3, 3))(x)
                x = nn.BatchNorm(use_running_average=not train)(x)
                x = nn.max_pool(nn.gelu(x), (2, 2), strides=(2, 2))
                x = nn.Dropout(0.2, deterministic=not train)(x)
                x = x.reshape((x.shape[0], -1))
                x = nn.LayerNorm()(nn.Dense(8)(x))
                return nn.Dense(2)(x)

        x = jax.random.normal(jax.random.PRNGKey(1), (8, 8, 8, 1))
        y = jnp.arange(8) % 2
        m = M()
        v = m.init({"params": jax.random.PRNGKey(0), "dropout": jax.random.PRNGKey(2)},
                   x, False)
        params, bs = v["params"], v["batch_stats"]
        tx = optax.sgd(0.1, momentum=0.9)
        o = tx.init(params)

        @jax.jit
        def step(p, bs, o, k):
            def lf(p):
                out, upd = m.apply({"params": p, "batch_stats": bs}, x, True,
                                   rngs={"dropout": k}, mutable=["batch_stats"])
                return optax.softmax_cross_entropy_with_integer_labels(out, y).mean(), upd
            (l, upd), g = jax.value_and_grad(lf, has_aux=True)(p)
            u, o = tx.update(g, o, p)
            return optax.apply_updates(p, u), upd["batch_stats"], o, l

        k = jax.random.PRNGKey(3)
        losses = []
        for i in range(20):
            k, s = jax.random.split(k)
            params, bs, o, l = step(params, bs, o, s)
            losses.append(float(l))
        ev = float(m.apply({"params": params, "batch_stats": bs}, x, False).sum())
        print(json.dumps({"losses": losses, "eval": ev}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["losses"][0] == pytest.approx(0.7120205760002136, rel=1e-5)
    assert got["losses"][-1] < 1e-3
    assert got["eval"] == pytest.approx(7.832510471343994, rel=1e-5)
