# %% [markdown]
# # 3. Vectorizing with `vmap`
#
# `vmap(f)` turns a function written for one example into one that takes a batch. It does not
# loop: it runs `f` once with a *batch tracer* that carries a batch dimension through every
# primitive (a batched `dot` is one matrix product, a batched `while_loop` one loop). This
# notebook covers per-example gradients, batching an iterative solver, `in_axes`/`out_axes`,
# and named axes with collectives.

# %%
import time
import numpy as np
import matplotlib.pyplot as plt

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

rng = np.random.default_rng(0)

# %% [markdown]
# ## Per-example gradients
#
# Differential privacy, influence functions and gradient-noise diagnostics need one gradient
# per example, not their mean. `vmap(grad(loss))` computes them in one pass; `jit` on top
# makes it as fast as hand-written `einsum` code.

# %%
def loss(w, x, y):
    return (fnp.tanh(x @ w) - y) ** 2

w = rng.standard_normal(16) * 0.3
X = rng.standard_normal((512, 16)); Y = np.sign(X[:, 0])

per_example = ft.jit(ft.vmap(ft.grad(loss), in_axes=(None, 0, 0)))
G = per_example(w, X, Y).block_until_ready()  # returns once the kernel is compiled
print(G.shape)

loop = np.stack([ft.grad(loss)(w, X[i], Y[i]) for i in range(8)])
np.testing.assert_allclose(G[:8], loop, rtol=1e-12)

t0 = time.perf_counter(); [ft.grad(loss)(w, X[i], Y[i]) for i in range(64)]
t_loop = (time.perf_counter() - t0) * 512 / 64
t_vmap = []
for _ in range(3):  # the best of three calls (the first call after compiling warms caches)
    t0 = time.perf_counter(); per_example(w, X, Y); t_vmap.append(time.perf_counter() - t0)
t_vmap = min(t_vmap)
print(f"512 per-example gradients: Python loop of grad ~{t_loop * 1e3:.0f} ms, "
      f"jit(vmap(grad)) {t_vmap * 1e3:.2f} ms")

norms = np.linalg.norm(np.asarray(G), axis=1)
plt.figure(figsize=(5, 3)); plt.hist(norms, bins=40)
plt.xlabel("per-example gradient norm"); plt.ylabel("examples"); plt.show()

# %% [markdown]
# ## Batching a solver
#
# An iterative solver with a data-dependent stopping rule (`while_loop`) vectorizes too: the
# batched loop runs until every problem has converged, freezing those that are done. Here,
# Newton's method for `x**3 - a = 0` (cube roots) for 1,000 values of `a` at once.

# %%
def cube_root(a):
    def cond(state):
        x, i = state
        return (fnp.abs(x ** 3 - a) > 1e-12 * fnp.maximum(a, 1.0)) & (i < 100)
    def body(state):
        x, i = state
        return x - (x ** 3 - a) / (3 * x ** 2), i + 1
    x, iters = lax.while_loop(cond, body, (fnp.maximum(a, 1.0), 0))
    return x, iters

a = np.linspace(0.01, 1000.0, 1000)
roots, iters = ft.jit(ft.vmap(cube_root))(a)
np.testing.assert_allclose(roots, np.cbrt(a), rtol=1e-10)
print("iterations per problem: min", int(iters.min()), "max", int(iters.max()))

# %% [markdown]
# ## `in_axes` and `out_axes`
#
# `in_axes` says which axis of each argument is mapped (`None`: not mapped, broadcast to every
# example); it is a pytree prefix, so one entry can cover a whole dict of parameters.
# `out_axes` says where the mapped axis goes in the output.

# %%
params = {"w": rng.standard_normal((3, 2)), "b": np.zeros(2)}
xs = rng.standard_normal((3, 5))          # examples along axis 1
layer = lambda p, x: x @ p["w"] + p["b"]
out = ft.vmap(layer, in_axes=(None, 1), out_axes=1)(params, xs)
print(out.shape)                          # (2, 5): outputs along axis 1
np.testing.assert_allclose(out, (xs.T @ params["w"] + params["b"]).T)

# Two mapped arguments, an outer product by nesting vmaps:
outer = ft.vmap(ft.vmap(lambda a, b: a * b, in_axes=(None, 0)), in_axes=(0, None))
np.testing.assert_array_equal(outer(fnp.arange(3.0), fnp.arange(4.0)),
                              np.outer(np.arange(3.0), np.arange(4.0)))

# %% [markdown]
# ## Named axes and collectives
#
# Give the mapped axis a name, and collectives (`psum`, `pmean`, `all_gather`, ...) can
# combine values across the batch from inside the per-example function. This is the same code
# that runs across devices with `pmap` (notebook 6): `vmap` with an `axis_name` is the
# single-device model of it.

# %%
def normalize(x):
    mean = lax.pmean(x, "batch")
    var = lax.pmean((x - mean) ** 2, "batch")
    return (x - mean) / fnp.sqrt(var + 1e-5)

data = rng.normal(3.0, 2.0, size=(256, 4))
z = ft.vmap(normalize, axis_name="batch")(data)
np.testing.assert_allclose(np.asarray(z).mean(0), 0, atol=1e-12)
print("std after batch norm:", np.round(np.asarray(z).std(0), 4))

rank = ft.vmap(lambda x: fnp.sum(lax.all_gather(x, "i") < x), axis_name="i")
print("rank of each element in its batch:", rank(fnp.array([3.0, 1.0, 2.0])))
