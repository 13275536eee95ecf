# %% [markdown]
# # 1. Quick start
#
# functrans traces Python functions written with `functrans.numpy` into a small typed IR (a
# *jaxpr*) and runs transformations over it: `grad` and friends differentiate, `vmap`
# vectorizes, `jit` compiles to Numba kernels. They compose in any order, with JAX's names and
# semantics, so most JAX programs port by changing the import.
#
# This notebook is the five-minute version: the NumPy API, `make_jaxpr`, `grad`, `jit` and
# `vmap`, ending with a small model fitted by a compiled training loop.

# %%
import time
import numpy as np
import matplotlib.pyplot as plt

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

# %% [markdown]
# ## The NumPy API
#
# `functrans.numpy` follows NumPy 2, dtype rules included (float64 by default, as in NumPy;
# `ft.config.update("enable_x64", False)` gives JAX's 32-bit defaults). Results are immutable
# `ft.Array`s that convert to NumPy without copying. Instead of in-place assignment, `.at[]`
# returns an updated copy.

# %%
x = fnp.linspace(0.0, 1.0, 5)
print(x, x.dtype)
print(fnp.sum(fnp.sin(x) ** 2), np.asarray(x).flags.writeable)
y = x.at[0].set(10.0)
print(y, "(x is unchanged:", x[0], ")")
np.testing.assert_allclose(fnp.cumsum(x), np.cumsum(np.asarray(x)))

# %% [markdown]
# ## See what a function does: `make_jaxpr`
#
# The jaxpr lists the primitives a function runs, with the type of every value. Every
# transformation is an interpreter over this IR.

# %%
def predict(params, x):
    (w1, b1), (w2, b2) = params
    return fnp.tanh(x @ w1 + b1) @ w2 + b2

def loss(params, x, y):
    return fnp.mean((predict(params, x) - y) ** 2)

rng = np.random.default_rng(0)
params = [(rng.standard_normal((1, 32)).astype("float32"), np.zeros(32, "float32")),
          (rng.standard_normal((32, 1)).astype("float32") * 0.1, np.zeros(1, "float32"))]
x = np.linspace(-3, 3, 128, dtype="float32")[:, None]
y = np.sin(2 * x) + 0.1 * rng.standard_normal(x.shape).astype("float32")

ft.make_jaxpr(loss)(params, x, y)

# %% [markdown]
# ## Differentiate: `grad`
#
# `grad(loss)` returns a function computing the gradient with respect to the first argument,
# here a whole pytree of parameters. `ft.testing.check_grads` compares forward mode, reverse
# mode and finite differences.

# %%
grads = ft.grad(loss)(params, x, y)
print([g.shape for g in ft.tree_util.tree_leaves(grads)])

params64 = ft.tree_util.tree_map(lambda a: np.asarray(a, "float64"), params)
ft.testing.check_grads(lambda p: loss(p, x.astype("float64"), y.astype("float64")),
                       (params64,), order=2)
print("gradients agree with finite differences up to second order")

# %% [markdown]
# ## Vectorize: `vmap`
#
# `vmap` maps a function over a new leading axis without a Python loop. `vmap(grad(loss))`
# gives one gradient per example; their mean is the batch gradient.

# %%
per_example = ft.vmap(ft.grad(loss), in_axes=(None, 0, 0))(params, x[:, None], y[:, None])
print("per-example gradient of w1:", per_example[0][0].shape)
np.testing.assert_allclose(np.asarray(per_example[0][0]).mean(0), grads[0][0],
                           rtol=1e-4, atol=1e-6)

# %% [markdown]
# ## Compile: `jit`
#
# `lax.scan` stages a loop; `jit` compiles the whole training loop, gradient and update
# included, into one kernel. The first call traces and compiles (or loads the kernel from the
# on-disk cache); later calls only run it.

# %%
def train(params, steps, lr=0.05):
    def step(p, _):
        value, g = ft.value_and_grad(loss)(p, x, y)
        return ft.tree_util.tree_map(lambda a, d: a - lr * d, p, g), value
    return lax.scan(step, params, None, length=steps)

fast_train = ft.jit(train, static_argnums=1)
trained, losses = fast_train(params, 2000)

t0 = time.perf_counter(); fast_train(params, 2000); t_jit = time.perf_counter() - t0
t0 = time.perf_counter(); train(params, 100); t_eager = (time.perf_counter() - t0) * 20
print(f"2000 steps: jit {t_jit * 1e3:.1f} ms, eager ~{t_eager:.1f} s (from 100 steps)")
print(f"loss {float(losses[0]):.3f} -> {float(losses[-1]):.3f}")
assert float(losses[-1]) < 0.5 * float(losses[0])

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
ax1.semilogy(np.asarray(losses)); ax1.set_xlabel("step"); ax1.set_ylabel("loss")
ax2.plot(x, y, ".", ms=3, label="data")
ax2.plot(x, np.asarray(predict(trained, x)), label="fit"); ax2.legend()
plt.show()

# %% [markdown]
# ## Everything composes
#
# `jit(vmap(grad(f)))`, `vmap(jit(grad(f)))` and `vmap(grad(jit(f)))` give the numbers of
# the plain Python loop.

# %%
f = lambda v: fnp.sum(fnp.sin(v) ** 2 * fnp.exp(-v))
batch = rng.standard_normal((5, 3))
loop = np.stack([ft.grad(f)(b) for b in batch])
for g in (ft.jit(ft.vmap(ft.grad(f))), ft.vmap(ft.jit(ft.grad(f))), ft.vmap(ft.grad(ft.jit(f)))):
    np.testing.assert_allclose(g(batch), loop, rtol=1e-12)
print("jit/vmap/grad agree in every order")

# %% [markdown]
# Next: the [autodiff cookbook](02_autodiff_cookbook.ipynb), [vmap](03_vmap.ipynb),
# [jit under the hood](04_jit_under_the_hood.ipynb),
# [control flow and randomness](05_control_flow_and_randomness.ipynb),
# [devices, pmap, shard_map and MPI](06_devices_pmap_shard_map_mpi.ipynb) and
# [property testing](07_property_testing.ipynb).
