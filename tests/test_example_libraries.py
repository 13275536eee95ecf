"""functrans.example_libraries: stax layers against NumPy, optimizers against NumPy
transcriptions of their update rules, and a small CNN trained a few steps (the loss falls,
jit == eager).

Tolerances: float64 throughout; layer outputs and optimizer steps are a handful of
operations per element, compared with rtol=1e-12. jit and eager training agree to
rtol=1e-9 after several steps (BLAS GEMMs sum in a different order from NumPy's matmul and
the differences are carried through the updates).
"""
import numpy as np
import pytest

import functrans as ft
import functrans.numpy as fnp
from functrans import random
from functrans.example_libraries import optimizers, stax

rng = np.random.default_rng(0)


def test_dense_conv_and_flatten_match_numpy():
    key = random.key(1)
    init, apply = stax.serial(stax.Conv(3, (2, 2), strides=(1, 2), padding="VALID"),
                              stax.Flatten, stax.Dense(2))
    out_shape, params = init(key, (-1, 4, 5, 2))
    x = rng.standard_normal((3, 4, 5, 2))
    (W, b), _, (W2, b2) = params
    assert W.shape == (2, 2, 2, 3) and b.shape == (1, 1, 1, 3) and out_shape == (-1, 2)
    conv = np.zeros((3, 3, 2, 3))
    for i in range(3):
        for j in range(2):
            patch = x[:, i:i + 2, 2 * j:2 * j + 2, :]
            conv[:, i, j, :] = np.einsum("nhwc,hwco->no", patch, np.asarray(W))
    want = (conv + np.asarray(b)).reshape(3, -1) @ np.asarray(W2) + np.asarray(b2)
    np.testing.assert_allclose(apply(params, x), want, rtol=1e-12)


def test_pooling_layers():
    x = rng.standard_normal((2, 5, 4, 3))
    _, mx = stax.MaxPool((2, 2), (2, 1))
    want = np.max(np.stack([x[:, i:i + 4:2, j:j + 3] for i in range(2) for j in range(2)]), 0)
    np.testing.assert_array_equal(mx((), x), want)
    # AvgPool with SAME padding divides each window by the number of real elements in it
    _, avg = stax.AvgPool((3, 3), padding="SAME")
    pad = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    ones = np.pad(np.ones((5, 4)), 1)
    sums = sum(pad[:, i:i + 5, j:j + 4] for i in range(3) for j in range(3))
    counts = sum(ones[i:i + 5, j:j + 4] for i in range(3) for j in range(3))
    np.testing.assert_allclose(avg((), x), sums / counts[None, :, :, None], rtol=1e-12)
    # a spec puts the spatial dims elsewhere
    init, sp = stax.SumPool((2,), spec="NCH")
    assert init(None, (-1, 3, 6))[0] == (-1, 3, 5)
    y = rng.standard_normal((2, 3, 6))
    np.testing.assert_allclose(sp((), y), y[:, :, :-1] + y[:, :, 1:], rtol=1e-12)


def test_batch_norm_normalizes_over_its_axes():
    init, apply = stax.BatchNorm(axis=(0, 1))
    shape, (beta, gamma) = init(random.key(0), (4, 3, 2))
    assert shape == (4, 3, 2) and beta.shape == gamma.shape == (2,)
    x = rng.standard_normal((4, 3, 2)) * 3 + 1
    beta, gamma = np.array([0.5, -1.0]), np.array([2.0, 3.0])
    z = (x - x.mean((0, 1))) / np.sqrt(x.var((0, 1)) + 1e-5)
    np.testing.assert_allclose(apply((beta, gamma), x), gamma * z + beta, rtol=1e-12)


def test_dropout_fan_in_out_and_errors():
    init, apply = stax.Dropout(0.75)
    x = np.ones(4000)
    y = np.asarray(apply((), x, rng=random.key(3)))
    kept = y != 0
    np.testing.assert_allclose(y[kept], 1 / 0.75)
    assert 0.7 < kept.mean() < 0.8  # rate is the probability to keep (as in JAX's stax)
    np.testing.assert_array_equal(stax.Dropout(0.5, mode="test")[1]((), x), x)
    with pytest.raises(ValueError, match="needs a PRNG key"):
        apply((), x)
    init, apply = stax.serial(stax.FanOut(3), stax.parallel(stax.Identity, stax.Tanh, stax.Exp),
                              stax.FanInSum)
    assert init(random.key(0), (-1, 2))[0] == (-1, 2)
    v = rng.standard_normal((3, 2))
    np.testing.assert_allclose(apply(init(random.key(0), (-1, 2))[1], v),
                               v + np.tanh(v) + np.exp(v), rtol=1e-12)


def _numpy_adam(x, grads, lr, b1=0.9, b2=0.999, eps=1e-8):
    m = v = np.zeros_like(x)
    for i, g in enumerate(grads):
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * g * g + b2 * v
        x = x - lr * (m / (1 - b1 ** (i + 1))) / (np.sqrt(v / (1 - b2 ** (i + 1))) + eps)
    return x


def _numpy_momentum(x, grads, lr, mass):
    v = np.zeros_like(x)
    for g in grads:
        v = mass * v + g
        x = x - lr * v
    return x


@pytest.mark.parametrize("name", ["adam", "momentum", "sgd_schedule"])
def test_optimizers_match_their_update_rules(name):
    x0 = {"a": rng.standard_normal(3), "b": (rng.standard_normal((2, 2)),)}
    grads = [{"a": rng.standard_normal(3), "b": (rng.standard_normal((2, 2)),)}
             for _ in range(4)]
    if name == "adam":
        opt, ref = optimizers.adam(0.01), lambda x, gs: _numpy_adam(x, gs, 0.01)
    elif name == "momentum":
        opt, ref = optimizers.momentum(0.1, 0.9), lambda x, gs: _numpy_momentum(x, gs, 0.1, 0.9)
    else:
        sched = optimizers.exponential_decay(0.1, 2, 0.5)
        opt = optimizers.sgd(sched)

        def ref(x, gs):
            for i, g in enumerate(gs):
                x = x - 0.1 * 0.5 ** (i / 2) * g
            return x
    init, update, get_params = opt
    for step in (update, ft.jit(update)):
        state = init(x0)
        for i, g in enumerate(grads):
            state = step(i, g, state)
        got = get_params(state)
        np.testing.assert_allclose(got["a"], ref(x0["a"], [g["a"] for g in grads]), rtol=1e-12)
        np.testing.assert_allclose(got["b"][0], ref(x0["b"][0], [g["b"][0] for g in grads]),
                                   rtol=1e-12)
    with pytest.raises(TypeError, match="does not match the parameter tree"):
        update(0, {"a": grads[0]["a"]}, init(x0))


def test_clip_and_state_packing():
    g = [np.array([3.0, 4.0]), np.array([12.0])]
    np.testing.assert_allclose(optimizers.l2_norm(g), 13.0)
    clipped = optimizers.clip_grads(g, 6.5)
    np.testing.assert_allclose(clipped[0], [1.5, 2.0])
    init, update, get_params = optimizers.adam(0.1)
    state = update(0, g, init([np.ones(2), np.ones(1)]))
    again = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
    for a, b in zip(ft.tree_util.tree_leaves(again), ft.tree_util.tree_leaves(state)):
        np.testing.assert_array_equal(a, b)


def test_tiny_cnn_trains_and_jit_matches_eager():
    """A conv -> relu -> max pool -> dense net on two synthetic classes (a bright square in
    the upper-left or lower-right corner): eight Adam steps lower the loss, and the jitted
    training step gives the eager one's parameters."""
    init, apply = stax.serial(stax.Conv(4, (3, 3), padding="SAME"), stax.Relu,
                              stax.MaxPool((2, 2), (2, 2)), stax.Conv(4, (2, 2)), stax.Relu,
                              stax.AvgPool((2, 2)), stax.Flatten, stax.Dense(2),
                              stax.LogSoftmax)
    n = 16
    labels = np.arange(n) % 2
    images = rng.standard_normal((n, 8, 8, 1)) * 0.3
    images[labels == 0, :3, :3] += 1.0
    images[labels == 1, 5:, 5:] += 1.0
    onehot = np.eye(2)[labels]
    _, params = init(random.key(0), (-1, 8, 8, 1))
    opt_init, opt_update, get_params = optimizers.adam(0.05)

    def loss(p, x, y):
        return -fnp.mean(fnp.sum(apply(p, x) * y, axis=1))

    def step(i, state, x, y):
        value, g = ft.value_and_grad(loss)(get_params(state), x, y)
        return opt_update(i, g, state), value

    jstep = ft.jit(step)
    eager, jitted = opt_init(params), opt_init(params)
    losses = []
    for i in range(8):
        eager, value = step(i, eager, images, onehot)
        jitted, jvalue = jstep(i, jitted, images, onehot)
        np.testing.assert_allclose(jvalue, value, rtol=1e-9)
        losses.append(float(value))
    final = float(loss(get_params(eager), images, onehot))
    assert final < 0.8 * losses[0], losses + [final]
    for a, b in zip(ft.tree_util.tree_leaves(get_params(jitted)),
                    ft.tree_util.tree_leaves(get_params(eager))):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_sm3_matches_jax_values():
    # golden values: the same five steps with jax.example_libraries.optimizers.sm3 on JAX 0.10.2
    # (float32); momentum 0.9, step 0.1, gradient sin(3x) + x
    from functrans.example_libraries import optimizers as opt
    import functrans.numpy as fnp
    init, update, get = opt.sm3(0.1, momentum=0.9)
    s = init(fnp.array([[1.0, -2.0, 0.5], [0.3, 0.0, 2.0]], dtype=fnp.float32))
    for i in range(5):
        s = update(i, fnp.sin(3 * get(s)) + get(s), s)
    expected = [[0.9038699865341187, -1.9068745374679565, 0.41016244888305664],
                [0.2099040448665619, 0.0, 1.9068745374679565]]
    np.testing.assert_allclose(get(s), expected, rtol=1e-6)
    s = init(fnp.array(2.0, dtype=fnp.float32))  # a scalar parameter
    for i in range(3):
        s = update(i, get(s) * 2, s)
    np.testing.assert_allclose(get(s), 1.9537659883499146, rtol=1e-6)
