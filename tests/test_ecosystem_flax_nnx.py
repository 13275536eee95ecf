"""flax.nnx runs unchanged on functrans (``functrans.as_jax``): an MLP trained with
``nnx.Optimizer`` under ``nnx.jit``, and a CNN with BatchNorm, Dropout and LayerNorm, checked
against the same programs' values on JAX 0.10.2 (flax 0.12.8). nnx draws its parameters and
dropout masks from typed PRNG keys (``jax.random.key``), which functrans reproduces bit for
bit, so the programs start from the same state. Each runs in a child process
(tests/ecosystem.py)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ecosystem import run_as_jax

pytestmark = pytest.mark.timeout(900)

# float32 arithmetic whose reduction order may differ from XLA's: a few ulps per operation,
# compounded over the training steps, stays well inside 1e-5 relative.
RTOL = 1e-5


def test_nnx_mlp_trains_with_nnx_optimizer_under_nnx_jit():
    # JAX 0.10.2: losses at steps 0, 50, 199 are 2.4257354736328125, 0.13826404511928558,
    # 0.005425263196229935.
    out = run_as_jax("""
        from flax import nnx
        import jax, jax.numpy as jnp, optax
        class MLP(nnx.Module):
          def __init__(self, din, dmid, dout, rngs):
            self.l1 = nnx.Linear(din, dmid, rngs=rngs)
            self.l2 = nnx.Linear(dmid, dout, rngs=rngs)
          def __call__(self, x):
            return self.l2(nnx.relu(self.l1(x)))
        model = MLP(4, 32, 1, nnx.Rngs(0))
        opt = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
        x = jnp.linspace(-1, 1, 64*4).reshape(64, 4); y = jnp.sum(x**2, axis=1, keepdims=True)
        @nnx.jit
        def step(model, opt, x, y):
          def loss(m): return jnp.mean((m(x) - y)**2)
          l, g = nnx.value_and_grad(loss)(model)
          opt.update(model, g)
          return l
        losses = [float(step(model, opt, x, y)) for _ in range(200)]
        import json
        print(json.dumps([losses[0], losses[50], losses[199]]))""")
    losses = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(losses, [2.4257354736328125, 0.13826404511928558,
                                        0.005425263196229935], rtol=RTOL)


def test_nnx_cnn_with_batchnorm_dropout_and_split_merge():
    # JAX 0.10.2: losses at steps 0, 1 are 0.8800179362297058, 0.08556956797838211 (then
    # below 1e-7), eval logits of image 0 [13.425262451171875, -12.27510929107666], the
    # BatchNorm running mean of channel 0 -0.03022894449532032, 1074 parameters, and the
    # dropout stream drew 20 keys.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp, optax
        from flax import nnx

        class Net(nnx.Module):
            def __init__(self, rngs):
                self.conv = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
                self.bn = nnx.BatchNorm(4, rngs=rngs)
                self.drop = nnx.Dropout(0.25, rngs=rngs)
                self.lin = nnx.Linear(4 * 8 * 8, 2, rngs=rngs)
                self.ln = nnx.LayerNorm(4 * 8 * 8, rngs=rngs)
            def __call__(self, x):
                x = nnx.relu(self.bn(self.conv(x)))
                x = self.drop(x)
                return self.lin(self.ln(x.reshape(x.shape[0], -1)))

        model = Net(nnx.Rngs(params=0, dropout=1))
        opt = nnx.Optimizer(model, optax.sgd(0.1, momentum=0.9), wrt=nnx.Param)
        kx = jax.random.key(3)
        x = jax.random.normal(kx, (8, 8, 8, 1))
        y = jnp.arange(8) % 2
        x = x + y[:, None, None, None] * 0.5

        @nnx.jit
        def train_step(model, opt, x, y):
            def loss_fn(m):
                logits = m(x)
                return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean(), logits
            (l, logits), g = nnx.value_and_grad(loss_fn, has_aux=True)(model)
            opt.update(model, g)
            return l, (logits.argmax(-1) == y).mean()

        losses = []
        for i in range(20):
            l, acc = train_step(model, opt, x, y)
            losses.append(float(l))
        model.eval()
        eval_logits = nnx.jit(lambda m, x: m(x))(model, x)
        graphdef, state = nnx.split(model)
        clone = nnx.merge(graphdef, state)
        same = bool(jnp.allclose(clone(x), eval_logits))
        n_params = sum(p.size for p in jax.tree.leaves(nnx.state(model, nnx.Param)))
        mean = nnx.state(model, nnx.BatchStat)
        print(json.dumps({"losses": [losses[0], losses[1], losses[9], losses[19]], "acc": float(acc),
                          "eval0": [float(v) for v in eval_logits[0]], "same": same,
                          "n_params": int(n_params), "bn_mean0": float(model.bn.mean[...][0]),
                          "key_count": int(model.drop.rngs.count[...]) if hasattr(model.drop, 'rngs') and model.drop.rngs is not None else -1}))""")
    got = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(got["losses"][:2], [0.8800179362297058, 0.08556956797838211],
                               rtol=RTOL)
    assert max(got["losses"][2:]) < 1e-6 and got["acc"] == 1.0
    np.testing.assert_allclose(got["eval0"], [13.425262451171875, -12.27510929107666],
                               rtol=RTOL)
    np.testing.assert_allclose(got["bn_mean0"], -0.03022894449532032, rtol=RTOL)
    assert got["same"] and got["n_params"] == 1074 and got["key_count"] == 20


def test_nnx_transformer_with_vmapped_layers_under_nnx_scan():
    # Embed -> two attention blocks made by nnx.vmap (nnx.split_rngs) and applied by
    # nnx.scan -> Linear; adamw for 15 steps on next-token prediction. JAX 0.10.2: losses
    # at steps 0, 1, 14 are 3.1090404987335205, 2.7106544971466064, 1.3583816289901733.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp, optax
        from flax import nnx

        class Block(nnx.Module):
            def __init__(self, d, rngs):
                self.attn = nnx.MultiHeadAttention(num_heads=2, in_features=d, qkv_features=d, decode=False, rngs=rngs)
                self.ln = nnx.LayerNorm(d, rngs=rngs)
                self.mlp = nnx.Linear(d, d, rngs=rngs)
            def __call__(self, x):
                x = x + self.attn(self.ln(x))
                return x + nnx.gelu(self.mlp(x))

        class Model(nnx.Module):
            def __init__(self, rngs):
                self.emb = nnx.Embed(20, 16, rngs=rngs)
                @nnx.split_rngs(splits=2)
                @nnx.vmap(in_axes=(0,), out_axes=0)
                def make(rngs):
                    return Block(16, rngs)
                self.blocks = make(rngs)
                self.out = nnx.Linear(16, 20, rngs=rngs)
            def __call__(self, tok):
                x = self.emb(tok)
                @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
                def body(x, block):
                    return block(x)
                x = body(x, self.blocks)
                return self.out(x)

        model = Model(nnx.Rngs(0))
        opt = nnx.Optimizer(model, optax.adamw(3e-3), wrt=nnx.Param)
        tok = jax.random.randint(jax.random.key(5), (4, 8), 0, 20)

        @nnx.jit
        def step(model, opt, tok):
            def loss_fn(m):
                logits = m(tok[:, :-1])
                return optax.softmax_cross_entropy_with_integer_labels(logits, tok[:, 1:]).mean()
            l, g = nnx.value_and_grad(loss_fn)(model)
            opt.update(model, g)
            return l

        losses = [float(step(model, opt, tok)) for _ in range(15)]
        print(json.dumps([losses[0], losses[1], losses[14]]))""")
    losses = json.loads(out.strip().splitlines()[-1])
    np.testing.assert_allclose(losses, [3.1090404987335205, 2.7106544971466064,
                                        1.3583816289901733], rtol=RTOL)
