"""jax.nn's attention and small functions against NumPy oracles (float64: 1e-12 relative;
float32 inputs: 1e-5, a few roundings of values of order one)."""
from __future__ import annotations

import decimal

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import nn


def _attention_oracle(q, k, v, bias, keep, scale):
    """Per batch, head and query row: softmax over the allowed keys, in float64 loops."""
    B, T, N, H = q.shape
    S, K = k.shape[1], k.shape[2]
    out = np.zeros((B, T, N, H))
    for b in range(B):
        for n in range(N):
            kh = n // (N // K)
            for t in range(T):
                logits = np.array([q[b, t, n] @ k[b, s, kh] * scale for s in range(S)])
                logits = logits + bias[b, n, t]
                logits = np.where(keep[b, n, t], logits, -0.7 * np.finfo(np.float64).max)
                p = np.exp(logits - logits.max())
                out[b, t, n] = (p / p.sum()) @ v[b, :, kh]
    return out


@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (4, 1)])
def test_dot_product_attention_matches_the_definition(heads, rng):
    N, K = heads
    B, T, S, H = 2, 3, 5, 8
    q, k, v = (rng.standard_normal(s) for s in ((B, T, N, H), (B, S, K, H), (B, S, K, H)))
    bias = rng.standard_normal((1, N, T, S))
    mask = rng.random((B, 1, T, S)) < 0.8
    kv_len = np.array([3, 5])
    out = nn.dot_product_attention(q, k, v, bias, mask, is_causal=True, scale=0.3,
                                   key_value_seq_lengths=kv_len, local_window_size=(1, 2))
    rows, cols = np.indices((T, S))
    keep = (mask & (cols <= rows) & (rows - cols <= 1) & (cols - rows <= 2)
            & (cols < kv_len[:, None, None, None]))
    want = _attention_oracle(q, k, v, np.broadcast_to(bias, (B, N, T, S)),
                             np.broadcast_to(keep, (B, N, T, S)), 0.3)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
    # unbatched inputs, the default scale 1/sqrt(H), jit and vmap agree
    plain = nn.dot_product_attention(q[0], k[0], v[0])
    ones = np.ones((1, N, T, S), bool)
    np.testing.assert_allclose(plain, _attention_oracle(q[:1], k[:1], v[:1], np.zeros(
        (1, N, T, S)), ones, 1 / np.sqrt(H))[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(ft.jit(nn.dot_product_attention)(q, k, v),
                               ft.vmap(nn.dot_product_attention)(q, k, v), rtol=1e-12)


def test_dot_product_attention_float32_and_its_gradient(rng):
    q = rng.standard_normal((1, 4, 2, 8)).astype(np.float32)
    out = nn.dot_product_attention(q, q, q, is_causal=True)
    assert out.dtype == np.float32
    keep = np.broadcast_to(np.tril(np.ones((4, 4), bool)), (1, 2, 4, 4))
    q64 = q.astype(np.float64)
    want = _attention_oracle(q64, q64, q64, np.zeros((1, 2, 4, 4)), keep, 1 / np.sqrt(8))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    f = lambda x: fnp.sum(nn.dot_product_attention(x, x, x, is_causal=True) ** 2)  # noqa: E731
    g = ft.grad(f)(q64)
    e = np.zeros_like(q64)
    e[0, 2, 1, 3] = 1e-6
    fd = (f(q64 + e) - f(q64 - e)) / 2e-6  # central difference: error ~1e-12 relative
    np.testing.assert_allclose(g[0, 2, 1, 3], fd, rtol=1e-6)


def test_dot_product_attention_rejects_bad_shapes_and_implementations(rng):
    q = rng.standard_normal((1, 3, 4, 8))
    with pytest.raises(ValueError, match="K dividing the 4 query heads"):
        nn.dot_product_attention(q, q[:, :, :3], q[:, :, :3])
    with pytest.raises(ValueError, match="does not broadcast to"):
        nn.dot_product_attention(q, q, q, bias=np.zeros((2, 4, 3, 3)))
    with pytest.raises(ValueError, match="implementation 'cudnn' is not available"):
        nn.dot_product_attention(q, q, q, implementation="cudnn")


def test_small_functions_match_their_definitions():
    x = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(nn.sparse_sigmoid(x), np.clip((x + 1) / 2, 0, 1), rtol=1e-15)
    np.testing.assert_array_equal(nn.identity(x), x)
    pos = np.array([1e-8, 1e-3, 0.5, 0.7, 2.0, 30.0])
    with decimal.localcontext() as ctx:  # 50 digits: the exact value, rounded once
        ctx.prec = 50
        want = [float((1 - (-decimal.Decimal(p)).exp()).ln()) for p in pos]
    np.testing.assert_allclose(nn.log1mexp(pos), want, rtol=1e-14)
    m = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(nn.logmeanexp(m, axis=1),
                               np.log(np.mean(np.exp(m), axis=1)), rtol=1e-14)
    where = np.array([[True, False, True], [True, True, True]])
    np.testing.assert_allclose(nn.logmeanexp(m, axis=1, where=where),
                               [np.log((np.exp(0) + np.exp(2)) / 2), np.log(np.mean(np.exp(m[1])))],
                               rtol=1e-14)
