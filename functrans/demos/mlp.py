"""The demo's model: a 64-128-10 MLP on the UCI digits (``functrans.numpy``), its loss, SGD
with momentum, and the training steps the demos run: one device (``train_step``), data
parallel (``parallel_step``, under ``pmap``), DP-SGD (``dp_step``, ``vmap(grad)``).
"""
from __future__ import annotations

import numpy as np

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

NUM_CLASSES = 10
SIZES = (64, 128, 10)


# ---- the model ---------------------------------------------------------------------------
def init_params(key, sizes=SIZES):
    """He-initialized ``[(w, b), ...]`` in float32, from a functrans PRNG key."""
    params = []
    for k, (m, n) in zip(ft.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
        w = ft.random.normal(k, (m, n), dtype="float32") * np.float32(np.sqrt(2.0 / m))
        params.append((w, fnp.zeros(n, dtype="float32")))
    return params


def logits(params, x):
    """ReLU hidden layers, linear output."""
    *hidden, (w, b) = params
    for wh, bh in hidden:
        x = ft.nn.relu(x @ wh + bh)
    return x @ w + b


def loss(params, x, y):
    """Mean cross-entropy of integer labels ``y``."""
    logp = ft.nn.log_softmax(logits(params, x))
    return -fnp.mean(fnp.sum(logp * ft.nn.one_hot(y, NUM_CLASSES, dtype="float32"), axis=-1))


def accuracy(params, x, y):
    """Fraction of ``x`` classified as ``y`` (eager: one forward pass is cheap)."""
    return float(np.mean(np.argmax(np.asarray(logits(params, x)), axis=-1) == y))


def sgd(params, velocity, grads, lr, momentum=0.9):
    """One step of SGD with (heavy-ball) momentum; returns the new params and velocity."""
    velocity = ft.tree_util.tree_map(lambda v, g: momentum * v + g, velocity, grads)
    return ft.tree_util.tree_map(lambda p, v: p - lr * v, params, velocity), velocity


def train_step(params, velocity, x, y, lr):
    """Loss and gradient in one pass (``value_and_grad``), then the update."""
    value, grads = ft.value_and_grad(loss)(params, x, y)
    params, velocity = sgd(params, velocity, grads, lr)
    return params, velocity, value


def parallel_step(params, velocity, x, y, lr):
    """``train_step`` on one device's shard: gradients are averaged over the devices
    (``pmean``), so every device applies the same update and params stay replicated."""
    value, grads = ft.value_and_grad(loss)(params, x, y)
    grads, value = lax.pmean((grads, value), "devices")
    params, velocity = sgd(params, velocity, grads, lr)
    return params, velocity, value


def global_norms(tree):
    """Per-example L2 norm over all leaves of a batch of gradients (leading axis = example)."""
    leaves = ft.tree_util.tree_leaves(tree)
    return fnp.sqrt(sum(fnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in leaves))


def dp_step(params, velocity, x, y, noise, lr, clip):
    """DP-SGD without the privacy accounting: per-example gradients (``vmap(grad)``), each
    clipped to norm ``clip``, summed, plus ``noise`` (a Gaussian pytree like the params),
    divided by the batch size. Returns the new state and the unclipped per-example norms."""
    per_example = ft.vmap(ft.grad(loss), in_axes=(None, 0, 0))(params, x[:, None], y[:, None])
    norms = global_norms(per_example)
    scale = fnp.minimum(1.0, clip / (norms + 1e-12))
    grads = ft.tree_util.tree_map(
        lambda g, z: (fnp.einsum("b,b...->...", scale, g) + z) / x.shape[0],
        per_example, noise)
    params, velocity = sgd(params, velocity, grads, lr)
    return params, velocity, norms


def gaussian_like(key, tree, std):
    """Normal noise shaped like ``tree``, drawn eagerly with one ``ft.random`` call (outside
    the compiled step: under jit the threefry PRNG makes a large kernel that is slow to
    compile)."""
    leaves, treedef = ft.tree_util.tree_flatten(tree)
    flat = np.asarray(ft.random.normal(key, (sum(np.size(a) for a in leaves),),
                                       dtype="float32")) * np.float32(std)
    parts = np.split(flat, np.cumsum([np.size(a) for a in leaves])[:-1])
    return ft.tree_util.tree_unflatten(treedef, [p.reshape(np.shape(a))
                                                 for p, a in zip(parts, leaves)])
