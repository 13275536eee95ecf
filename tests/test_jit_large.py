"""Large programs compile under one jit and agree with eager evaluation.

The training step below has the shape of JAX's MNIST VAE example: seven dense layers (an
encoder with a (mean, log-variance) head, a decoder), ReLU, the reparameterization trick with
``random.normal``, binarized data from ``random.bernoulli``, ``random.split`` per step, ``grad``
of the ELBO, and SGD steps in a ``fori_loop`` of 4 iterations, hidden size 64. Its kernel has
hundreds of loops and thousands of lines; it must compile without depending on Python's
recursion limit, and give eager's numbers.

Tolerances: float64 throughout. Compiled elementwise code uses SIMD exp/log/log1p (a few ulp
each) and reassociated reductions; over four SGD steps through seven layers those differences
stay far below 1e-9 relative, so that is the bound (an error in the program is O(1)).
"""
import sys

import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import lax, random

IMAGE, HIDDEN, LATENT, BATCH, STEPS = 32, 64, 8, 16, 4


def _dense_init(key, sizes):
    keys = random.split(key, len(sizes) - 1)
    return [(random.normal(k, (m, n)) / np.sqrt(m), fnp.zeros(n))
            for k, m, n in zip(keys, sizes[:-1], sizes[1:])]


def _mlp(layers, x):
    for k, (w, b) in enumerate(layers):
        x = x @ w + b
        if k < len(layers) - 1:
            x = fnp.maximum(x, 0.0)
    return x


def _elbo(params, key, images):
    enc, mean_head, logvar_head, dec = params
    h = fnp.maximum(_mlp(enc, images), 0.0)
    mu = h @ mean_head[0] + mean_head[1]
    logvar = h @ logvar_head[0] + logvar_head[1]
    z = mu + fnp.exp(0.5 * logvar) * random.normal(key, mu.shape)
    logits = _mlp(dec, z)
    log_lik = -fnp.sum(fnp.logaddexp(0.0, logits) - images * logits)
    kl = 0.5 * fnp.sum(fnp.exp(logvar) + mu ** 2 - 1.0 - logvar)
    return (log_lik - kl) / images.shape[0]


def _train(params, key, data):
    def step(i, carry):
        params, key = carry
        key, data_key, elbo_key = random.split(key, 3)
        batch = lax.dynamic_slice_in_dim(data, i * BATCH, BATCH)
        images = random.bernoulli(data_key, batch).astype(batch.dtype)
        grads = ft.grad(lambda p: -_elbo(p, elbo_key, images))(params)
        params = ft.tree.map(lambda p, g: p - 1e-3 * g, params, grads)
        return params, key
    return lax.fori_loop(0, STEPS, step, (params, key))


def _vae_params():
    keys = random.split(random.PRNGKey(0), 4)
    enc = _dense_init(keys[0], [IMAGE, HIDDEN, HIDDEN])
    mean_head = _dense_init(keys[1], [HIDDEN, LATENT])[0]
    logvar_head = _dense_init(keys[2], [HIDDEN, LATENT])[0]
    dec = _dense_init(keys[3], [LATENT, HIDDEN, HIDDEN, IMAGE])
    return enc, mean_head, logvar_head, dec


def _call_with_shallow_stack(fun, *args):
    """Compiling must not lean on a deep Python stack: run with a low recursion limit."""
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(600)
        return fun(*args)
    finally:
        sys.setrecursionlimit(limit)


def test_vae_training_step_compiles_and_matches_eager():
    params = _vae_params()
    data = np.random.default_rng(0).random((STEPS * BATCH, IMAGE))
    key = random.PRNGKey(1)
    jitted = ft.jit(_train)
    text = jitted.lower(params, key, data).as_text()
    assert text.count("\n") > 1000  # a large program: the case this test is about
    got = _call_with_shallow_stack(jitted, params, key, data)
    want = _train(params, key, data)
    got_leaves, want_leaves = ft.tree.leaves(got), ft.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves) == 15
    for g, w in zip(got_leaves, want_leaves):
        if np.asarray(w).dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)
        else:  # the PRNG key carried through the loop: exact
            np.testing.assert_array_equal(g, w)


def test_rejection_sampler_compiles_and_matches_eager():
    # random.gamma is a while_loop per element (Marsaglia-Tsang) around threefry draws.
    # Same arithmetic as eager except SIMD log/exp (a few ulp); accepted proposals can only
    # differ when a uniform lands within a few ulp of the acceptance bound, which these
    # fixed keys don't hit, so the samples agree to 1e-12.
    def sample(key, a):
        return random.gamma(key, a, (64,))
    key, a = random.PRNGKey(3), np.float64(2.5)
    got = _call_with_shallow_stack(ft.jit(sample), key, a)
    want = sample(key, a)
    assert got.shape == (64,) and np.all(np.asarray(got) > 0)
    np.testing.assert_allclose(got, want, rtol=1e-12)
