# %% [markdown]
# # 2. Autodiff cookbook
#
# `grad` is reverse mode seeded with 1. Underneath are two primitives: `jvp` (forward mode:
# push a tangent through the function) and `vjp` (reverse mode: pull a cotangent back). This
# notebook builds Jacobians, Hessians and Hessian-vector products from them, then shows how to
# take control with `custom_jvp`/`custom_vjp` and trade compute for memory with `checkpoint`.

# %%
import numpy as np
import matplotlib.pyplot as plt

import functrans as ft
import functrans.numpy as fnp
from functrans import lax

def f(x):
    return fnp.array([fnp.sin(x[0]) * x[1], x[0] ** 2 + fnp.exp(x[1]), fnp.tanh(x[0] * x[1])])

x = fnp.array([0.5, -1.0])

# %% [markdown]
# ## Forward and reverse mode
#
# `jvp(f, primals, tangents)` returns `f(x)` and `J v` in one pass. `vjp(f, x)` returns
# `f(x)` and a function computing `u^T J`; it can be called with many cotangents.

# %%
y, jv = ft.jvp(f, (x,), (fnp.array([1.0, 0.0]),))
y2, pullback = ft.vjp(f, x)
(uj,) = pullback(fnp.array([1.0, 0.0, 0.0]))
print("f(x) =", y)
print("J @ e0 =", jv, "  e0 @ J =", uj)

# %% [markdown]
# ## Jacobians
#
# `jacfwd` pushes one tangent per input (good for tall Jacobians), `jacrev` pulls one
# cotangent per output (good for wide ones, like gradients). Both are `vmap`s of `jvp`/`vjp`
# and agree to rounding.

# %%
J_fwd, J_rev = ft.jacfwd(f)(x), ft.jacrev(f)(x)
print(J_fwd)
np.testing.assert_allclose(J_fwd, J_rev, rtol=1e-14)

# %% [markdown]
# ## Hessians and Hessian-vector products
#
# `hessian` is `jacfwd(jacrev(f))`. When only `H v` is needed (Newton-CG, curvature
# probes), forward-over-reverse computes it for the cost of a few gradients, without ever
# forming `H`.

# %%
def rosenbrock(x):
    return fnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

def hvp(f, x, v):
    return ft.jvp(ft.grad(f), (x,), (v,))[1]

z = fnp.array([1.2, 1.1, 0.9, 1.3])
v = fnp.array([1.0, -2.0, 0.5, 0.0])
H = ft.hessian(rosenbrock)(z)
print(np.round(np.asarray(H), 1))
np.testing.assert_allclose(hvp(rosenbrock, z, v), H @ v, rtol=1e-12)
print("H v without forming H:", hvp(rosenbrock, z, v))

# %% [markdown]
# `vmap` of the Hessian-vector product over the unit vectors rebuilds `H` column by column;
# compiled, this is how `hessian` itself works (forward over reverse). Below, the cost of
# one `hvp` against forming the whole Hessian as the dimension grows:

# %%
import time
basis_hvp = ft.jit(ft.vmap(lambda v, x: hvp(rosenbrock, x, v), in_axes=(0, None)))
np.testing.assert_allclose(basis_hvp(fnp.eye(4), z), H, rtol=1e-12)

def best(fn, *args, n=5):
    ft.block_until_ready(fn(*args))  # warm up: compiled (or loaded) before timing
    times = []
    for _ in range(n):
        t0 = time.perf_counter(); fn(*args); times.append(time.perf_counter() - t0)
    return min(times)

dims, t_hvp, t_hess = [10, 100, 1000], [], []
hvp_jit = ft.jit(lambda x, v: hvp(rosenbrock, x, v))
hess_jit = ft.jit(ft.hessian(rosenbrock))
for n in dims:
    xn, vn = np.linspace(0.5, 1.5, n), np.ones(n)
    t_hvp.append(best(hvp_jit, xn, vn))
    t_hess.append(best(hess_jit, xn))
    print(f"n={n:5d}: hvp {t_hvp[-1] * 1e6:8.1f} us   full Hessian {t_hess[-1] * 1e6:9.1f} us")
plt.figure(figsize=(5, 3))
plt.loglog(dims, t_hvp, "o-", label="H v (jvp of grad)"); plt.loglog(dims, t_hess, "o-", label="H")
plt.xlabel("dimension"); plt.ylabel("seconds"); plt.legend(); plt.show()

# %% [markdown]
# ## Custom derivatives
#
# `custom_jvp` replaces a function's derivative rule. Classic use: `log(1 + exp(x))` is
# numerically fine forward (with care) but its automatic derivative overflows for large `x`;
# the rule `sigmoid(x) * t` is exact and stable.

# %%
@ft.custom_jvp
def softplus(x):
    return fnp.logaddexp(x, 0.0)

@softplus.defjvp
def softplus_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return softplus(x), ft.nn.sigmoid(x) * t

xs = fnp.array([-800.0, 0.0, 800.0])
print(ft.vmap(ft.grad(softplus))(xs))
ft.testing.check_grads(softplus, (fnp.array([-2.0, 0.3, 3.0]),), order=1)

# %% [markdown]
# `custom_vjp` defines the backward pass directly: a forward function that saves residuals and
# a backward function. Here, gradient clipping applied to the cotangent (identity forward):

# %%
@ft.custom_vjp
def clip_gradient(x, bound):
    return x

def clip_fwd(x, bound):
    return x, bound

def clip_bwd(bound, g):
    return fnp.clip(g, -bound, bound), None

clip_gradient.defvjp(clip_fwd, clip_bwd)
print(ft.grad(lambda x: fnp.sum(clip_gradient(x, 1.0) * 10.0))(fnp.array([1.0, 2.0])))

# %% [markdown]
# ## `checkpoint`: recompute instead of store
#
# Reverse mode stores the intermediate values of the forward pass. Wrapping a block in
# `checkpoint` stores only its inputs and recomputes the rest during the backward pass. The
# gradient is unchanged; the jaxpr shows the block running again (`checkpoint` equations) in
# the backward program.

# %%
def block(x):
    return fnp.sin(fnp.cos(fnp.sin(x)))

def deep(x):
    for _ in range(3):
        x = ft.checkpoint(block)(x)
    return fnp.sum(x)

xs = fnp.linspace(0.0, 1.0, 4)
np.testing.assert_allclose(ft.grad(deep)(xs),
                           ft.grad(lambda x: fnp.sum(block(block(block(x)))))(xs), rtol=1e-14)
print(str(ft.make_jaxpr(ft.grad(deep))(xs)).count("checkpoint"), "checkpoint equations in grad")
