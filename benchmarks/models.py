"""Model programs for the compile-time benchmark (``bench_compile.py``), written once against a
namespace ``m`` that is either functrans or JAX (:func:`namespace`), so the same source builds
both versions.

Each builder returns a :class:`Program`: the jitted function, its first arguments (parameters
and data drawn with NumPy from fixed seeds, so both frameworks get identical inputs), how a
training loop feeds one call's output into the next call's arguments, and a scalar summary of
an output (the loss, or a statistic of the samples) to compare the frameworks by.

Programs:

- :func:`transformer_step`: a GPT-style training step (embeddings, pre-LN blocks with causal
  multi-head attention and a GELU MLP, cross-entropy on next tokens), ``jit`` of
  ``value_and_grad`` plus an SGD update of a dict of float32 arrays.
- :func:`deep_mlp_grad`: ``jit(grad(loss))`` of an N-layer tanh MLP, 16x16 float64 weights,
  batch 4.
- :func:`sampler`: ``jit`` of 100 ``random.gamma`` / ``poisson`` / ``beta`` samples.
- :func:`mnist_vae_step`: the training step of JAX's ``examples/mnist_vae.py`` (stax encoder
  and decoder, ELBO with a reparameterised sample, momentum optimizer), random binarized data.

``python benchmarks/models.py --check`` runs every program small, eagerly and under ``jit``,
in functrans here and in JAX in its own process (``--jax-python``), and compares the results.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

# A Python that has JAX (JAX runs in its own process, so it may live in another virtual
# environment): FUNCTRANS_BENCH_JAX_PYTHON, else this interpreter when it can import jax.
DEFAULT_JAX_PYTHON = os.environ.get("FUNCTRANS_BENCH_JAX_PYTHON", sys.executable)


def namespace(name: str) -> types.SimpleNamespace:
    """The framework ``name`` ("functrans" or "jax") as one namespace: ``np`` (its NumPy
    module), ``nn``, ``random``, ``lax``, ``stax``, ``optimizers``, ``jit``, ``grad``,
    ``value_and_grad``, ``tree_map``, ``tree_leaves``. JAX runs on the CPU with 64-bit types
    enabled, as functrans's default is."""
    if name == "functrans":
        import functrans as fw
        import functrans.numpy as fwnp
        from functrans import lax, nn, random
        from functrans.example_libraries import optimizers, stax
    elif name == "jax":
        import jax as fw
        fw.config.update("jax_platforms", "cpu")
        fw.config.update("jax_enable_x64", True)
        import jax.numpy as fwnp
        from jax import lax, nn, random
        from jax.example_libraries import optimizers, stax
    else:
        raise ValueError(f"unknown framework {name!r} (functrans or jax)")
    return types.SimpleNamespace(
        name=name, np=fwnp, nn=nn, random=random, lax=lax, stax=stax, optimizers=optimizers,
        jit=fw.jit, grad=fw.grad, value_and_grad=fw.value_and_grad,
        tree_map=fw.tree_util.tree_map, tree_leaves=fw.tree_util.tree_leaves)


@dataclass
class Program:
    """A benchmark program: ``fn(*args)``; ``advance(args, out)`` gives the next call's
    arguments in a training loop; ``summary(out)`` a float to compare frameworks by."""
    name: str
    fn: Callable
    args: tuple
    advance: Callable[[tuple, Any], tuple] = field(default=lambda args, out: args)
    summary: Callable[[Any], float] = field(default=lambda out: float(np.sum(out)))
    expected: tuple | None = None  # samplers: (mean, sd) of one sample; summary is the mean
    # The arguments with twice the batch (a new signature of the same function), if any.
    rebatch: Callable[[tuple], tuple] | None = None


def _maybe_jit(m, f, jit):
    return m.jit(f) if jit else f


def _to_device(m, tree):
    """Every NumPy leaf of ``tree`` as the framework's array (Python scalars kept)."""
    return m.tree_map(lambda x: m.np.asarray(x) if isinstance(x, np.ndarray) else x, tree)


# ---- a. GPT-style transformer training step ------------------------------------------------
def init_transformer(blocks, d, seq, vocab, seed=0):
    """Parameters of :func:`transformer_step` as a dict of float32 NumPy arrays."""
    rng = np.random.default_rng(seed)

    def dense(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / math.sqrt(n_in)).astype(np.float32)

    p = {"tok_emb": (0.02 * rng.standard_normal((vocab, d))).astype(np.float32),
         "pos_emb": (0.02 * rng.standard_normal((seq, d))).astype(np.float32),
         "lnf_g": np.ones(d, np.float32), "lnf_b": np.zeros(d, np.float32),
         "w_out": dense(d, vocab)}
    for i in range(blocks):
        p.update({f"b{i}_ln1_g": np.ones(d, np.float32), f"b{i}_ln1_b": np.zeros(d, np.float32),
                  f"b{i}_qkv_w": dense(d, 3 * d), f"b{i}_qkv_b": np.zeros(3 * d, np.float32),
                  f"b{i}_proj_w": dense(d, d), f"b{i}_proj_b": np.zeros(d, np.float32),
                  f"b{i}_ln2_g": np.ones(d, np.float32), f"b{i}_ln2_b": np.zeros(d, np.float32),
                  f"b{i}_fc1_w": dense(d, 4 * d), f"b{i}_fc1_b": np.zeros(4 * d, np.float32),
                  f"b{i}_fc2_w": dense(4 * d, d), f"b{i}_fc2_b": np.zeros(d, np.float32)})
    return p


def make_transformer_loss(m, blocks, heads):
    """Mean next-token cross-entropy of a pre-LN GPT: ``loss(params, inputs, targets)`` with
    int32 ``inputs``/``targets`` of shape (batch, seq)."""
    xnp = m.np

    def layernorm(x, g, b):
        mu = xnp.mean(x, axis=-1, keepdims=True)
        var = xnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / xnp.sqrt(var + 1e-5) * g + b

    def attention(p, i, x, mask):
        bsz, t, d = x.shape
        dh = d // heads
        qkv = x @ p[f"b{i}_qkv_w"] + p[f"b{i}_qkv_b"]                  # (B, T, 3d)
        qkv = xnp.transpose(xnp.reshape(qkv, (bsz, t, 3, heads, dh)), (2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]                                # (B, H, T, dh)
        att = (q @ xnp.swapaxes(k, -1, -2)) / math.sqrt(dh)            # (B, H, T, T)
        att = xnp.where(mask, att, -1e9)
        y = m.nn.softmax(att, axis=-1) @ v                              # (B, H, T, dh)
        y = xnp.reshape(xnp.transpose(y, (0, 2, 1, 3)), (bsz, t, d))
        return y @ p[f"b{i}_proj_w"] + p[f"b{i}_proj_b"]

    def loss(p, inputs, targets):
        t = inputs.shape[1]
        mask = np.tril(np.ones((t, t), dtype=bool))                     # causal, a constant
        x = xnp.take(p["tok_emb"], inputs, axis=0) + p["pos_emb"][:t]
        for i in range(blocks):
            x = x + attention(p, i, layernorm(x, p[f"b{i}_ln1_g"], p[f"b{i}_ln1_b"]), mask)
            h = layernorm(x, p[f"b{i}_ln2_g"], p[f"b{i}_ln2_b"])
            h = m.nn.gelu(h @ p[f"b{i}_fc1_w"] + p[f"b{i}_fc1_b"])
            x = x + h @ p[f"b{i}_fc2_w"] + p[f"b{i}_fc2_b"]
        logits = layernorm(x, p["lnf_g"], p["lnf_b"]) @ p["w_out"]      # (B, T, V)
        logp = m.nn.log_softmax(logits, axis=-1)
        picked = xnp.take_along_axis(logp, targets[..., None], axis=-1)
        return -xnp.mean(picked)
    return loss


def transformer_step(m, blocks=2, d=128, heads=4, seq=64, batch=8, vocab=256, lr=0.1,
                     jit=True, seed=0):
    """A GPT-style training step, ``step(params, inputs, targets) -> (loss, new_params)``:
    ``value_and_grad`` of the next-token cross-entropy and an SGD update, float32."""
    loss_fn = make_transformer_loss(m, blocks, heads)

    def step(params, inputs, targets):
        loss, grads = m.value_and_grad(loss_fn)(params, inputs, targets)
        return loss, m.tree_map(lambda w, g: w - lr * g, params, grads)

    rng = np.random.default_rng(seed + 1)
    tokens = rng.integers(0, vocab, (batch, seq + 1)).astype(np.int32)
    params = init_transformer(blocks, d, seq, vocab, seed)
    args = _to_device(m, (params, tokens[:, :-1], tokens[:, 1:]))
    more = np.concatenate([tokens, tokens[::-1]])
    return Program(f"transformer-{blocks}", _maybe_jit(m, step, jit), args,
                   advance=lambda a, out: (out[1], a[1], a[2]),
                   summary=lambda out: float(out[0]),
                   rebatch=lambda a: (a[0],) + _to_device(m, (more[:, :-1], more[:, 1:])))


# ---- b. deep tanh MLP gradient -------------------------------------------------------------
def deep_mlp_grad(m, layers=10, width=16, batch=4, jit=True, seed=0):
    """``jit(grad(loss))`` of a ``layers``-deep tanh MLP (``width`` x ``width`` float64
    weights, batch ``batch``), loss the sum of squares of the output. In a training loop the
    parameters take a gradient step."""
    def loss(params, x):
        h = x
        for w, b in params:
            h = m.np.tanh(h @ w + b)
        return m.np.sum(h ** 2)

    rng = np.random.default_rng(seed)
    params = [(rng.standard_normal((width, width)) / math.sqrt(width),
               0.1 * rng.standard_normal(width)) for _ in range(layers)]
    x = rng.standard_normal((batch, width))
    args = _to_device(m, (params, x))

    def advance(a, grads):
        return m.tree_map(lambda p, g: p - 0.01 * g, a[0], grads), a[1]

    def summary(grads):
        return float(sum(np.sum(np.asarray(g, np.float64) ** 2) for g in m.tree_leaves(grads)))
    x2 = np.concatenate([x, -x])
    return Program(f"mlp-{layers}", _maybe_jit(m, m.grad(loss), jit), args, advance, summary,
                   rebatch=lambda a: (a[0], _to_device(m, x2)))


# ---- c. samplers ---------------------------------------------------------------------------
SAMPLERS = ("gamma", "poisson", "beta")


def _key(i):
    """``random.PRNGKey(i)`` (threefry, i < 2**32) as a NumPy array: the same key in both."""
    return np.array([0, i], dtype=np.uint32)


def sampler(m, kind, n=100, jit=True):
    """``jit(lambda k: random.<kind>(k, ..., shape=(n,)))``: gamma (a = 2.5), poisson
    (lam = 3.0) or beta (a = 2.0, b = 3.0). A loop draws with keys 0, 1, 2, ...; the summary
    is the sample mean, ``expected`` its true value and standard error. functrans's rejection
    samplers draw other samples than JAX's from the same key, so frameworks are compared by
    distribution (:func:`agree`), not sample by sample."""
    if kind == "gamma":
        expected = (2.5, math.sqrt(2.5))

        def f(k):
            return m.random.gamma(k, 2.5, shape=(n,))
    elif kind == "poisson":
        expected = (3.0, math.sqrt(3.0))

        def f(k):
            return m.random.poisson(k, 3.0, shape=(n,))
    elif kind == "beta":
        expected = (0.4, 0.2)

        def f(k):
            return m.random.beta(k, 2.0, 3.0, shape=(n,))
    else:
        raise ValueError(f"unknown sampler {kind!r}")
    counter = iter(range(1, 1 << 30))
    return Program(kind, _maybe_jit(m, f, jit), _to_device(m, (_key(0),)),
                   advance=lambda a, out: _to_device(m, (_key(next(counter)),)),
                   summary=lambda out: float(np.mean(np.asarray(out, np.float64))),
                   expected=(expected[0], expected[1] / math.sqrt(n)))


# ---- d. JAX's examples/mnist_vae.py training step ------------------------------------------
def mnist_vae_step(m, batch=32, hidden=512, latent=10, step_size=1e-3, jit=True, seed=0):
    """The training step of JAX's ``examples/mnist_vae.py``: stax encoder 784-512-512 ->
    (mean, Softplus variance) of 10 latents, decoder 10-512-512-784 giving Bernoulli logits,
    negative ELBO per image with a reparameterised ``random.normal`` sample, and a momentum
    (mass 0.9) update. ``step(i, opt_state, key, images) -> (loss, new_opt_state)``; float32
    parameters (drawn with NumPy), random binarized images."""
    stax, xnp = m.stax, m.np
    encoder_init, encode = stax.serial(
        stax.Dense(hidden), stax.Relu, stax.Dense(hidden), stax.Relu, stax.FanOut(2),
        stax.parallel(stax.Dense(latent), stax.serial(stax.Dense(latent), stax.Softplus)))
    decoder_init, decode = stax.serial(
        stax.Dense(hidden), stax.Relu, stax.Dense(hidden), stax.Relu, stax.Dense(28 * 28))

    def gaussian_kl(mu, sigmasq):
        return -0.5 * xnp.sum(1. + xnp.log(sigmasq) - mu ** 2. - sigmasq)

    def gaussian_sample(rng, mu, sigmasq):
        return mu + xnp.sqrt(sigmasq) * m.random.normal(rng, mu.shape, dtype=mu.dtype)

    def bernoulli_logpdf(logits, x):
        return -xnp.sum(xnp.logaddexp(0., xnp.where(x, -1., 1.) * logits))

    def elbo(rng, params, images):
        enc_params, dec_params = params
        mu_z, sigmasq_z = encode(enc_params, images)
        logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
        return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

    opt_init, opt_update, get_params = m.optimizers.momentum(step_size, mass=0.9)

    def step(i, opt_state, key, images):
        def loss(params):
            return -elbo(key, params, images) / batch
        value, g = m.value_and_grad(loss)(get_params(opt_state))
        return value, opt_update(i, g, opt_state)

    # Shapes and tree structure from stax; the values from NumPy, leaf by leaf in tree order.
    _, enc = encoder_init(m.random.PRNGKey(2), (batch, 28 * 28))
    _, dec = decoder_init(m.random.PRNGKey(3), (batch, latent))
    rng = np.random.default_rng(seed)

    def draw(leaf):
        shape = tuple(leaf.shape)
        if len(shape) == 2:
            return m.np.asarray((rng.standard_normal(shape) / math.sqrt(shape[0]))
                                .astype(np.float32))
        return m.np.asarray((0.01 * rng.standard_normal(shape)).astype(np.float32))
    params = m.tree_map(draw, (enc, dec))
    images = (rng.random((batch, 28 * 28)) < 0.5).astype(np.float32)
    args = (0, opt_init(params), m.np.asarray(_key(0)), m.np.asarray(images))
    return Program("vae", _maybe_jit(m, step, jit), args,
                   advance=lambda a, out: (a[0] + 1, out[1], m.np.asarray(_key(a[0] + 1)),
                                           a[3]),
                   summary=lambda out: float(out[0]))


# ---- registry ------------------------------------------------------------------------------
def build(m, name, jit=True, small=False):
    """The program called ``name``: "transformer-B" (B blocks), "mlp-N" (depth N), "gamma",
    "poisson", "beta" or "vae". ``small`` shrinks the transformer and the VAE (for checks)."""
    if name.startswith("transformer"):
        blocks = int(name.split("-")[1]) if "-" in name else 2
        kw = dict(d=32, heads=2, seq=8, batch=2, vocab=16) if small else {}
        return transformer_step(m, blocks=blocks, jit=jit, **kw)
    if name.startswith("mlp-"):
        return deep_mlp_grad(m, layers=int(name.split("-")[1]), jit=jit)
    if name in SAMPLERS:
        return sampler(m, name, jit=jit)
    if name == "vae":
        return mnist_vae_step(m, jit=jit, **(dict(batch=4, hidden=32) if small else {}))
    raise ValueError(f"unknown program {name!r}")


CHECK_PROGRAMS = ("transformer-1", "mlp-3", "gamma", "poisson", "beta", "vae")


def agree(a, b, expected=None, rtol=1e-4):
    """``(ok, text)``: whether summaries ``a`` and ``b`` (floats, or lists of them) agree:
    to ``rtol`` relatively, or for a sampler (``expected`` = (mean, standard error)) each
    within 4 standard errors of the true mean."""
    a, b = np.atleast_1d(np.asarray(a, np.float64)), np.atleast_1d(np.asarray(b, np.float64))
    if expected is not None:
        mean, se = expected
        ok = bool(np.all(np.abs(np.concatenate([a, b]) - mean) <= 4 * se))
        return ok, (f"means {a[0]:.3g} / {b[0]:.3g} (E {mean:g})" + ("" if ok else " BAD"))
    rel = float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-30)))
    ok = rel <= rtol
    return ok, f"{a[0]:.6g} / {b[0]:.6g} (rel {rel:.1e})" + ("" if ok else " BAD")


def _summaries(framework, programs):
    """{program: {"eager": [s1, s2], "jit": [s1, s2]}} (or an error string): summaries of
    two calls of a training loop of each small program, so that the update is checked too."""
    m = namespace(framework)
    out = {}
    for name in programs:
        out[name] = {}
        for mode in ("eager", "jit"):
            try:
                p = build(m, name, jit=mode == "jit", small=True)
                first = p.fn(*p.args)
                second = p.fn(*p.advance(p.args, first))
                out[name][mode] = [p.summary(first), p.summary(second)]
            except Exception as e:  # reported, not raised: the check lists every failure
                out[name][mode] = f"{type(e).__name__}: {str(e)[:300]}"
    return out


def check(jax_python=DEFAULT_JAX_PYTHON, programs=CHECK_PROGRAMS, rtol=1e-4):
    """Runs every program small, eagerly and under jit, in functrans (this process) and JAX
    (its own process); returns a report and whether all agree with functrans's eager run
    (samplers: functrans's jit run exactly, everything by distribution)."""
    ft = _summaries("functrans", programs)
    jx = {}
    if jax_python and os.path.exists(jax_python):
        r = subprocess.run([jax_python, os.path.abspath(__file__), "--summaries", "jax",
                            "--programs", ",".join(programs)], capture_output=True, text=True)
        if r.returncode:
            raise RuntimeError(f"the JAX process failed:\n{r.stderr[-3000:]}")
        jx = json.loads(r.stdout.strip().splitlines()[-1])
    m = namespace("functrans")
    ok, lines = True, []
    for name in programs:
        expected = build(m, name, jit=False, small=True).expected
        ref = ft[name]["eager"]
        for fw, res in [("functrans", ft[name])] + ([("jax", jx[name])] if name in jx else []):
            for mode, v in res.items():
                if isinstance(v, str) or isinstance(ref, str):
                    good, text = False, v if isinstance(v, str) else "no eager reference"
                else:
                    same_stream = fw == "functrans" and expected is not None
                    good, text = agree(v, ref, None if same_stream else expected, rtol)
                ok &= good
                lines.append(f"{name:14} {fw:10} {mode:6} {'ok ' if good else 'BAD'} {text}")
    return "\n".join(lines), ok


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="run every program small in both frameworks and compare")
    parser.add_argument("--summaries", metavar="FRAMEWORK", help=argparse.SUPPRESS)
    parser.add_argument("--programs", default=",".join(CHECK_PROGRAMS))
    parser.add_argument("--jax-python", default=DEFAULT_JAX_PYTHON)
    opts = parser.parse_args()
    names = tuple(opts.programs.split(","))
    if opts.summaries:
        print(json.dumps(_summaries(opts.summaries, names)))
    else:
        report, all_ok = check(opts.jax_python, names)
        print(report)
        sys.exit(0 if all_ok else 1)
