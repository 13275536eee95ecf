"""einops (the pinned release of tests/ecosystem.py) runs unchanged on functrans: its JAX
backend (found by the array's type) rearranges, reduces, repeats, packs and contracts
functrans arrays under ``jax.jit``, ``jax.vmap`` and ``jax.grad``, and its flax layers
(``Rearrange``, ``Reduce``, ``EinMix``) train in a linen model with optax. Expected values come
from the same programs on JAX 0.10.2 (CPU, float32); every program runs in a child process
under ``python -m functrans.as_jax``."""
from __future__ import annotations

import json

import pytest

from ecosystem import all_close, run_as_jax

pytestmark = pytest.mark.timeout(900)


def test_rearrange_reduce_repeat_einsum_pack_under_jit_vmap_and_grad():
    # One function chaining rearrange (split and merged axes), reduce (mean, max), repeat and
    # einops.einsum, evaluated eagerly and jitted and differentiated; rearrange, reduce and a
    # gradient under vmap; pack/unpack and parse_shape; reduce with a callable (logsumexp).
    # On JAX 0.10.2 the values are those below. The inputs are the same threefry normals (one
    # in 24 is 1 ulp apart: functrans rounds erf_inv correctly, XLA's float32 polynomial does
    # not always); einops only moves, sums and multiplies them: agreement to float32 rounding
    # (measured: at most 1.2e-7 relative): held to 1e-6.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        from einops import rearrange, reduce, repeat, einsum, pack, unpack, parse_shape

        x = jax.random.normal(jax.random.PRNGKey(0), (2, 6, 4, 3))

        def f(x):
            a = rearrange(x, "b (h1 h) w c -> b h (w h1) c", h1=2)
            m = reduce(a, "b h w c -> b c", "mean")
            r = repeat(m, "b c -> b c k", k=3)
            e = einsum(r, x, "b c k, b h w c -> b k h")
            return e.sum() + reduce(x, "b h w c -> ", "max")

        res = {"f": [float(f(x)), float(jax.jit(f)(x))]}
        g = jax.grad(f)(x)
        res["grad"] = [float(jnp.sum(g ** 2)), float(g[0, 1, 2, 0]), float(g[1, 5, 3, 2])]
        res["vmap"] = jax.vmap(lambda t: rearrange(t, "h w c -> c (h w)"))(x)[1, 2, :4].tolist()
        res["vmap_reduce"] = jax.vmap(
            lambda t: reduce(t, "h (w2 w) c -> h c", "max", w2=2))(x).ravel()[:5].tolist()
        res["vmap_grad"] = jax.vmap(jax.grad(
            lambda t: reduce(t ** 2, "h w c -> ", "sum")))(x)[1, 0, 0].tolist()
        p, ps = pack([x[:, 0], x[:, :2].reshape(2, -1)], "b *")
        res["pack"] = [list(p.shape), [list(s) for s in ps]]
        res["unpack"] = [list(t.shape) for t in unpack(p, ps, "b *")]
        res["shape"] = parse_shape(x, "b h _ c")
        res["jit_shape"] = list(jax.jit(lambda t: rearrange(t, "b h w c -> (b h) (w c)"))(x).shape)
        res["logsumexp"] = reduce(x, "b h w c -> b",
                                  lambda t, axis: jax.nn.logsumexp(t, axis=axis)).tolist()
        print(json.dumps(res))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    want = {"f": [20.165945, 20.165945], "grad": [212.1969, 1.6276829, -0.36037409],
            "vmap": [0.9077099, 0.85630435, -1.1090349, 0.99520153],
            "vmap_reduce": [1.6226422, 2.1795304, 0.66434932, 1.728144, 0.97065598],
            "vmap_grad": [0.87532806, 2.3437128, 1.8154198],
            "logsumexp": [4.7385654, 4.7526979]}
    for key, values in want.items():
        assert all_close(res[key], values, 1e-6), key
    assert res["pack"] == [[2, 36], [[4, 3], [24]]] and res["unpack"] == [[2, 4, 3], [2, 24]]
    assert res["shape"] == {"b": 2, "h": 6, "c": 3} and res["jit_shape"] == [12, 12]


def test_flax_layers_rearrange_einmix_reduce_train_with_adam():
    # A tiny MLP-mixer in flax.linen from einops's layers: Rearrange into 2x2 patches, EinMix
    # over channels (with bias) and over tokens, Reduce (mean), Dense; adam(1e-2) on 16 random
    # 8x8 images for 60 jitted steps. On JAX 0.10.2: untrained logits of image 0 [1.1097955,
    # 1.6409929]; loss 0.82632011 at step 0, 0.65095782 at step 20, 0.081713684 at step 59.
    # Same initial weights (threefry uniform): untrained values agree to float32 rounding
    # (measured 7e-8 relative): 1e-6; training compounds rounding (measured: 2.7e-7 after 60
    # steps): 1e-4.
    out = run_as_jax("""
        import json
        import jax, jax.numpy as jnp
        import flax.linen as nn
        import optax
        from einops.layers.flax import Rearrange, Reduce, EinMix

        class Mixer(nn.Module):
            @nn.compact
            def __call__(self, x):
                x = Rearrange("b (h p1) (w p2) c -> b (h w) (p1 p2 c)",
                              sizes=dict(p1=2, p2=2))(x)
                x = EinMix("b t c -> b t d", weight_shape="c d", bias_shape="d",
                           sizes=dict(c=4, d=8))(x)
                x = EinMix("b t d -> b s d", weight_shape="t s",
                           sizes=dict(t=16, s=4))(jax.nn.gelu(x))
                return nn.Dense(2)(Reduce("b s d -> b d", "mean")(x))

        kx, km = jax.random.split(jax.random.PRNGKey(1))
        xs = jax.random.normal(kx, (16, 8, 8, 1))
        labels = (xs[:, :4].mean(axis=(1, 2, 3)) > xs[:, 4:].mean(axis=(1, 2, 3)))
        labels = labels.astype(jnp.int32)
        m = Mixer()
        v = m.init(km, xs)
        res = {"params": sorted((k, sorted(p)) for k, p in v["params"].items()),
               "out0": m.apply(v, xs)[0].tolist()}
        opt = optax.adam(1e-2)
        st = opt.init(v)

        def loss(v):
            return optax.softmax_cross_entropy_with_integer_labels(m.apply(v, xs), labels).mean()

        @jax.jit
        def step(v, st):
            l, g = jax.value_and_grad(loss)(v)
            u, st = opt.update(g, st, v)
            return optax.apply_updates(v, u), st, l

        losses = []
        for i in range(60):
            v, st, l = step(v, st)
            losses.append(float(l))
        res["losses"] = [losses[0], losses[20], losses[-1]]
        print(json.dumps(res))
    """)
    res = json.loads(out.strip().splitlines()[-1])
    assert res["params"] == [["Dense_0", ["bias", "kernel"]], ["EinMix_0", ["bias", "weight"]],
                             ["EinMix_1", ["weight"]]]
    assert all_close(res["out0"], [1.1097955, 1.6409929], 1e-6)
    assert all_close(res["losses"][:1], [0.82632011], 1e-6)
    assert all_close(res["losses"][1:], [0.65095782, 0.081713684], 1e-4)
