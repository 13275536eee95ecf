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
